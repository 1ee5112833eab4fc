"""`sweep questions import | generate` over plain data: real (logs, traces) and synthetic
questions into the prioritised labelling queue (issue 27).

The command (`sweep.cli.questions`) parses its options into a `QuestionsRequest` and hands
in how to speak: ``say`` (progress, stderr), ``show`` (the summary, stdout) and
``progress_bar`` (a byte counter for a long log). The work on the rows is in
`sweep.questions`; the corpus, chunks and indexes the ranking reads come through
`sweep.application.queue` (a sweep's memo and caches). MLflow traces are read by the function
the command hands in (`sweep.outputs.tracking.iter_traces`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.progress import show_progress
from sweep.common.secret import redact_text, scrub_urls

Say = Callable[[str], None]
# (what) -> (tick(done_bytes, total_bytes), close)
ProgressBar = Callable[[str], tuple[Callable[[int, int], None], Callable[[], None]]]
# (tracking uri, experiment, at most N or 0) -> the traces (`outputs.tracking.iter_traces`)
OpenTraces = Callable[[str, str, int], Iterable[Any]]
COLUMN_ROLES = ("question", "id", "time", "feedback")


@dataclass(frozen=True)
class QuestionsRequest:
    """The options of `sweep questions import | generate` (the command's argument names)."""

    action: str
    out: str
    overrides: list[str] = field(default_factory=list)
    corpus: str | None = None
    golden: str | None = None
    against_sweep: str | None = None
    sweep_experiment: str | None = None
    sweep_tracking_uri: str | None = None
    no_redact: bool = False
    no_near: bool = False
    negative_below: float | None = None
    # import
    sources: list[str] = field(default_factory=list)
    format: str | None = None
    question_column: str | None = None
    id_column: str | None = None
    time_column: str | None = None
    feedback_column: str | None = None
    mlflow_experiment: str | None = None
    tracking_uri: str | None = None
    max_traces: int = 0
    max_row_chars: int | None = None
    max_field_chars: int | None = None
    # generate
    passages: int | None = None
    per_passage: int | None = None


def private(text: str, redact: bool) -> str:
    """A line the import prints or writes about the log (a header, a value in an error, a
    file name): redacted like the questions unless --no-redact."""
    return redact_text(text) if redact else text


def _private_tree(node: Any, redact: bool) -> Any:
    if isinstance(node, str):
        return private(node, redact)
    if isinstance(node, dict):
        return {k: _private_tree(v, redact) for k, v in node.items()}
    if isinstance(node, list):
        return [_private_tree(v, redact) for v in node]
    return node


def compose_for(req: QuestionsRequest) -> Any:
    """The composed, checked config of the command (``--corpus`` and ``--golden`` as
    overrides)."""
    from sweep.config.checks import check_config
    from sweep.config.compose import compose

    overrides = list(req.overrides)
    if req.corpus:
        overrides.append(f"corpus.path={req.corpus}")
    if req.golden:
        overrides.append(f"golden.path={req.golden}")
    cfg = compose(overrides)
    check_config(cfg)
    q = cfg.questions
    if not 0.0 < q.near_threshold <= 1.0:
        raise SweepError(f"questions.near_threshold={q.near_threshold}: must be in (0, 1]")
    return cfg


def _embed(cfg: Any, report: dict[str, Any], say: Say) -> Callable[[list[str]], Any]:
    from sweep.config.specs import build_job_spec
    from sweep.pipeline.run import embedder_for

    job = build_job_spec(cfg)
    embedder = embedder_for(job.embedding, job.cache)
    report["model"] = job.embedding.name
    report["model_fingerprint"] = embedder.fingerprint

    def embed(texts: list[str]) -> Any:
        say(f"embedding {len(texts)} questions with {job.embedding.name} for near-duplicate "
             "merging (cached vectors are reused)")
        return embedder.encode(texts, query=True, progress=True)

    return embed


def queue_corpus(cfg: Any, say: Say) -> Any:
    from sweep.application.queue import QueueCorpus
    from sweep.config.specs import build_job_spec

    return QueueCorpus(build_job_spec(cfg), say)


def config_places(cfg: Any, questions: list[str]) -> list[list[tuple[str, int, int]]]:
    """The places of the first chunks ``cfg`` retrieves for each question, as a sweep of it
    would search (`sweep.application.queue.config_places`)."""
    from sweep.application.queue import config_places as places
    from sweep.config.specs import build_job_spec

    return places(build_job_spec(cfg), questions, progress=show_progress())


def sweep_locate(req: QuestionsRequest, cfg: Any, base: Callable[[list[Any]], Any],
                 steps: dict[str, Any], say: Say) -> Callable[[list[Any]], Any]:
    """Disagreement between the best and the runner-up of a finished sweep: both are run
    again on the candidates over ``--corpus`` (coverage still from ``base``)."""
    import tempfile

    from sweep.config.compose import config_of_run
    from sweep.decide.rerun import run_configs
    from sweep.decide.runs import default_uri, ranked_table
    from sweep.questions.locate import with_sweep_disagreement

    uri = req.sweep_tracking_uri or default_uri()
    with tempfile.TemporaryDirectory() as tmp:
        t = ranked_table(uri, req.sweep_experiment, req.against_sweep, None,
                         Path(tmp) / "table")
        if len(t.rows) < 2:
            raise SweepError(f"--against-sweep {req.against_sweep}: the sweep has "
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
            say(f"ranking: {len(cands)} questions through the sweep's {name}")
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



def _finish(req: QuestionsRequest, cfg: Any, out: Path, rows: Iterable[Any],
            sources: list[dict[str, Any]], started: float, say: Say, show: Say,
            extra: dict[str, Any] | None = None) -> int:
    from sweep.questions.build import build_queue, summary
    from sweep.questions.queue import read_decisions, read_queue, write_queue, write_report

    existing = read_queue(out)
    decisions = read_decisions(out)
    near: dict[str, Any] = {}
    embed = None if req.no_near else _embed(cfg, near, say)
    steps: dict[str, Any] = {}
    locate = None
    if req.corpus or req.action == "generate":
        corpus = extra.pop("_corpus", None) if extra else None
        corpus = corpus or queue_corpus(cfg, say)
        locate = corpus.locate(req.golden, steps)
        if req.against_sweep:
            locate = sweep_locate(req, cfg, locate, steps, say)
    elif req.against_sweep:
        raise SweepError("--against-sweep needs --corpus DIR (the sweep's corpus)")
    else:
        steps["disagreement"] = {"ran": False, "why_not": "no --corpus"}
        steps["coverage"] = {"ran": False, "why_not": "no --corpus"}
    built = build_queue(rows, existing, decisions, redact=not req.no_redact,
                        negative_below=req.negative_below, embed=embed,
                        near_threshold=cfg.questions.near_threshold, locate=locate)
    redact = not req.no_redact
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
        show(private(line, redact))
    show(private(f"wrote {out} and {path.name}", redact))
    return 0


# --------------------------------------------------------------------------- import

def import_questions(req: QuestionsRequest, say: Say, show: Say, progress_bar: ProgressBar,
                     open_traces: OpenTraces | None = None) -> int:
    """``sweep questions import``: log files (``req.sources``), or the traces of
    ``req.mlflow_experiment`` (read by ``open_traces``), into the queue ``req.out``."""
    if bool(req.sources) == bool(req.mlflow_experiment):
        raise SweepError("sweep questions import: give log files or --mlflow-experiment NAME "
                         "(one of the two)")
    if req.mlflow_experiment and any(getattr(req, f"{r}_column") for r in COLUMN_ROLES):
        raise SweepError("--*-column applies to log files; a trace's question is its root "
                         "span's input")
    started = time.monotonic()
    cfg = compose_for(req)
    out = Path(req.out)
    sources: list[dict[str, Any]] = []
    if req.mlflow_experiment:
        rows: Iterable[Any] = _trace_rows(req, sources, open_traces, say)
    else:
        rows = _log_rows(req, sources, progress_bar)
    return _finish(req, cfg, out, rows, sources, started, say, show)


def _log_rows(req: QuestionsRequest, sources: list[dict[str, Any]],
              progress_bar: ProgressBar) -> Iterator[Any]:
    from sweep.questions.rows import DEFAULT_LIMITS, Columns, Limits, detect_format, read_rows

    given = Columns(req.question_column, req.id_column, req.time_column,
                    req.feedback_column)
    limits = Limits(row=req.max_row_chars or DEFAULT_LIMITS.row,
                    field=req.max_field_chars or DEFAULT_LIMITS.field)
    if limits.row < 1 or limits.field < 1:
        raise SweepError("--max-row-chars and --max-field-chars must be at least 1")
    paths = [Path(s) for s in req.sources]
    for p in paths:  # every file is checked before the first is read
        if not p.is_file():
            raise SweepError(f"{p}: no such file")
    for p in paths:
        fmt = req.format or detect_format(p)
        entry: dict[str, Any] = {"path": str(p), "format": fmt, "rows": 0}
        sources.append(entry)

        def chosen(cols: Columns, e: dict[str, Any] = entry) -> None:
            e["columns"] = {k: v for k, v in vars(cols).items()}

        tick, close = progress_bar(private(p.name, not req.no_redact))
        try:
            for row in read_rows(p, fmt=fmt, columns=given, on_progress=tick, chosen=chosen,
                                 limits=limits):
                entry["rows"] += 1
                yield row
        finally:
            close()


def _trace_rows(req: QuestionsRequest, sources: list[dict[str, Any]],
                open_traces: OpenTraces | None, say: Say) -> Iterator[Any]:
    from sweep.decide.runs import default_uri
    from sweep.questions.traces import row_of_trace

    uri = req.tracking_uri or default_uri()
    entry: dict[str, Any] = {"path": f"{uri} experiment {req.mlflow_experiment}",
                             "format": "mlflow-traces", "rows": 0, "with_retriever": 0,
                             "with_feedback": 0}
    sources.append(entry)
    assert open_traces is not None  # the command hands it in with --mlflow-experiment
    for trace in open_traces(uri, req.mlflow_experiment, req.max_traces):
        row = row_of_trace(trace)
        entry["rows"] += 1
        entry["with_retriever"] += bool(row.retrieved)
        entry["with_feedback"] += bool(row.feedback)
        if entry["rows"] % 1000 == 0:
            say(f"read {entry['rows']} traces")
        yield row


# --------------------------------------------------------------------------- generate

def generate_questions(req: QuestionsRequest, say: Say, show: Say) -> int:
    """``sweep questions generate``: a chat model's questions about sampled passages into
    the queue ``req.out``."""
    from sweep.endpoints.chat import ChatClient
    from sweep.endpoints.spec import EndpointSpec
    from sweep.generation.cache import JudgeCache
    from sweep.questions.generate import GenerateSpec, generate_rows, sample_passages

    started = time.monotonic()
    cfg = compose_for(req)
    q, g = cfg.questions, cfg.generation
    passages = req.passages if req.passages is not None else q.passages
    per = req.per_passage if req.per_passage is not None else q.per_passage
    if passages < 1 or per < 1:
        raise SweepError("--passages and --per-passage must be at least 1")
    spec = GenerateSpec(passages, per, q.seed, q.generate_prompt, q.generate_system,
                        q.temperature, q.max_tokens, g.price_input_per_mtok,
                        g.price_output_per_mtok)
    client = ChatClient(EndpointSpec("generation", g.base_url, g.api_key_env, g.timeout_s,
                                     g.max_retries, g.concurrency), g.model)
    client.preflight()
    corpus = queue_corpus(cfg, say)
    chosen = sample_passages(corpus.chunks, passages, q.seed)
    if not chosen:
        raise SweepError(f"corpus {cfg.corpus.path}: no passage of at least 20 words to ask "
                         "about")
    cache = (JudgeCache(Path(cfg.cache.dir) / "questions.sqlite") if cfg.cache.enabled
             else None)
    say(f"asking {g.model} at {scrub_urls(g.base_url)} for {per} questions about each of "
         f"{len(chosen)} passages")
    rows, info = generate_rows(chosen, corpus.docs, client, spec, cache)
    sources = [{"path": f"{g.base_url} model {g.model}", "format": "synthetic",
                "rows": len(rows)}]
    info["prompt"] = "questions.generate_prompt" if spec.prompt != GenerateSpec().prompt \
        else "default"
    info["seed"] = q.seed
    show(f"generated {len(rows)} questions from {len(chosen)} passages: {info['calls']} calls, "
          f"{info['cache_hits']} from the cache"
          + (f", ${info['cost_usd']:.4f}" if info.get("cost_usd") is not None else ""))
    return _finish(req, cfg, Path(req.out), rows, sources, started, say, show,
                   {"generate": info, "_corpus": corpus})
