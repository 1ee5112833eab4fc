"""`make bench`: what a sweep costs beyond the encoding it cannot avoid.

Imports COVID-QA from ../shared/data, runs a 12-configuration sweep (3 sizes x 2 boundaries x
2 headers, MiniLM, hybrid retrieval) against an empty embedding cache (cold), times a bare
SentenceTransformer.encode of exactly the unique texts that sweep needed, runs the sweep again
on the warm cache (sweep.force=true, so nothing is skipped), once more with rank-bm25 instead of
bm25s, then the same sweep with the static model. The last lines are the figures, with the job
time of both warm sweeps by stage; nothing here is asserted. Before them: the small-corpus lines
(Homebrew docs) and the peak memory of `sweep validate` and a BM25 run on one 52 MB file.
After them, the embedding backends (issue 33): a bare encode of the grid's unique texts per
embedding.backend x precision, the cold sweep on the fastest pair, its ratio to the torch
cold sweep, and the quantisation tax of each configuration of the grid.

    python benchmarks/bench.py [--sizes 128,256,512] [--out .cache/bench] [--small-only]
                               [--big-only] [--covid-only [--cold-warm-only]]
                               [--backends-only [--texts N] [--rounds N] [--pairs B:P,...]]
                               [--docs N] [--scale 1,4,16 [--scale-model M]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The public data sets sit beside the clone; $CHUNK_SWEEP_SHARED_DATA points elsewhere (as in
# tests/helpers.py).
SHARED = Path(os.environ.get("CHUNK_SWEEP_SHARED_DATA") or ROOT.parent / "shared" / "data")
COVID = SHARED / "covid_qa" / "200423_covidQA.json"


# Peak RSS (MB) and CPU seconds (user + system) of each sweep `sweep` ran, by name. On a
# shared machine the CPU time moves less with the load than the wall time does.
SWEEP_PEAK_MB: dict[str, float] = {}
SWEEP_CPU_S: dict[str, float] = {}


def load() -> str:
    """The machine's load average (1, 5, 15 min) and cores, printed beside each figure."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def sweep(out: Path, name: str, cache: Path, sizes: str, extra: list[str]) -> float:
    data = out / "covid"
    args = [sys.executable, "-m", "sweep", "-m", f"chunk.size={sizes}",
            "chunk.boundary=recursive,heading", "chunk.header=none,path", "retrieval=hybrid",
            f"corpus.path={data}/corpus", f"golden.path={data}/golden.jsonl",
            "corpus.name=covid", "golden.name=covid", f"cache.dir={cache}",
            f"tracking.uri=sqlite:///{out}/mlflow.db", "sweep.force=true",
            f"hydra.sweep.dir={out}/{name}", "eval.latency_sample=20", *extra]
    # With Python's bytecode cache, as a user's shell has it: under PYTHONDONTWRITEBYTECODE=1
    # (this project's sandboxes) each sweep compiled the project's modules anew, ~0.3 s of a
    # warm sweep's ~9 s.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    proc = subprocess.Popen(args, cwd=out, env={**env, "HF_HUB_OFFLINE": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()  # drained while it runs
    # This sweep's own peak (its rusage), not the largest of every child the bench ran so far.
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench: the {name} sweep failed:\n{err.decode()[-2000:]}")
    SWEEP_PEAK_MB[name] = usage.ru_maxrss / 1024  # Linux reports kilobytes
    SWEEP_CPU_S[name] = usage.ru_utime + usage.ru_stime
    return wall


def job_seconds(folder: Path) -> str:
    """Where a sweep's job time went: each stage of `timings_s`, summed over its jobs."""
    totals: dict[str, float] = {}
    for report in folder.glob("*/report.json"):
        for stage, seconds in json.loads(report.read_text())["timings_s"].items():
            totals[stage] = totals.get(stage, 0.0) + seconds
    return " ".join(f"{k.removesuffix('_s')}={v:.1f}" for k, v in totals.items())


def jobs_total(folder: Path) -> float:
    """The jobs' own time (`total_s`, summed): the rest of a sweep's wall time is process
    start, Hydra, MLflow, writing each job's files, and the closing table and plot."""
    return sum(json.loads(r.read_text())["timings_s"]["total_s"]
               for r in folder.glob("*/report.json"))


def stage_totals(folder: Path) -> dict[str, float]:
    """Each `timings_s` stage of a sweep's jobs, summed, and the texts their embed stages
    handled (sent to the model or read from the disk cache)."""
    totals: dict[str, float] = {"texts": 0.0}
    for report in folder.glob("*/report.json"):
        rep = json.loads(report.read_text())
        for stage, seconds in rep["timings_s"].items():
            totals[stage] = totals.get(stage, 0.0) + seconds
        totals["texts"] += rep.get("texts_encoded", 0) + rep.get("texts_from_cache", 0)
    return totals


def embed_overhead(folder: Path, name: str) -> None:
    """The embed stage's own overhead: embed_s minus the time inside the model's encode calls
    (embed_encode_s), in seconds per 10,000 texts and as a fraction of the encode time; the
    model load (embed_load_s) is part of the overhead, and is also shown apart."""
    t = stage_totals(folder)
    embed, encode, load_s = (t.get(k, 0.0) for k in ("embed_s", "embed_encode_s",
                                                      "embed_load_s"))
    over = embed - encode
    per10k = over / t["texts"] * 10_000 if t["texts"] else float("nan")
    frac = f"{over / encode:.3f}" if encode > 0 else "n/a (nothing encoded)"
    bare = f"{(over - load_s) / encode:.3f}" if encode > 0 else "n/a"
    bare10k = (over - load_s) / t["texts"] * 10_000 if t["texts"] else float("nan")
    print(f"{name}_embed_overhead_s={over:.2f} per_10k_texts={per10k:.2f} s "
          f"fraction_of_encode={frac}; without the model load: {bare10k:.2f} s per 10k texts, "
          f"fraction {bare}  (target <= 0.05 on CPU, "
          f"0.10 on a GPU; embed_s={embed:.2f} encode_s={encode:.2f} load_s={load_s:.2f}, "
          f"texts={t['texts']:.0f} encoded or read from the disk cache)", flush=True)


def trim_covid(folder: Path, n_docs: int) -> None:
    """Keep the first ``n_docs`` papers (by file name) and the questions whose evidence is all
    in them: a stated subset for a loaded machine (--docs)."""
    files = sorted((folder / "corpus").iterdir())
    kept = {f.stem for f in files[:n_docs]}
    for f in files[n_docs:]:
        f.unlink()
    golden = folder / "golden.jsonl"
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if set(r.get("relevant_doc_ids") or []) <= kept]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"subset: {len(kept)} papers, {len(rows)} questions (--docs {n_docs})", flush=True)


def replicate(source: Path, target: Path, times: int) -> tuple[int, int]:
    """``times`` copies of a corpus and its golden set (stated replication): copy ``k`` of
    each document starts with a line of its own (so no chunk text repeats across copies and
    every copy is embedded anew) and each question is asked again of its copy, evidence
    offsets shifted by that line. Returns (documents, questions)."""
    (target / "corpus").mkdir(parents=True)
    rows = [json.loads(line) for line in
            (source / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    files = sorted((source / "corpus").iterdir())
    out_rows = []
    for k in range(times):
        marker = f"Replica {k} of this paper.\n\n" if k else ""
        for f in files:
            name = f.name if not k else f"{f.stem}-r{k}{f.suffix}"
            (target / "corpus" / name).write_text(marker + f.read_text(encoding="utf-8"),
                                                  encoding="utf-8")
        suffix = f"-r{k}" if k else ""
        for r in rows:
            row = {**r, "qid": f"{r['qid']}{suffix}",
                   "relevant_doc_ids": [f"{d}{suffix}" for d in r.get("relevant_doc_ids") or []],
                   "evidence": [{**e, "doc_id": f"{e['doc_id']}{suffix}",
                                 **({"start": e["start"] + len(marker),
                                     "end": e["end"] + len(marker)} if "start" in e else {})}
                                for e in r.get("evidence") or []]}
            out_rows.append(row)
    (target / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in out_rows),
                                         encoding="utf-8")
    return len(files) * times, len(out_rows)


def scale(out: Path, sizes: str, factors: list[int], model: str) -> None:
    """Cost against size (issue 46) at each replication factor of the corpus: the cold sweep
    of ``model`` (default the static model: at 16x MiniLM would encode for hours on 2 cores),
    then the warm sweep on its cache (every vector cached: the pipeline apart from the model),
    with each stage's time and the peak RSS, and each stage's growth exponent (log time ratio
    over log size ratio, first factor to last) beside that of chunks x questions, the work of
    exact search."""
    rows: list[dict[str, float | str]] = []
    for f in factors:
        data = out / f"scale{f}"
        n_docs, n_questions = replicate(out / "covid", data / "covid", f)
        for name in ("cold", "warm"):
            wall = sweep(data, name, data / "cache", sizes, [f"embedding={model}"])
            t = stage_totals(data / name)
            chunks = sum(json.loads(r.read_text())["metrics"].get("n_chunks", 0)
                         for r in (data / name).glob("*/report.json"))
            row = {"name": name, "factor": f, "wall_s": wall, "cpu_s": SWEEP_CPU_S[name],
                   "peak_rss_mb": SWEEP_PEAK_MB[name], "chunks": chunks,
                   "work": chunks * n_questions, **t}
            rows.append(row)
            print(f"scale {name} x{f} ({model}): docs={n_docs} questions={n_questions} "
                  f"chunks={chunks} wall_s={wall:.1f} cpu_s={row['cpu_s']:.1f} peak_rss_mb="
                  f"{row['peak_rss_mb']:.0f} stages_s: {job_seconds(data / name)}  ({load()})",
                  flush=True)
    for name in dict.fromkeys(r["name"] for r in rows):
        mine: list[dict[str, float]] = [r for r in rows if r["name"] == name]  # type: ignore[misc]
        if len(mine) < 2:
            continue
        a, b = mine[0], mine[-1]
        stages = [k for k in b if k.endswith("_s") and k not in ("wall_s", "cpu_s")]
        found = [growth(a, b, k) for k in stages if b.get(k, 0) >= 0.05]
        worst = max((g for g in found if g is not None), default=float("nan"))
        print(f"scale_exponent {name} x{a['factor']:.0f}->x{b['factor']:.0f}: "
              f"chunks_x_questions={shown(growth(a, b, 'work'))} "
              f"wall={shown(growth(a, b, 'wall_s'))} cpu={shown(growth(a, b, 'cpu_s'))} "
              f"peak_rss={shown(growth(a, b, 'peak_rss_mb'))} "
              + " ".join(f"{k.removesuffix('_s')}={shown(growth(a, b, k))}" for k in stages)
              + f"  (largest exponent of a stage taking 0.05 s or more at the largest size: "
              f"{worst:.2f}; target: none over "
              f"chunks x questions; peak RSS at x{b['factor']:.0f} {b['peak_rss_mb']:.0f} MB, "
              "target < 2048)", flush=True)


def growth(a: dict[str, float], b: dict[str, float], key: str) -> float | None:
    """The growth exponent of ``key`` from row ``a`` to row ``b``: log of its ratio over log
    of the size ratio (1: linear in the corpus, 2: quadratic); None when either is not
    positive."""
    import math

    if a.get(key, 0) <= 0 or b.get(key, 0) <= 0:
        return None
    return math.log(b[key] / a[key]) / math.log(b["factor"] / a["factor"])


def shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def unique_texts(out: Path, sizes: str) -> list[str]:
    """Exactly the texts the sweep sent to the model: every chunk of every chunking, and the
    questions."""
    from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
    from sweep.chunking.tokenizers import load_chunk_tokenizer
    from sweep.data.corpus import load_corpus
    from sweep.data.golden import load_golden

    docs = load_corpus(out / "covid" / "corpus")
    tok = load_chunk_tokenizer("minilm")
    texts: dict[str, None] = {}
    for size in sizes.split(","):
        for boundary in ("recursive", "heading"):
            for header in ("none", "path"):
                for c in chunk_corpus(docs, ChunkSpec(boundary, int(size), 0, header), tok):
                    texts.setdefault(c.embed_text, None)
    for item in load_golden(out / "covid" / "golden.jsonl").items:
        texts.setdefault(item.question, None)
    return list(texts)


HOMEBREW = SHARED / "homebrew_docs" / "docs"
HOMEBREW_GOLDEN = ROOT / "tests" / "data" / "homebrew_golden.jsonl"


def timed(args: list[str], cwd: Path, bytecode: bool = False) -> float:
    """Wall seconds of ``python args``. ``bytecode``: with Python's bytecode cache, as a user's
    shell has it (a sandbox with PYTHONDONTWRITEBYTECODE=1 compiles every module that has no
    .pyc on each start, ~10 ms for the gate's; it matters only to the sub-0.1 s lines)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    res = subprocess.run([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"bench: {' '.join(args[:4])} failed:\n{res.stderr[-2000:]}")
    return wall


def small(out: Path) -> None:
    """The corpus most teams gate on: Homebrew's docs (85 markdown files), 4 configurations
    (fixed/recursive x dense/BM25 at 256 tokens), cold then warm; what a warm run costs
    without the latency pass; and the CI gate warm beside `sweep --help`."""
    if not HOMEBREW.is_dir() or not HOMEBREW_GOLDEN.is_file():
        print("small: skipped (../shared/data/homebrew_docs or tests/data/homebrew_golden.jsonl "
              "missing)")
        return
    cache = out / "small-cache"
    base = ["-m", "sweep", "-m", "chunk.boundary=fixed,recursive", "retrieval=dense,bm25",
            "chunk.size=256", f"corpus.path={HOMEBREW}", f"golden.path={HOMEBREW_GOLDEN}",
            "corpus.name=homebrew", "golden.name=homebrew", f"cache.dir={cache}",
            f"tracking.uri=sqlite:///{out}/small-mlflow.db", "sweep.force=true"]
    cold = timed([*base, f"hydra.sweep.dir={out}/small-cold"], out)
    warm = timed([*base, f"hydra.sweep.dir={out}/small-warm"], out)
    warm0 = timed([*base, "eval.latency_sample=0", f"hydra.sweep.dir={out}/small-warm0"], out)
    # `python -m sweep --help`: Hydra's help, which composes the configuration to list it.
    hydra_help_s = min(timed(["-m", "sweep", "--help"], out) for _ in range(2))
    gate = ["-m", "sweep.cli", "baseline", "check", f"cache.dir={cache}-gate"]
    timed(gate, ROOT)  # fills the gate's caches and writes its memo
    # the gate on a warm cache that runs the configuration (--rerun: the memo is not read)
    rerun_s = min(timed([*gate, "--rerun"], ROOT, bytecode=True) for _ in range(2))
    # the sub-0.1 s pair alternately, the minimum of each: one noisy moment moves neither
    help_runs, gate_runs = [], []
    for _ in range(7):
        help_runs.append(timed(["-m", "sweep.cli", "help"], out, bytecode=True))
        gate_runs.append(timed(gate, ROOT, bytecode=True))
    help_s, gate_s = min(help_runs), min(gate_runs)
    print(f"small_cold_s={cold:.1f} small_warm_s={warm:.1f} "
          f"small_warm_ratio={warm / cold:.3f}  (target <= 0.06)")
    print(f"small_warm_latency0_s={warm0:.1f} (eval.latency_sample=0)")
    print(f"small_warm_stages_s: {job_seconds(out / 'small-warm')} outside_jobs="
          f"{warm - jobs_total(out / 'small-warm'):.1f}")
    print(f"help_s={help_s:.3f} gate_warm_s={gate_s:.3f} (the memo's answer) "
          f"gate_vs_help={gate_s / help_s:.2f}  (target <= 2)")
    print(f"gate_warm_rerun_s={rerun_s:.2f} (--rerun: the configuration run on the warm cache) "
          f"rerun_vs_help={rerun_s / help_s:.1f}")
    print(f"hydra_help_s={hydra_help_s:.2f} (python -m sweep --help) "
          f"gate_vs_hydra_help={gate_s / hydra_help_s:.3f}")


BIG_MB = 52


def make_big_file(folder: Path, mb: int = BIG_MB) -> tuple[Path, Path]:
    """One markdown file of ``mb`` MB (the Homebrew docs repeated) with three unique sentences
    at its start, middle and end, a golden set quoting them, its reference chunking, and a
    copy with a chunk id (golden-ids.jsonl, so `sweep validate` chunks the file too). Returns
    (corpus folder, golden file)."""
    corpus = folder / "corpus"
    corpus.mkdir(parents=True)
    docs = "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(HOMEBREW.rglob("*.md")))
    size = mb * 1_000_000
    body = (docs + "\n\n") * (size // (len(docs) + 2) + 1)
    markers = [f"The zebra marker number {w}." for w in
               ("one lives in the first part", "two lives near the middle",
                "three lives at the end")]
    mid = body.index("\n\n", size // 2)
    text = (body[:1000] + f"\n\n{markers[0]}\n\n" + body[1000:mid]
            + f"\n\n{markers[1]}\n\n" + body[mid:size] + f"\n\n{markers[2]}\n")
    (corpus / "big.md").write_text(text, encoding="utf-8")
    golden = folder / "golden.jsonl"
    golden.write_text("".join(
        json.dumps({"qid": f"q{i}", "question": f"where does zebra marker {i + 1} live?",
                    "evidence": [{"path": "big.md", "quote": m}]}) + "\n"
        for i, m in enumerate(markers)), encoding="utf-8")
    reference = "chunk:\n  boundary: heading\n  size: 256\n  overlap: 0\n  tokenizer: minilm\n"
    (folder / "golden.reference.yaml").write_text(reference)
    # The same items with a chunk id as well, for `sweep validate`: only chunk ids need the
    # reference chunking, so this is the golden set that makes validate chunk the file.
    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines()]
    rows[0]["relevant_chunk_ids"] = ["big#1"]
    (folder / "golden-ids.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                             encoding="utf-8")
    (folder / "golden-ids.reference.yaml").write_text(reference)
    return corpus, golden


def peak_rss_mb(args: list[str], cwd: Path) -> tuple[float, float]:
    """Peak RSS (MB) and wall seconds of one child process, from its own rusage (wait4)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=cwd,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()  # drained while it runs, so a chatty child never blocks
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(args[:4])} failed:\n{err.decode()[-2000:]}")
    return usage.ru_maxrss / 1024, wall  # Linux reports kilobytes


def big_file(out: Path) -> None:
    """Memory on one big file (issue 14, item 3): `sweep validate` and a BM25 run (cold, then
    warm embedding cache) on one 52 MB markdown file; before piecewise tokenisation the first
    two peaked at 8,179 and 8,389 MB."""
    if not HOMEBREW.is_dir():
        print("big_file: skipped (../shared/data/homebrew_docs missing)")
        return
    corpus, golden = make_big_file(out / "big")
    cache = f"cache.dir={out}/big-cache"
    validate_mb, validate_s = peak_rss_mb(
        ["-m", "sweep.cli", "validate", f"corpus.path={corpus}",
         f"golden.path={golden.with_name('golden-ids.jsonl')}", cache], out)
    bm25 = ["-m", "sweep", "retrieval=bm25", "eval.latency_sample=0",
            f"tracking.uri=sqlite:///{out}/big-mlflow.db", f"corpus.path={corpus}",
            f"golden.path={golden}", cache]
    # Cold: `out` was emptied, so the embedding cache is empty and every chunk goes through
    # the model (retrieval.diagnose=true embeds them for the dense diagnosis list). Warm: the
    # same run again (sweep.force: not skipped as already FINISHED), vectors and token lengths
    # from the cache (the model is not loaded).
    bm25_mb, bm25_s = peak_rss_mb([*bm25, f"hydra.run.dir={out}/big-run"], out)
    warm_mb, warm_s = peak_rss_mb([*bm25, "sweep.force=true",
                                   f"hydra.run.dir={out}/big-run-warm"], out)
    print(f"big_file_validate_peak_rss_mb={validate_mb:.0f} big_file_bm25_peak_rss_mb="
          f"{bm25_mb:.0f} big_file_bm25_warm_peak_rss_mb={warm_mb:.0f}  (one {BIG_MB} MB "
          f"markdown file; target <= 1500) validate_s={validate_s:.0f} bm25_s={bm25_s:.0f} "
          f"bm25_warm_s={warm_s:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="128,256,512")
    parser.add_argument("--out", default=str(ROOT / ".cache" / "bench"))
    parser.add_argument("--small-only", action="store_true",
                        help="only the small-corpus lines (Homebrew docs, the gate, --help)")
    parser.add_argument("--big-only", action="store_true",
                        help=f"only the big-file line (peak RSS on one {BIG_MB} MB markdown file)")
    parser.add_argument("--covid-only", action="store_true",
                        help="only the COVID-QA lines (cold, warm, rank-bm25, static, bare encode)")
    parser.add_argument("--cold-warm-only", action="store_true",
                        help="with --covid-only: only the cold and warm sweeps' lines (ratio, "
                        "stages, embed overhead), none of the rank-bm25, static or bare-encode "
                        "ones")
    parser.add_argument("--scale", default="",
                        help="only the cost-against-size lines: the warm sweep (and the static "
                        "model's cold one) at these replication factors of the corpus, e.g. "
                        "1,4,16")
    parser.add_argument("--scale-model", default="minilm_static",
                        help="with --scale: the embedding config whose cold and warm sweeps are "
                        "timed (minilm: hours at 16x on 2 cores)")
    parser.add_argument("--backends-only", action="store_true",
                        help="only the embedding-backend lines (bare encode per backend x "
                        "precision, cold sweeps on torch and the fastest pair, quantisation tax)")
    parser.add_argument("--texts", type=int, default=0,
                        help="bare-encode only every n-th unique text, N of them (0 = all)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="bare-encode rounds over every backend x precision (the fastest "
                        "of each is kept)")
    parser.add_argument("--docs", type=int, default=0,
                        help="COVID-QA's first N papers and their questions only (0 = all)")
    parser.add_argument("--pairs", default="",
                        help="bare-encode only these pairs besides torch:fp32, e.g. "
                        "openvino:bf16,onnx:int8 (the fastest of them gets the cold sweep)")
    parser.add_argument("--encode-only", action="store_true",
                        help="with --backends-only: only the bare-encode lines (no sweeps)")
    args = parser.parse_args()
    if args.big_only:
        out = Path(args.out).resolve()
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        big_file(out)
        return
    if not COVID.is_file():
        sys.exit(f"bench: COVID-QA not found at {COVID} (../shared/data is needed)")
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if not args.covid_only and not args.backends_only and not args.scale:
        small(out)
        if args.small_only:
            return
        big_file(out)
    subprocess.run([sys.executable, "-m", "sweep.cli", "import", "squad", str(COVID), "--out",
                    str(out / "covid")], check=True, stdout=subprocess.DEVNULL)
    if args.docs:
        trim_covid(out / "covid", args.docs)
    if args.scale:
        print(f"configurations={4 * len(args.sizes.split(','))}  ({load()})", flush=True)
        scale(out, args.sizes, [int(f) for f in args.scale.split(",")], args.scale_model)
        return
    if args.backends_only:
        print(f"configurations={4 * len(args.sizes.split(','))}", flush=True)
        # The bare encodes first, then the cold sweeps one right after the other: the ratio of
        # two sweeps is only as steady as the machine between them.
        times, unique_encode_s = encode_pairs(out, args.sizes, args.texts, args.rounds,
                                              parse_pairs(args.pairs))
        if args.encode_only:
            return
        cold_s = sweep(out, "cold", out / "cache", args.sizes, [])
        print(f"cold_s={cold_s:.1f}", flush=True)
        if unique_encode_s:
            print(f"overhead_ratio={cold_s / unique_encode_s:.3f}  (target <= 1.00, issue 21)",
                  flush=True)
        cold_pairs(out, args.sizes, cold_s, times)
        # The warm sweep last: it reads the torch cold sweep's cache, so it can come after.
        warm_s = sweep(out, "warm", out / "cache", args.sizes, [])
        print(f"warm_s={warm_s:.1f} warm_ratio={warm_s / cold_s:.3f}  (target <= 0.03, "
              "issue 21)", flush=True)
        return

    # Each figure is printed as soon as it is measured: a later step that fails (the bare
    # encode needs sentence-transformers' own API) must not lose half an hour of sweeps.
    print(f"configurations={4 * len(args.sizes.split(','))}", flush=True)
    cold_s = sweep(out, "cold", out / "cache", args.sizes, [])
    print(f"cold_s={cold_s:.1f} cold_cpu_s={SWEEP_CPU_S['cold']:.1f}  ({load()})", flush=True)
    print(f"peak_rss_mb={SWEEP_PEAK_MB['cold']:.0f}  (the cold sweep's own)", flush=True)
    print(f"cold_stages_s: {job_seconds(out / 'cold')}", flush=True)
    embed_overhead(out / "cold", "cold")
    warm_s = sweep(out, "warm", out / "cache", args.sizes, [])
    print(f"warm_s={warm_s:.1f} warm_cpu_s={SWEEP_CPU_S['warm']:.1f}  ({load()})", flush=True)
    print(f"warm_ratio={warm_s / cold_s:.3f} warm_cpu_ratio="
          f"{SWEEP_CPU_S['warm'] / SWEEP_CPU_S['cold']:.3f}  (target <= 0.01, issue 46)",
          flush=True)
    # Job time by stage (seconds summed over the configurations); BM25 scoring is in `search`.
    print(f"warm_stages_s: {job_seconds(out / 'warm')}", flush=True)
    embed_overhead(out / "warm", "warm")
    print(f"warm_outside_jobs_s={warm_s - jobs_total(out / 'warm'):.1f} (of "
          f"warm_s={warm_s:.1f})", flush=True)
    # Without MLflow: the pipeline alone. With it, a warm sweep cannot end before the MLflow
    # worker has imported MLflow (~3 s of CPU on the other core) and logged every run.
    untracked_s = sweep(out, "warm-untracked", out / "cache", args.sizes,
                        ["tracking.enabled=false"])
    print(f"warm_untracked_s={untracked_s:.1f} warm_untracked_cpu_s="
          f"{SWEEP_CPU_S['warm-untracked']:.1f} warm_untracked_ratio={untracked_s / cold_s:.3f}"
          f"  (tracking.enabled=false; {load()})", flush=True)
    if args.cold_warm_only:
        return
    # The same warm sweep with the reference BM25 implementation: what bm25s saves.
    warm_rank_bm25_s = sweep(out, "warm-rank-bm25", out / "cache", args.sizes,
                             ["retrieval.bm25_backend=rank_bm25"])
    print(f"warm_rank_bm25_s={warm_rank_bm25_s:.1f}  (retrieval.bm25_backend=rank_bm25; "
          f"bm25s saves {warm_rank_bm25_s - warm_s:.1f} s)", flush=True)
    print(f"warm_rank_bm25_stages_s: {job_seconds(out / 'warm-rank-bm25')}", flush=True)
    static_s = sweep(out, "static", out / "cache-static", args.sizes,
                     ["embedding=minilm_static"])
    print(f"static_cold_s={static_s:.1f}", flush=True)

    from sentence_transformers import SentenceTransformer

    from sweep.chunking.tokenizers import minilm_path
    from sweep.common.hf import quiet_transformers
    from sweep.embedding.models import encode_by_batch

    quiet_transformers()
    texts = unique_texts(out, args.sizes)
    print(f"unique_texts={len(texts)}", flush=True)
    model = SentenceTransformer(str(minilm_path()), device="cpu")
    model.encode(texts[:64], batch_size=32)  # warm-up, as the sweep's first batch is
    start = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True)
    unique_encode_s = time.perf_counter() - start
    print(f"unique_encode_s={unique_encode_s:.1f}  (one SentenceTransformer.encode call: "
          "batches cut by characters)", flush=True)
    print(f"overhead_ratio={cold_s / unique_encode_s:.3f}  (target <= 1.00, issue 21)",
          flush=True)
    # The same texts cut into batches by the tokens the model reads, as the sweep cuts them
    # (sweep.embedding.models.encode_by_batch): the floor of the encoding alone, so the ratio
    # against it is what the sweep adds beyond the model.
    tokenizer = model.tokenizer
    limit = model.max_seq_length
    lengths = [min(len(ids), limit) for ids in tokenizer(texts, add_special_tokens=True,
                                                        truncation=False)["input_ids"]]
    start = time.perf_counter()
    encode_by_batch(model, texts, 32, False, lengths)
    by_tokens_s = time.perf_counter() - start
    print(f"unique_encode_by_tokens_s={by_tokens_s:.1f} overhead_vs_by_tokens="
          f"{cold_s / by_tokens_s:.3f}  (the encode alone, batches cut by tokens)")
    del model
    # unique_encode_s was measured above: plain=False does not encode every text again.
    times, _ = encode_pairs(out, args.sizes, args.texts, args.rounds, parse_pairs(args.pairs),
                            plain=False)
    cold_pairs(out, args.sizes, cold_s, times)


Pair = tuple[str, str]


def parse_pairs(text: str) -> list[Pair] | None:
    """``torch:fp32,openvino:bf16`` -> the pairs to bare-encode (torch fp32 always among
    them, as the reference); empty: every pair."""
    if not text:
        return None
    from sweep.embedding.backends import REFERENCE, check_pair

    pairs: list[Pair] = [REFERENCE]
    for item in text.split(","):
        backend, _, precision = item.strip().partition(":")
        try:
            check_pair(backend, precision)
        except Exception as err:  # one line, as every bad input
            sys.exit(f"bench: --pairs {item!r}: {err}")
        if (backend, precision) not in pairs:
            pairs.append((backend, precision))
    return pairs


def encode_pairs(out: Path, sizes: str, n_texts: int, n_rounds: int,
                 only: list[Pair] | None, plain: bool = True) -> tuple[dict[Pair, float], float]:
    """A bare encode of the grid's unique texts per backend x precision (each model exported
    and loaded first, untimed; ``only``: those pairs). Returns the fastest round of each pair
    and, when every unique text was encoded, the torch fp32 model's own
    ``SentenceTransformer.encode`` call over them (``unique_encode_s``, the denominator of
    ``overhead_ratio``), else 0."""
    import importlib.util

    from sweep.embedding.backends import BACKENDS, REFERENCE
    from sweep.embedding.cache import EmbeddingCache
    from sweep.embedding.models import EmbeddingSpec, LocalEmbedder, encode_by_batch

    texts = unique_texts(out, sizes)
    every = not n_texts or n_texts >= len(texts)
    if not every:
        texts = texts[:: len(texts) // n_texts][:n_texts]  # spread over every chunking
    print(f"backend_texts={len(texts)}", flush=True)
    models: dict[Pair, tuple[object, list[int]]] = {}
    for backend, precisions in BACKENDS.items():
        if backend == "openvino" and importlib.util.find_spec("openvino") is None:
            print("encode_openvino: skipped (pip install 'chunk-sweep[openvino]')", flush=True)
            continue
        for precision in precisions:
            if only is not None and (backend, precision) not in only:
                continue
            e = LocalEmbedder(EmbeddingSpec(backend=backend, precision=precision, device="cpu"))
            e.cache = EmbeddingCache(out / "cache-encode" / "embeddings.sqlite")
            start = time.perf_counter()
            model = e.model  # the export (once) and the load
            print(f"load_{backend}_{precision}_s={time.perf_counter() - start:.1f}  (the "
                  "export included, once per cache.dir)", flush=True)
            limit = e.max_seq_length or 256
            lengths = [min(len(ids), limit) for ids in model.tokenizer(
                texts, add_special_tokens=True, truncation=False)["input_ids"]]
            encode_by_batch(model, texts[:64], 32, False)  # warm-up
            models[(backend, precision)] = (model, lengths)
    # Rounds over every pair in turn, the fastest round of each kept: on a shared machine a
    # pair timed alone can be slowed by whatever else ran then.
    rounds: dict[tuple[str, str], list[float]] = {p: [] for p in models}
    for _ in range(n_rounds):
        for key, (model, lengths) in models.items():
            start = time.perf_counter()
            encode_by_batch(model, texts, 32, False, lengths)
            rounds[key].append(time.perf_counter() - start)
    times = {key: min(values) for key, values in rounds.items()}
    for (backend, precision), best in times.items():
        print(f"encode_{backend}_{precision}_s={best:.1f} speedup="
              f"{times[REFERENCE] / best:.2f}x  (texts/s {len(texts) / best:.0f}; rounds "
              f"{' '.join(f'{v:.1f}' for v in rounds[(backend, precision)])})", flush=True)
    unique_encode_s = 0.0
    if every and plain:
        model = models[REFERENCE][0]
        start = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True)  # type: ignore[attr-defined]
        unique_encode_s = time.perf_counter() - start
        print(f"unique_encode_s={unique_encode_s:.1f}  (torch fp32, one "
              "SentenceTransformer.encode call over every unique text)", flush=True)
    del models
    return times, unique_encode_s


def cold_pairs(out: Path, sizes: str, cold_s: float, times: dict[Pair, float]) -> None:
    """The cold sweep on the fastest pair of ``times`` against ``cold_s`` (the torch fp32 cold
    sweep, in ``out/cold``), and the quantisation tax of every configuration of the grid."""
    from sweep.embedding.backends import REFERENCE

    fastest = min((p for p in times if p != REFERENCE), key=times.__getitem__)
    # The fastest pair's cold sweep (the speed target), and the int8 one's when another pair
    # was fastest (the quantisation tax target is about int8).
    pairs = [fastest, *([("onnx", "int8")] if fastest[1] != "int8" else [])]
    for backend, precision in pairs:
        name = f"cold-{backend}-{precision}"
        pair_s = sweep(out, name, out / f"cache-{backend}-{precision}", sizes,
                       [f"embedding.backend={backend}", f"embedding.precision={precision}"])
        target = "target <= 0.5; " if (backend, precision) == fastest else ""
        print(f"cold_{backend}_{precision}_s={pair_s:.1f} ratio_to_torch_cold="
              f"{pair_s / cold_s:.3f}  ({target}the export included)", flush=True)
        print(f"{name}_stages_s: {job_seconds(out / name)}", flush=True)
        quant_tax_lines(out / "cold", out / name, f"{backend}_{precision}")


def quant_tax_lines(reference: Path, other: Path, pair: str) -> None:
    """recall@5 and MRR lost by each configuration of ``other`` against ``reference``."""
    from sweep.common.mapping import flatten
    from sweep.outputs import quant
    from sweep.outputs.report import read_reports

    items = [*read_reports(reference), *read_reports(other)]
    runs = [quant.Run(flatten(r["config"]), r["metrics"],
                      {k: r["fingerprints"][k] for k in ("corpus", "golden")},
                      quant.read_retrieved(folder / "per_question.csv"))
            for folder, r in items if r.get("status") == "FINISHED"]
    found = quant.taxes(runs, ["recall_at_5", "mrr"])
    for i, tax in sorted(found.items()):
        c = runs[i].flat
        print(f"quant_tax {pair} chunk.size={c['chunk.size']} boundary={c['chunk.boundary']} "
              f"header={c['chunk.header']}: recall_at_5={tax['quant_tax_recall_at_5']:+.4f} "
              f"mrr={tax['quant_tax_mrr']:+.4f} "
              f"overlap_at_10={tax.get('quant_overlap_at_10', float('nan')):.3f}", flush=True)
    if found:
        worst = max(t["quant_tax_recall_at_5"] for t in found.values())
        over = sum(t["quant_tax_recall_at_5"] > 0.01 for t in found.values())
        print(f"quant_tax_{pair}_recall_at_5_max={worst:+.4f}  ({over} of {len(found)} configurations "
              "over the 0.01 target)", flush=True)


if __name__ == "__main__":
    main()
