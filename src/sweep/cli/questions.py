"""``sweep questions import|generate``: real (and synthetic) questions into a prioritised
labelling queue (issue 27; the work is in sweep.questions, the traces' store in
sweep.outputs.tracking).

    sweep questions import LOG [LOG ...] --out QUEUE.jsonl [--question-column NAME]
        [--id-column NAME] [--time-column NAME] [--feedback-column NAME]
        [--negative-below X] [--format csv|tsv|jsonl|text|otel] [--corpus DIR] [--golden FILE]
        [--no-redact] [--no-near] [overrides...]
    sweep questions import --mlflow-experiment NAME [--tracking-uri URI] --out QUEUE.jsonl
    sweep questions generate --out QUEUE.jsonl [--corpus DIR] [--golden FILE] [--passages N]
        [--per-passage N] [overrides...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.progress import show_progress
from sweep.common.secret import scrub_urls
from sweep.questions.rows import FORMATS as LOG_FORMATS


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", metavar="QUEUE.jsonl", required=True,
                   help="the queue; an existing one is added to (counts summed)")
    p.add_argument("--corpus", metavar="DIR", help="rank by BM25/dense disagreement on this "
                   "corpus (= corpus.path=DIR; chunked as chunk.*, embedded as embedding.*)")
    p.add_argument("--golden", metavar="FILE", help="with --corpus: rank questions outside "
                   "this golden set's documents and sections higher (coverage)")
    p.add_argument("--against-sweep", metavar="latest|RUN_ID", default=None,
                   help="with --corpus: disagreement between this sweep's best and runner-up "
                        "configurations (run again on the candidates) instead of BM25 vs "
                        "dense; the sweep is read from --sweep-tracking-uri")
    p.add_argument("--sweep-experiment", metavar="NAME", default=None,
                   help="with --against-sweep latest: the sweep's MLflow experiment "
                        "(default: the one used last)")
    p.add_argument("--sweep-tracking-uri", metavar="URI", default=None,
                   help="the store holding --against-sweep (default: $MLFLOW_TRACKING_URI, "
                        "else ./mlflow.db)")
    p.add_argument("--no-redact", action="store_true",
                   help="keep e-mails, phones, cards, IBANs and key-like strings as they are")
    p.add_argument("--no-near", action="store_true",
                   help="merge exact duplicates only (no model is loaded)")
    p.add_argument("--negative-below", type=float, default=None, metavar="X",
                   help="a rating at or below X is negative feedback (default: the bottom of "
                        "the scale: 1 on a 1-5 scale, 0 on a 0-1 scale)")


def _private(text: str, redact: bool) -> str:
    """A line the import prints or writes about the log (a header, a value in an error, a
    file name): redacted like the questions unless --no-redact."""
    from sweep.common.secret import redact_text

    return redact_text(text) if redact else text


def _private_tree(node: Any, redact: bool) -> Any:
    if isinstance(node, str):
        return _private(node, redact)
    if isinstance(node, dict):
        return {k: _private_tree(v, redact) for k, v in node.items()}
    if isinstance(node, list):
        return [_private_tree(v, redact) for v in node]
    return node


def cmd_questions(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep questions",
        description="Build the labelling queue from real questions (logs, traces) and "
                    "synthetic ones (a chat model over the corpus).")
    sub = parser.add_subparsers(dest="action", required=True)
    imp = sub.add_parser("import", help="logs or MLflow traces -> the queue")
    imp.add_argument("sources", nargs="*", metavar="LOG",
                     help="CSV, TSV, JSONL, text log or OpenTelemetry JSON (gzip too); "
                          "words with '=' are config overrides, e.g. "
                          "questions.near_threshold=0.85")
    imp.add_argument("--format", choices=LOG_FORMATS,
                     help="the files' format (default: from the name)")
    for role in ("question", "id", "time", "feedback"):
        imp.add_argument(f"--{role}-column", metavar="NAME", default=None,
                         help=f"the {role} column (default: guessed from the header)")
    imp.add_argument("--mlflow-experiment", metavar="NAME",
                     help="read the traces of this MLflow experiment")
    imp.add_argument("--tracking-uri", metavar="URI", default=None,
                     help="MLflow store (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)")
    imp.add_argument("--max-traces", type=int, default=0, metavar="N",
                     help="read at most N traces (default: all)")
    imp.add_argument("--max-row-chars", type=int, default=None, metavar="N",
                     help="refuse a log whose row (line) is longer than N characters "
                          "(default: 16 MiB)")
    imp.add_argument("--max-field-chars", type=int, default=None, metavar="N",
                     help="refuse a log whose question, id or feedback field is longer than "
                          "N characters (default: 4 MiB)")
    _common(imp)
    gen = sub.add_parser("generate", help="synthetic questions about sampled passages")
    gen.add_argument("--passages", type=int, default=None, help="= questions.passages")
    gen.add_argument("--per-passage", type=int, default=None, help="= questions.per_passage")
    _common(gen)
    gen.add_argument("overrides", nargs="*", default=[],
                     help="config overrides, e.g. generation.model=llama3.1:8b")
    args = parser.parse_args(list(argv))
    # Overrides may stand among the files: anything with "=" is one.
    if args.action == "import":
        args.overrides = [s for s in args.sources if "=" in s]
        args.sources = [s for s in args.sources if "=" not in s]
    try:
        return run_import(args) if args.action == "import" else run_generate(args)
    except SweepError as exc:
        # an error may quote the log (a bad time value, a header that was a data row)
        if args.no_redact:
            raise
        raise SweepError(_private(exc.message, True),
                         hint=None if exc.hint is None else _private(exc.hint, True)) from None


# --------------------------------------------------------------------------- shared steps

def _config(args: argparse.Namespace) -> Any:
    from sweep.config.checks import check_config
    from sweep.config.compose import compose

    overrides = list(args.overrides)
    if args.corpus:
        overrides.append(f"corpus.path={args.corpus}")
    if args.golden:
        overrides.append(f"golden.path={args.golden}")
    cfg = compose(overrides)
    check_config(cfg)
    q = cfg.questions
    if not 0.0 < q.near_threshold <= 1.0:
        raise SweepError(f"questions.near_threshold={q.near_threshold}: must be in (0, 1]")
    return cfg


def _embed(cfg: Any, report: dict[str, Any]) -> Callable[[list[str]], Any]:
    from sweep.config.specs import build_job_spec
    from sweep.pipeline.run import embedder_for

    job = build_job_spec(cfg)
    embedder = embedder_for(job.embedding, job.cache)
    report["model"] = job.embedding.name
    report["model_fingerprint"] = embedder.fingerprint

    def embed(texts: list[str]) -> Any:
        _say(f"embedding {len(texts)} questions with {job.embedding.name} for near-duplicate "
             "merging (cached vectors are reused)")
        return embedder.encode(texts, query=True, progress=True)

    return embed


def queue_corpus(cfg: Any) -> Any:
    from sweep.application.queue import QueueCorpus
    from sweep.config.specs import build_job_spec

    return QueueCorpus(build_job_spec(cfg), _say)


def config_of_run(cfg: Any, run_config: dict[str, Any]) -> Any:
    """``cfg`` (corpus, caches) with a sweep run's result sections (chunk, embedding,
    retrieval, rerank, index) from its config.yaml."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from sweep.config.identity import RESULT_SECTIONS

    try:
        merged = OmegaConf.merge(OmegaConf.structured(cfg),
                                 {k: run_config[k] for k in RESULT_SECTIONS if k in run_config})
        return OmegaConf.to_object(merged)
    except OmegaConfBaseException as exc:
        raise SweepError(f"the sweep's config.yaml does not fit this version's schema: "
                         f"{' '.join(str(exc).split())[:200]}") from None


def config_places(cfg: Any, questions: list[str]) -> list[list[tuple[str, int, int]]]:
    """The places of the first chunks ``cfg`` retrieves for each question, as a sweep of it
    would search (`sweep.application.queue.config_places`)."""
    from sweep.application.queue import config_places as places
    from sweep.config.specs import build_job_spec

    return places(build_job_spec(cfg), questions, progress=show_progress())


def sweep_locate(args: argparse.Namespace, cfg: Any, base: Callable[[list[Any]], Any],
                 steps: dict[str, Any]) -> Callable[[list[Any]], Any]:
    """Disagreement between the best and the runner-up of a finished sweep: both are run
    again on the candidates over ``--corpus`` (coverage still from ``base``)."""
    import tempfile

    from sweep.decide.rerun import run_configs
    from sweep.decide.runs import default_uri, ranked_table
    from sweep.questions.locate import with_sweep_disagreement

    uri = args.sweep_tracking_uri or default_uri()
    with tempfile.TemporaryDirectory() as tmp:
        t = ranked_table(uri, args.sweep_experiment, args.against_sweep, None,
                         Path(tmp) / "table")
        if len(t.rows) < 2:
            raise SweepError(f"--against-sweep {args.against_sweep}: the sweep has "
                             f"{len(t.rows)} finished configuration(s); a runner-up needs two")
        configs = run_configs(uri, t.rows[:2], Path(tmp) / "cfg")
    names = tuple(", ".join(f"{p}={row.get(p)}" for p in t.swept) or row["run_id"]
                  for row in t.rows[:2])
    chosen = [config_of_run(cfg, c) for c in configs]

    def locate(cands: list[Any]) -> Any:
        signals = base(cands)  # coverage (and BM25 vs dense, replaced below)
        questions = [c.question for c in cands]
        places = []
        for name, c in zip(names, chosen, strict=True):
            _say(f"ranking: {len(cands)} questions through the sweep's {name}")
            places.append(config_places(c, questions))
        out = with_sweep_disagreement(signals, cands, places[0], places[1],
                                      (names[0], names[1]))
        by_source: dict[str, dict[str, int]] = {}
        for cand in cands:
            s = by_source.setdefault(cand.source or "unspecified", {"candidates": 0,
                                                                    "disagree": 0})
            s["candidates"] += 1
            s["disagree"] += bool(out[cand.cid].disagree)
        steps["disagreement"] = {
            "ran": True, "between": "best and runner-up", "sweep": t.parent["run_id"],
            "experiment": t.parent.get("experiment"), "metric": t.metric,
            "best": {"run_id": t.rows[0]["run_id"], "config": names[0]},
            "runner_up": {"run_id": t.rows[1]["run_id"], "config": names[1]},
            "corpus": cfg.corpus.path, "by_source": by_source}
        return out

    return locate


def _progress_bar(what: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    if not show_progress():
        started = time.monotonic()
        last = [started]

        def tick(done: int, total: int) -> None:
            # a line every 30 s on a long import, where no bar can be drawn
            now = time.monotonic()
            if now - last[0] >= 30 and total:
                last[0] = now
                _say(f"{what}: {done / total:.0%} of {total / 1e6:.0f} MB "
                     f"({now - started:.0f} s)")

        return tick, lambda: None
    from tqdm import tqdm

    bar = tqdm(total=0, unit="B", unit_scale=True, desc=what, leave=False)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.update(max(0, done - bar.n))

    return update, bar.close


def _finish(args: argparse.Namespace, cfg: Any, out: Path, rows: Iterable[Any],
            sources: list[dict[str, Any]], started: float,
            extra: dict[str, Any] | None = None) -> int:
    from sweep.questions.build import build_queue, summary
    from sweep.questions.queue import read_decisions, read_queue, write_queue, write_report

    existing = read_queue(out)
    decisions = read_decisions(out)
    near: dict[str, Any] = {}
    embed = None if args.no_near else _embed(cfg, near)
    steps: dict[str, Any] = {}
    locate = None
    if args.corpus or args.action == "generate":
        corpus = extra.pop("_corpus", None) if extra else None
        corpus = corpus or queue_corpus(cfg)
        locate = corpus.locate(args.golden, steps)
        if args.against_sweep:
            locate = sweep_locate(args, cfg, locate, steps)
    elif args.against_sweep:
        raise SweepError("--against-sweep needs --corpus DIR (the sweep's corpus)")
    else:
        steps["disagreement"] = {"ran": False, "why_not": "no --corpus"}
        steps["coverage"] = {"ran": False, "why_not": "no --corpus"}
    built = build_queue(rows, existing, decisions, redact=not args.no_redact,
                        negative_below=args.negative_below, embed=embed,
                        near_threshold=cfg.questions.near_threshold, locate=locate)
    redact = not args.no_redact
    report = {"queue": str(out), "sources": _private_tree(sources, redact), **built.report}
    report["near_duplicates"].update(near)
    report["priority"]["steps"] = steps
    report["priority"]["order"] = ["negative feedback", "frequency", "disagreement",
                                   "coverage", "skipped last"]
    if extra:
        report.update(extra)
    report["seconds"] = round(time.monotonic() - started, 2)
    if built.report["rows_kept"] == 0 and not existing:
        raise SweepError(f"{', '.join(s['path'] for s in sources)}: no question to queue "
                         f"({built.report['rows_read']} rows read, "
                         f"{built.report['rows_empty']} blank, "
                         f"{built.report['skipped_decided']} already decided)")
    write_queue(out, built.queue)
    path = write_report(out, report)
    for line in summary(report):
        print(_private(line, redact))
    print(_private(f"wrote {out} and {path.name}", redact))
    return 0


# --------------------------------------------------------------------------- import

def run_import(args: argparse.Namespace) -> int:
    if bool(args.sources) == bool(args.mlflow_experiment):
        raise SweepError("sweep questions import: give log files or --mlflow-experiment NAME "
                         "(one of the two)")
    if args.mlflow_experiment and any(getattr(args, f"{r}_column") for r in
                                      ("question", "id", "time", "feedback")):
        raise SweepError("--*-column applies to log files; a trace's question is its root "
                         "span's input")
    started = time.monotonic()
    cfg = _config(args)
    out = Path(args.out)
    sources: list[dict[str, Any]] = []
    if args.mlflow_experiment:
        rows: Iterable[Any] = _trace_rows(args, sources)
    else:
        rows = _log_rows(args, sources)
    return _finish(args, cfg, out, rows, sources, started)


def _log_rows(args: argparse.Namespace, sources: list[dict[str, Any]]) -> Iterator[Any]:
    from sweep.questions.rows import DEFAULT_LIMITS, Columns, Limits, detect_format, read_rows

    given = Columns(args.question_column, args.id_column, args.time_column,
                    args.feedback_column)
    limits = Limits(row=args.max_row_chars or DEFAULT_LIMITS.row,
                    field=args.max_field_chars or DEFAULT_LIMITS.field)
    if limits.row < 1 or limits.field < 1:
        raise SweepError("--max-row-chars and --max-field-chars must be at least 1")
    paths = [Path(s) for s in args.sources]
    for p in paths:  # every file is checked before the first is read
        if not p.is_file():
            raise SweepError(f"{p}: no such file")
    for p in paths:
        fmt = args.format or detect_format(p)
        entry: dict[str, Any] = {"path": str(p), "format": fmt, "rows": 0}
        sources.append(entry)

        def chosen(cols: Columns, e: dict[str, Any] = entry) -> None:
            e["columns"] = {k: v for k, v in vars(cols).items()}

        tick, close = _progress_bar(_private(p.name, not args.no_redact))
        try:
            for row in read_rows(p, fmt=fmt, columns=given, on_progress=tick, chosen=chosen,
                                 limits=limits):
                entry["rows"] += 1
                yield row
        finally:
            close()


def _trace_rows(args: argparse.Namespace, sources: list[dict[str, Any]]) -> Iterator[Any]:
    from sweep.decide.runs import default_uri
    from sweep.outputs import tracking
    from sweep.questions.traces import row_of_trace

    uri = args.tracking_uri or default_uri()
    entry: dict[str, Any] = {"path": f"{uri} experiment {args.mlflow_experiment}",
                             "format": "mlflow-traces", "rows": 0, "with_retriever": 0,
                             "with_feedback": 0}
    sources.append(entry)
    for trace in tracking.iter_traces(uri, args.mlflow_experiment, args.max_traces):
        row = row_of_trace(trace)
        entry["rows"] += 1
        entry["with_retriever"] += bool(row.retrieved)
        entry["with_feedback"] += bool(row.feedback)
        if entry["rows"] % 1000 == 0:
            _say(f"read {entry['rows']} traces")
        yield row


# --------------------------------------------------------------------------- generate

def run_generate(args: argparse.Namespace) -> int:
    from sweep.endpoints.chat import ChatClient
    from sweep.endpoints.spec import EndpointSpec
    from sweep.generation.cache import JudgeCache
    from sweep.questions.generate import GenerateSpec, generate_rows, sample_passages

    started = time.monotonic()
    cfg = _config(args)
    q, g = cfg.questions, cfg.generation
    passages = args.passages if args.passages is not None else q.passages
    per = args.per_passage if args.per_passage is not None else q.per_passage
    if passages < 1 or per < 1:
        raise SweepError("--passages and --per-passage must be at least 1")
    spec = GenerateSpec(passages, per, q.seed, q.generate_prompt, q.generate_system,
                        q.temperature, q.max_tokens, g.price_input_per_mtok,
                        g.price_output_per_mtok)
    client = ChatClient(EndpointSpec("generation", g.base_url, g.api_key_env, g.timeout_s,
                                     g.max_retries, g.concurrency), g.model)
    client.preflight()
    corpus = queue_corpus(cfg)
    chosen = sample_passages(corpus.chunks, passages, q.seed)
    if not chosen:
        raise SweepError(f"corpus {cfg.corpus.path}: no passage of at least 20 words to ask "
                         "about")
    cache = (JudgeCache(Path(cfg.cache.dir) / "questions.sqlite") if cfg.cache.enabled
             else None)
    _say(f"asking {g.model} at {scrub_urls(g.base_url)} for {per} questions about each of "
         f"{len(chosen)} passages")
    rows, info = generate_rows(chosen, corpus.docs, client, spec, cache)
    sources = [{"path": f"{g.base_url} model {g.model}", "format": "synthetic",
                "rows": len(rows)}]
    info["prompt"] = "questions.generate_prompt" if spec.prompt != GenerateSpec().prompt \
        else "default"
    info["seed"] = q.seed
    print(f"generated {len(rows)} questions from {len(chosen)} passages: {info['calls']} calls, "
          f"{info['cache_hits']} from the cache"
          + (f", ${info['cost_usd']:.4f}" if info.get("cost_usd") is not None else ""))
    return _finish(args, cfg, Path(args.out), rows, sources, started,
                   {"generate": info, "_corpus": corpus})
