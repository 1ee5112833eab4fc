"""``sweep baseline``: the CI gate (logic in sweep.decide.baseline).

    sweep baseline check  [--tolerance 0.05] [--metrics recall_at_5,mrr,evidence_recall_at_5]
                          [--baseline PATH] [--json] [--rerun] [overrides...]
    sweep baseline update [--allow-regression] [--metrics ...] [--baseline PATH]
                          [--from-export experiments/winners/NAME.yaml] [overrides...]

The gate's run and check are sweep.application.gate; this module parses and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from sweep.application.gate import check_baseline, measure_baseline
from sweep.common.errors import SweepError
from sweep.common.files import atomic_write
from sweep.decide.baseline import (
    BASELINE_PATH,
    DEFAULT_TOLERANCE,
    GATED,
    export_override,
    lowered,
    measured,
    read_baseline,
)


def _metrics_arg(text: str | None, default: Sequence[str]) -> list[str]:
    if not text:
        return list(default)
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise SweepError("--metrics needs at least one metric name")
    return names


def _check(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep baseline check",
                                     description="Fail when a gated metric drops below the "
                                     "baseline by more than the tolerance.")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help=f"allowed absolute drop (default {DEFAULT_TOLERANCE})")
    parser.add_argument("--metrics", help="comma-separated (default: the baseline's)")
    parser.add_argument("--baseline", type=Path, default=BASELINE_PATH)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rerun", action="store_true",
                        help="run the configuration even when the memo of a run with the same "
                        "inputs is in the cache")
    parser.add_argument("overrides", nargs="*", help="config overrides on top of the baseline's")
    args = parser.parse_intermixed_args(argv)
    base = read_baseline(args.baseline)
    metrics = _metrics_arg(args.metrics, list(base["metrics"]))
    overrides = [*base.get("overrides", []), *args.overrides]
    c = check_baseline(base, overrides, metrics, args.tolerance, rerun=args.rerun)
    if args.json:
        print(json.dumps(c.as_json(), indent=2))
        return 1 if c.failed else 0
    if c.reused:
        print(f"note: {c.reused}: the corpus, golden set, models, configuration and code are "
              "unchanged (--rerun runs it again)")
    if c.warning:
        print(f"warning: {c.warning}", file=sys.stderr)
    if c.diffs:
        print("configuration differs from the baseline's: " + ", ".join(c.diffs))
    if c.run["fingerprints"].get("golden") != (base.get("fingerprints") or {}).get("golden"):
        print("note: the golden set changed since the baseline was made (update it once the "
              "change is reviewed)")
    print(f"checked: {measured(overrides)}")
    print(f"{'metric':<24} {'got':>8} {'baseline':>9} {'tolerance':>10}  result")
    for f in c.findings:
        print(f"{f.metric:<24} {f.got:>8.4f} {f.baseline:>9.4f} {f.tolerance:>10.4f}  "
              + ("ok" if f.ok else f"FAIL (down {f.drop:.4f})"))
    if c.lost:
        print(f"{len(c.lost)} questions found in the top {c.k} by the baseline and not now: "
              + ", ".join(c.lost))
    if c.gained:
        print(f"{len(c.gained)} questions found now and not by the baseline: "
              + ", ".join(c.gained))
    if c.failed:
        print(f"FAILED: {', '.join(f.metric for f in c.failed)} fell more than "
              f"{args.tolerance:g} below the baseline ({args.baseline})", file=sys.stderr)
        return 1
    print(f"OK: no gated metric fell more than {args.tolerance:g} below the baseline "
          f"({c.run['n_scored']} scored questions)")
    return 0


def _update(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep baseline update",
                                     description="Recompute the baseline (a ratchet: it will "
                                     "not lower a metric without --allow-regression).")
    parser.add_argument("--allow-regression", action="store_true",
                        help="accept lower numbers than the current baseline")
    parser.add_argument("--metrics", help=f"comma-separated (default: {','.join(GATED)} or "
                        "the current baseline's)")
    parser.add_argument("--baseline", type=Path, default=BASELINE_PATH)
    parser.add_argument("--from-export", type=Path, metavar="FILE",
                        help="gate the winner `sweep export` wrote (experiments/winners/"
                        "NAME.yaml): the same as the override experiment=winners/NAME")
    parser.add_argument("overrides", nargs="*",
                        help="config overrides (default: the project's default configuration)")
    args = parser.parse_intermixed_args(argv)
    old = read_baseline(args.baseline) if args.baseline.exists() else None
    metrics = _metrics_arg(args.metrics, list(old["metrics"]) if old else GATED)
    # Here, not at the top: `check` answered from its memo imports no pipeline module.
    from sweep.config.naming import config_name
    from sweep.decide.export import WINNERS_DIR

    overrides = list(args.overrides)
    if args.from_export is not None:
        overrides.insert(0, export_override(args.from_export, WINNERS_DIR.parent))
    print(f"measuring: {measured(overrides)}", flush=True)
    run, doc = measure_baseline(overrides, metrics)
    if old is not None:
        down = lowered(old["metrics"], doc["metrics"], metrics)
        for m, before, after in down:
            print(f"{m}: {before:.4f} -> {after:.4f}"
                  + ("  (allowed by --allow-regression)" if args.allow_regression else ""))
        if down and not args.allow_regression:
            names = ", ".join(m for m, _, _ in down)
            print(f"error: refusing to lower {names} in {args.baseline} "
                  "(pass --allow-regression to accept it)", file=sys.stderr)
            return 1
    args.baseline.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(Path(args.baseline), json.dumps(doc, indent=2) + "\n")
    for m in metrics:
        before = f"{float(old['metrics'][m]):.4f} -> " if old and m in old["metrics"] else ""
        print(f"{m:<24} {before}{doc['metrics'][m]:.4f}")
    print(f"wrote {args.baseline} ({doc['n_scored']} scored of {doc['n_questions']} questions) "
          f"for {config_name(run['config'])} (config_hash {run['config_hash']}; "
          f"{measured(overrides)})")
    return 0


def cmd_baseline(argv: Sequence[str]) -> int:
    if not argv or argv[0] not in ("check", "update"):
        print("usage: sweep baseline check [--tolerance T] [--metrics A,B] [overrides...]\n"
              "       sweep baseline update [--allow-regression] [--metrics A,B] "
              "[--from-export FILE] [overrides...]", file=sys.stderr)
        return 2
    return _check(argv[1:]) if argv[0] == "check" else _update(argv[1:])
