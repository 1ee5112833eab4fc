"""`make repro-chroma`: Chroma's chunking-evaluation table, reproduced with chunk-sweep.

Imports ../shared/data/chroma_chunking_eval with `sweep import chroma` into OUT/data, then runs
each published row through the pipeline (`run_job`): chunk.boundary=langchain_recursive
("Recursive") or token_text ("TokenText") sized in cl100k tokens, all-MiniLM-L6-v2, exact
search over ONE index of all five corpora, every question, k = 5 (and 10 and "Min" for the
appendix rows), eval.span_mode=chroma (chunks placed as Chroma's code places them). It writes
OUT/repro_chroma.csv (chunker, size, overlap, k, metric, ours, published, difference, ...) and
prints the table side by side. The published figures are in benchmarks/chroma_published.csv.

    python benchmarks/repro_chroma.py [--out DIR] [--cache DIR] [--omega-only] [--data DIR]
                                      [--only "Recursive 200/0,TokenText 200/0"] [--index hnsw]

--index hnsw searches FAISS HNSW with Chroma's settings instead of exact search: Chroma's
collection defaults (M=16, construction_ef=100) and the search_ef=50 their evaluation sets on
every collection (base_evaluation.py); their space is l2, which ranks unit vectors as cosine.

--omega-only needs no model (Precision_Ω depends on the chunk boundaries alone: BM25 stands in
for the ranking). Nothing here is asserted; the `within` column says whether each figure
meets the target of issue 19 (Precision_Ω ±1.0, precision and IoU ±0.5, recall ±2.5).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DATA = ROOT.parent / "shared" / "data" / "chroma_chunking_eval"
PUBLISHED = ROOT / "benchmarks" / "chroma_published.csv"
BOUNDARY = {"Recursive": "langchain_recursive", "TokenText": "token_text", "Cluster": "cluster"}
# Per-question metric of the pipeline for each of Chroma's columns; "{k}" is 5, 10 or "min".
METRIC = {"recall": "evidence_recall_at_{k}", "precision": "span_precision_at_{k}",
          "iou": "span_iou_at_{k}", "precision_omega": "precision_omega"}
TARGET = {"precision_omega": 1.0, "precision": 0.5, "iou": 0.5, "recall": 2.5}
COLUMNS = ["chunker", "size", "overlap", "k", "metric", "ours", "published", "difference",
           "ours_std", "published_std", "ours_exact_spans", "target", "within", "n_questions",
           "index"]


def load_published(path: Path = PUBLISHED) -> list[dict[str, str]]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines()
             if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def pop_stats(values: list[float]) -> tuple[float, float]:
    """Mean and population std (numpy's default, which Chroma's code uses), in percent."""
    mean = math.fsum(values) / len(values)
    var = math.fsum((v - mean) ** 2 for v in values) / len(values)
    return 100 * mean, 100 * math.sqrt(var)


# Chroma's HNSW as their evaluation ran it (collection defaults, hnsw:search_ef=50).
CHROMA_HNSW = ["index=hnsw", "index.M=16", "index.ef_construction=100", "index.ef_search=50"]


def config_for(data: Path, cache: Path, boundary: str, size: int, overlap: int,
               omega_only: bool, index: str = "exact"):
    from sweep.config.compose import compose

    retrieval = ["retrieval=bm25"] if omega_only else ["retrieval=dense", "embedding=minilm"]
    if index == "hnsw" and not omega_only:
        retrieval += CHROMA_HNSW
    return compose([
        f"corpus.path={data}/corpus", f"golden.path={data}/golden.jsonl",
        "corpus.name=chroma", "golden.name=chroma", *retrieval,
        "retrieval.diagnose=false", "retrieval.depth=20",
        f"chunk.boundary={boundary}", f"chunk.size={size}", f"chunk.overlap={overlap}",
        "chunk.tokenizer=cl100k", "eval.k=[5,10]", "eval.prompt_k=5", "eval.span_mode=chroma",
        "eval.latency_sample=0", "tracking=off", f"cache.dir={cache}"])


def exact_rows(cfg, result) -> list[dict]:
    """The same chunks and rankings scored with their true spans (span_mode=exact)."""
    from sweep.config.specs import build_job_spec
    from sweep.evaluation.evaluate import EvalSpec, evaluate
    from sweep.pipeline.memo import load_corpus_cached

    job = build_job_spec(cfg)
    docs, _ = load_corpus_cached(job.corpus, job.cache)
    spec = EvalSpec(tuple(cfg.eval.k), cfg.eval.prompt_k, cfg.eval.token_budget,
                    cfg.eval.min_overlap, "exact")
    _, rows = evaluate(result.resolved, result.chunks, result.rankings, spec, None,
                       {d.doc_id: d.text for d in docs})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/chunk-sweep-repro-chroma"))
    parser.add_argument("--cache", type=Path, default=None,
                        help="embedding cache folder (default: OUT/cache)")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="a folder in Chroma's layout (questions_df.csv, corpora/)")
    parser.add_argument("--only", default="",
                        help='rows to run, e.g. "Recursive 200/0,TokenText 200/0" (default: all)')
    parser.add_argument("--omega-only", action="store_true",
                        help="only Precision_Ω (no model; minutes less)")
    parser.add_argument("--index", choices=("exact", "hnsw"), default="exact",
                        help="exact search (default) or FAISS HNSW with Chroma's settings "
                             "(M=16, ef_construction=100, ef_search=50)")
    args = parser.parse_args(argv)

    from sweep.application.job import run_job
    from sweep.common.errors import SweepError
    from sweep.config.schema import Boundary
    from sweep.config.specs import build_job_spec
    from sweep.data.importers import run_import

    if not args.data.is_dir():
        print(f"repro-chroma: {args.data} not found (the shared data folder)", file=sys.stderr)
        return 2
    out = args.out.resolve()
    cache = (args.cache or out / "cache").resolve()
    data = out / "data"
    out.mkdir(parents=True, exist_ok=True)
    report = run_import("chroma", args.data, data, force=True)
    print(f"imported {report['counts']['questions_written']} questions, "
          f"{report['counts']['documents']} corpora -> {data}")

    published = load_published()
    rows_by_config: dict[tuple[str, int, int], list[dict[str, str]]] = {}
    for p in published:
        rows_by_config.setdefault((p["chunker"], int(p["size"]), int(p["overlap"])), []).append(p)

    known = {b.value for b in Boundary}
    only = {o.strip() for o in args.only.split(",") if o.strip()}
    table: list[dict] = []
    for (chunker, size, overlap), pubs in rows_by_config.items():
        if only and f"{chunker} {size}/{overlap}" not in only:
            continue
        boundary = BOUNDARY[chunker]
        if boundary not in known:
            print(f"{chunker} {size}/{overlap}: not run, chunk.boundary={boundary} does not "
                  "exist in chunk-sweep yet")
            for p in pubs:
                table.append({**{c: "" for c in COLUMNS}, "chunker": chunker, "size": size,
                              "overlap": overlap, "k": p["k"], "metric": p["metric"],
                              "published": p["mean"], "published_std": p["std"],
                              "within": "not run"})
            continue
        started = time.perf_counter()
        cfg = config_for(data, cache, boundary, size, overlap, args.omega_only, args.index)
        try:
            result = run_job(build_job_spec(cfg), progress=False)
        except SweepError as exc:
            print(f"repro-chroma: {chunker} {size}/{overlap}: {exc}", file=sys.stderr)
            return 1
        rows = result.rows
        exact = exact_rows(cfg, result)
        for p in pubs:
            metric, k = p["metric"], int(p["k"])
            if args.omega_only and metric != "precision_omega":
                continue
            name = METRIC[metric].format(k="min" if k == 0 else k)
            values = [r[name] for r in rows if name in r]
            mean, std = pop_stats(values)
            exact_mean, _ = pop_stats([r[name] for r in exact if name in r])
            diff = mean - float(p["mean"])
            table.append({
                "chunker": chunker, "size": size, "overlap": overlap, "k": k if k else "min",
                "metric": metric, "ours": f"{mean:.1f}", "published": p["mean"],
                "difference": f"{diff:+.1f}", "ours_std": f"{std:.1f}",
                "published_std": p["std"], "ours_exact_spans": f"{exact_mean:.1f}",
                "target": f"±{TARGET[metric]}",
                "within": "yes" if abs(round(diff, 1)) <= TARGET[metric] else "NO",
                "n_questions": len(values), "index": args.index})
        print(f"{chunker} {size}/{overlap}: {len(result.chunks)} chunks, mean "
              f"{result.report['metrics']['chunk_tokens_mean']:.1f} cl100k tokens "
              f"({time.perf_counter() - started:.0f} s)", flush=True)

    path = out / "repro_chroma.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(table)
    print()
    print(f"{'chunker':9} {'size':>4} {'ovl':>3} {'k':>3} {'metric':15} {'ours':>12} "
          f"{'published':>12} {'diff':>6} {'exact':>6}  within")
    for r in table:
        ours = f"{r['ours']} ± {r['ours_std']}" if r["ours"] else "-"
        pub = f"{r['published']} ± {r['published_std']}"
        print(f"{r['chunker']:9} {r['size']:>4} {r['overlap']:>3} {r['k']:>3} {r['metric']:15} "
              f"{ours:>12} {pub:>12} {r['difference'] or '-':>6} "
              f"{r['ours_exact_spans'] or '-':>6}  {r['within']}")
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
