"""``sweep golden``: a golden set across versions of its corpus.

    sweep golden rebase --golden OLD.jsonl --old OLD --new NEW --out NEW.jsonl [overrides...]
    sweep golden fingerprint --golden G.jsonl [--corpus DIR] [--force] [overrides...]

OLD and NEW are corpus folders, or git revisions of the corpus folder (``--corpus DIR``, by
default ``corpus.path``) read with git itself: ``--old HEAD~20``; ``--new`` defaults to the
corpus folder as it is on disk. The corpora are read as a sweep reads them (the ``corpus.*``
settings: extensions, parsers), so a PDF's passages are carried through the parser's text.
See docs/guide/rebase.md. The work is in `sweep.application.golden`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from sweep.application.golden import FingerprintRequest, RebaseRequest, fingerprint, rebase


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a positive number of seconds")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive whole number")
    return int(text)


def cmd_golden(argv: Sequence[str], *, say: Callable[[str], None] | None = None) -> int:
    say = say or (lambda m: print(m, file=sys.stderr, flush=True))
    parser = argparse.ArgumentParser(prog="sweep golden",
                                     description="A golden set across versions of its corpus.")
    sub = parser.add_subparsers(dest="action", required=True)
    rb = sub.add_parser("rebase", help="carry the evidence to a new version of the corpus")
    rb.add_argument("--golden", required=True, metavar="OLD.jsonl")
    rb.add_argument("--old", required=True, metavar="OLD",
                    help="the corpus the labels were made on: a folder or a git revision")
    rb.add_argument("--new", metavar="NEW",
                    help="the new corpus: a folder or a git revision (default: --corpus)")
    rb.add_argument("--corpus", metavar="DIR",
                    help="the corpus folder whose git history revisions name (default: "
                         "corpus.path)")
    rb.add_argument("--out", required=True, metavar="NEW.jsonl")
    rb.add_argument("--report", metavar="FILE",
                    help="default: rebase_report.json beside --out")
    rb.add_argument("--force", action="store_true", help="replace --out and its review queue")
    rb.add_argument("--diff-deadline", type=_positive, metavar="S",
                    help="seconds the diff of one document may take; past them its passages "
                         "are looked for by their text only (default: 60)")
    rb.add_argument("--diff-max-tokens", type=_positive_int, metavar="N",
                    help="word tokens (both sides) of a changed block the diff resolves word "
                         "by word; a larger block's passages are looked for by their text "
                         "only (default: 60000)")
    rb.add_argument("overrides", nargs="*", help="config overrides, e.g. corpus.pdf_parser=...")
    fp = sub.add_parser("fingerprint",
                        help="record the corpus a golden set was labelled against")
    fp.add_argument("--golden", metavar="FILE", help="default: golden.path")
    fp.add_argument("--corpus", metavar="DIR", help="default: corpus.path")
    fp.add_argument("--force", action="store_true",
                    help="replace a record even when documents changed since it was made")
    fp.add_argument("overrides", nargs="*")
    options = vars(parser.parse_args(list(argv)))
    if options.pop("action") == "rebase":
        rebase(RebaseRequest(**options), say)
    else:
        fingerprint(FingerprintRequest(**options), say)
    return 0
