"""``sweep validate``: check a golden set against its corpus.

    sweep validate [--strict] [--json] [--all] [overrides...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from sweep.config.checks import check_config
from sweep.config.compose import compose
from sweep.data.golden import load_golden
from sweep.data.validate import cap_problems, check_golden
from sweep.pipeline.run import load_corpus_cached, resolve_golden


def cmd_validate(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep validate",
                                     description="Check a golden set against its corpus.")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--all", action="store_true",
                        help="print every problem (default: the first 5 per item, 200 in all)")
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. golden.path=FILE")
    args = parser.parse_args(argv)

    cfg = compose(args.overrides)
    check_config(cfg)
    docs, fingerprint = load_corpus_cached(cfg)
    golden = load_golden(cfg.golden.path)
    resolved = resolve_golden(golden, docs, fingerprint)
    result = check_golden(golden, resolved, docs)
    failing = result.problems if args.strict else result.errors
    if args.json:
        print(json.dumps({
            "golden": golden.path, "corpus": cfg.corpus.path, "items": result.n_items,
            "errors": len(result.errors), "warnings": len(result.warnings),
            "ok": not failing,
            "problems": [{"file": p.file, "line": p.line, "field": p.field,
                          "message": p.message, "severity": p.severity}
                         for p in result.problems],
        }, indent=2))
    else:
        shown, notes = cap_problems(result.problems, per_item=0 if args.all else 5)
        for p in shown:
            print(f"{p}" + ("" if p.severity == "error" else "  [warning]"))
        for note in notes:
            print(note)
        verdict = "FAILED" if failing else "OK"
        print(f"{verdict}: {golden.path}: {result.n_items} items checked against "
              f"{len(docs)} documents; {len(result.errors)} errors, "
              f"{len(result.warnings)} warnings", file=sys.stderr)
    return 1 if failing else 0
