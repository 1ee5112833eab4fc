"""``sweep questions import|generate``: real (and synthetic) questions into a prioritised
labelling queue (issue 27; the work is in sweep.application.questions and sweep.questions,
the traces' store in sweep.outputs.tracking).

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
from collections.abc import Callable, Sequence

from sweep.application.questions import (
    QuestionsRequest,
    generate_questions,
    import_questions,
    private,
)
from sweep.common.errors import SweepError
from sweep.common.progress import show_progress
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
    req = QuestionsRequest(**vars(args))
    try:
        if args.action == "generate":
            return generate_questions(req, _say, print)
        open_traces = None
        if args.mlflow_experiment:
            from sweep.outputs.tracking import iter_traces as open_traces
        return import_questions(req, _say, print, _progress_bar, open_traces)
    except SweepError as exc:
        # an error may quote the log (a bad time value, a header that was a data row)
        if args.no_redact:
            raise
        raise SweepError(private(exc.message, True),
                         hint=None if exc.hint is None else private(exc.hint, True)) from None


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
