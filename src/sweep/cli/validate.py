"""``sweep validate``: check a golden set against its corpus.

    sweep validate [--strict] [--json] [--all] [--quotes] [--audit [audit options]]
                   [overrides...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence

from sweep.application.corpus import open_corpus_view
from sweep.chunking.reference import load_golden
from sweep.cli.audit import add_audit_options, audit_from_args, write_html
from sweep.config.checks import check_config
from sweep.config.compose import compose
from sweep.config.specs import build_job_spec
from sweep.data.abstentions import abstentions_path, load_abstentions
from sweep.data.drift import corpus_drift
from sweep.data.quotes import LEVELS, parser_keeps
from sweep.evaluation.sources import UNSPECIFIED
from sweep.evaluation.validate import cap_problems, check_golden
from sweep.outputs.audit_report import audit_text
from sweep.outputs.report import json_safe


def quote_levels_by_parser(overrides: Sequence[str], golden: object, docs: Sequence[object]
                           ) -> dict[str, dict[str, list[str]]]:
    """``{"pdf:pypdf": {qid: [level of each quote]}}`` for every parser of every format the
    corpus holds (``"markdown"`` when it holds none): the corpus is loaded once per parser."""
    from sweep.data.parsers import FORMATS, PARSERS

    formats = sorted({FORMATS[ext] for d in docs if d.parser
                      for ext in FORMATS if d.source.lower().endswith(ext)})
    columns = [(f"{fmt}:{name}", f"corpus.{fmt}_parser={name}")
               for fmt in formats for name in PARSERS[fmt]] or [("markdown", None)]
    out: dict[str, dict[str, list[str]]] = {}
    for label, override in columns:
        job = build_job_spec(compose([*overrides, *([override] if override else [])]))
        resolved = open_corpus_view(job).resolve(golden)  # type: ignore[arg-type]
        out[label] = {r.item.qid: list(r.quote_levels) for r in resolved if r.quote_levels}
    return out


def print_quote_levels(levels: dict[str, dict[str, list[str]]]) -> None:
    columns = list(levels)
    qids = list(dict.fromkeys(q for col in levels.values() for q in col))
    width = max([len("qid"), *(len(q) for q in qids)])
    print(f"{'qid':<{width}}  " + "  ".join(f"{c:<16}" for c in columns))
    for qid in qids:
        cells = [",".join(levels[c].get(qid, [])) or "-" for c in columns]
        print(f"{qid:<{width}}  " + "  ".join(f"{cell:<16}" for cell in cells))
    for c in columns:
        flat = [lv for lvs in levels[c].values() for lv in lvs]
        found = len(flat) - flat.count("missing")
        print(f"{c}: {found}/{len(flat)} quotes found (" + ", ".join(
            f"{flat.count(lv)} {lv}" for lv in (*LEVELS, "missing")) + ")")
    # the answer to the parse warnings' "which parser keeps it"
    for line in parser_keeps(levels):
        print(line)


def cmd_validate(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep validate",
                                     description="Check a golden set against its corpus.")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--quotes", action="store_true",
                        help="per quote, the level at which each parser found it (every parser "
                             "of each format the corpus holds)")
    parser.add_argument("--all", action="store_true",
                        help="print every problem (default: the first 5 per item, 200 in all)")
    parser.add_argument("--audit", action="store_true",
                        help="also audit the set (`sweep audit`): synthetic smell, "
                             "near-duplicates, ambiguous evidence, split answers, coverage")
    add_audit_options(parser)
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. golden.path=FILE")
    args = parser.parse_args(argv)

    cfg = compose(args.overrides)
    check_config(cfg)
    job = build_job_spec(cfg)
    view = open_corpus_view(job)
    docs = view.docs
    golden = load_golden(job.golden)
    resolved = view.resolve(golden)
    result = check_golden(golden, resolved, docs)
    failing = result.problems if args.strict else result.errors
    levels = quote_levels_by_parser(args.overrides, golden, docs) if args.quotes else None
    # Warnings, not errors: labels on a corpus that moved may still be right (an edit after
    # every passage moves nothing); `sweep golden rebase` tells which are.
    drift = corpus_drift(golden.path, docs)
    pending = len(golden.pending)
    sources = Counter(item.source or UNSPECIFIED for item in golden.items)
    abstentions, _ = load_abstentions(golden.path)
    # An audit needs a set the sweep would accept: with errors it would audit a part of it.
    audit = audit_from_args(job, args) if args.audit and not result.errors else None
    if audit is not None and args.html:
        write_html(args.html, audit)
    if args.json:
        print(json.dumps({
            "golden": golden.path, "corpus": job.corpus.path, "items": result.n_items,
            "errors": len(result.errors), "warnings": len(result.warnings),
            "ok": not failing,
            "problems": [{"file": p.file, "line": p.line, "field": p.field,
                          "message": p.message, "severity": p.severity}
                         for p in result.problems],
            **({"quote_levels": levels, "parser_keeps": parser_keeps(levels)}
               if levels is not None else {}),
            "corpus_drift": drift.as_dict() if drift else None,
            "pending_review": pending,
            "sources": dict(sources), "abstentions": len(abstentions),
            **({"audit": json_safe(audit)} if audit is not None else {}),
        }, indent=2))
    else:
        shown, notes = cap_problems(result.problems, per_item=0 if args.all else 5)
        for p in shown:
            print(f"{p}" + ("" if p.severity == "error" else "  [warning]"))
        for note in notes:
            print(note)
        if levels is not None:
            print_quote_levels(levels)
        if drift is not None:
            print(f"warning: {drift.message}", file=sys.stderr)
        if pending:
            print(f"warning: {pending} items await review after a rebase and are not scored "
                  "(sweep label --review FILE)", file=sys.stderr)
        if audit is not None:
            sys.stdout.write(audit_text(audit, 0 if args.all else 20))
        elif args.audit:
            print("audit: not run (fix the errors first)", file=sys.stderr)
        verdict = "FAILED" if failing else "OK"
        print(f"{verdict}: {golden.path}: {result.n_items} items checked against "
              f"{len(docs)} documents; {len(result.errors)} errors, "
              f"{len(result.warnings)} warnings", file=sys.stderr)
        if set(sources) != {UNSPECIFIED} or abstentions:
            # what a sweep will score apart (docs/guide/labelling-queue.md)
            print("sources: " + ", ".join(f"{k} {n}" for k, n in sources.most_common())
                  + (f"; {len(abstentions)} abstentions in {abstentions_path(golden.path)}"
                     if abstentions else ""), file=sys.stderr)
    return 1 if failing else 0
