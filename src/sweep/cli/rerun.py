"""``sweep rerun``: the top N configurations of a finished sweep, again, as a new sweep
(logic in sweep.decide.rerun).

    sweep rerun --top N [--sweep latest|RUN_ID] [--metric M] [--dry-run] [overrides...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweep.cli.args import selection_args
from sweep.common.errors import SweepError
from sweep.decide.export import default_sections
from sweep.decide.rerun import (
    agreement,
    axes_key,
    experiment_files,
    input_change,
    rerun_command,
    run_configs,
)
from sweep.decide.runs import default_uri, load_table
from sweep.evaluation.catalog import lower_is_better
from sweep.outputs.quant import pair
from sweep.outputs.report import format_value


def cmd_rerun(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep rerun",
        description="Re-run the top N configurations of a finished sweep with overrides, as "
        "a new sweep (e.g. generation=extractive on the best 3, or embedding=minilm after a "
        "static-model sweep).")
    selection_args(parser)
    parser.add_argument("--top", type=int, required=True, help="how many configurations")
    parser.add_argument("--metric", help="rank by this metric (default: the sweep's headline)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command and the experiment files, run nothing")
    parser.add_argument("overrides", nargs="*",
                        help="overrides for every re-run, e.g. generation=extractive")
    args = parser.parse_args(argv)
    if args.top < 1:
        raise SweepError(f"--top {args.top}: must be >= 1")
    uri = args.tracking_uri or default_uri()
    with tempfile.TemporaryDirectory(prefix="sweep-rerun-") as tmp_name:
        tmp = Path(tmp_name)
        t = load_table(uri, args.experiment, args.sweep, args.metric, tmp / "table")
        if t.note:
            print(f"note: {t.note}", file=sys.stderr)
        chosen = t.rows[: args.top]
        configs = run_configs(uri, chosen, tmp / "cfg")
        files = experiment_files(configs, args.overrides, default_sections(),
                                 f"sweep rerun of {t.parent['run_id']} by {t.metric}", t.swept)
        cmd = rerun_command(files, tmp / "conf", uri, args.overrides)
        print(f"re-running the top {len(files)} of sweep {t.parent['run_id']} by {t.metric}:")
        for row in chosen:
            print(f"  {row['rank']:>2}. {axes_key(row, t.swept)}  "
                  f"{t.metric}={format_value(row.get(t.metric))}")
        if args.dry_run:
            for name, text in files.items():
                print(f"--- {name}.yaml\n{text}", end="")
            print("command: " + " ".join(cmd))
            return 0
        rc = subprocess.run(cmd, check=False).returncode
        if rc != 0:
            print(f"error: the re-run sweep exited with {rc}", file=sys.stderr)
            return rc
        fine = load_table(uri, t.parent["experiment"], "latest", args.metric, tmp / "fine")
    _report_agreement(t, chosen, fine)
    return 0


def _report_precision_change(chosen: Sequence[Mapping[str, Any]], old: Sequence[str],
                             new: Mapping[str, Mapping[str, Any]], metric: str) -> None:
    """Coarse to fine across embedding.backend/precision (an int8 sweep, its best again at
    fp32): how much the metric moved, the quantisation tax of the configurations re-run."""
    before = {pair(r["params"]) for r in chosen}
    after = {pair(new[k]["params"]) for k in old if k in new}
    moved = [float(new[k][metric]) - float(r[metric]) for r, k in zip(chosen, old, strict=True)
             if k in new and isinstance(new[k].get(metric), int | float)
             and isinstance(r.get(metric), int | float)]
    if not moved or before == after:
        return

    def names(pairs: set[tuple[str, str]]) -> str:
        return ",".join(sorted(f"{b}/{p}" for b, p in pairs))

    print(f"embedding {names(before)} -> {names(after)}: {metric} moved by "
          f"{sum(moved) / len(moved):+.4f} on average over {len(moved)} configurations "
          f"(largest {max(moved, key=abs):+.4f}; positive: the re-run scored higher)")


def _report_agreement(coarse: Any, chosen: Sequence[Mapping[str, Any]], fine: Any) -> None:
    """Old rank vs new rank of the re-run configurations, matched on the old sweep's axes."""
    swept = coarse.swept
    old = [axes_key(r, swept) for r in chosen]
    new = {axes_key(r["params"], swept): r for r in fine.rows}
    values = {k: float(new[k][fine.metric]) for k in old
              if k in new and new[k].get(fine.metric) is not None}
    # A corpus or golden set edited since the first sweep makes the comparison meaningless.
    changed = input_change(chosen, [new[k] for k in old if k in new])
    if changed:
        print(changed, file=sys.stderr)
    print(f"\nranking before -> after ({fine.metric}):")
    for i, k in enumerate(old, start=1):
        r = new.get(k)
        was = format_value(chosen[i - 1].get(fine.metric))
        after = (f"#{r['rank']}  {format_value(r.get(fine.metric))} (was {was})" if r
                 else "missing")
        print(f"  #{i} -> {after}  {k}")
    _report_precision_change(chosen, old, new, fine.metric)
    a = agreement(old, values, not lower_is_better(fine.metric))
    if a["pairs"]:
        print(f"agreement: {a['pairs_agree']:.0%} of {a['pairs']} pairs in the same order; "
              f"the first configuration before is {'also' if a['top1_same'] else 'not'} the "
              "best after")
    print(f"new sweep: {fine.parent['run_id']} (sweep compare --sweep {fine.parent['run_id']})")
