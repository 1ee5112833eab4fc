"""``sweep import FORMAT SRC --out DIR``: a public QA / retrieval data set -> a corpus folder
and a golden set (the conversion is sweep.data.importers)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from sweep.data.importers import EVIDENCE_FILE_NAME, IMPORTERS, run_import, summary


def cmd_import(argv: Sequence[str], *, print_fn: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep import",
        description="Turn a public QA / retrieval data set into a corpus folder and a golden "
                    "set (DIR/corpus/, DIR/golden.jsonl, DIR/import_report.json).")
    described = [f"{e.name} ({e.doc})" for e in IMPORTERS.values()]
    parser.add_argument("format", metavar="FORMAT", choices=IMPORTERS.names(),
                        help=", ".join(described[:-1]) + " or " + described[-1])
    parser.add_argument("src", metavar="SRC", help="the source file (squad) or folder")
    parser.add_argument("--out", metavar="DIR", required=True, help="output folder")
    parser.add_argument("--force", action="store_true",
                        help="write into a non-empty DIR (its corpus/ is replaced)")
    parser.add_argument("--split", default="test", help="beir: qrels split (default: test)")
    parser.add_argument("--evidence", metavar="FILE", default=None,
                        help="beir: JSONL evidence spans {query_id, doc_id, start, end, text} "
                             f"(default: SRC/{EVIDENCE_FILE_NAME} when present)")
    args = parser.parse_args(list(argv))
    report = run_import(args.format, args.src, args.out, force=args.force, split=args.split,
                        evidence=args.evidence)
    print_fn(summary(report))
    return 0
