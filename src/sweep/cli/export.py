"""``sweep export``: the winner of a sweep as a Hydra experiment file
(``experiment=winners/NAME``).

    sweep export [--metric M] [--top] [--name NAME] [--out-dir DIR] [--experiment NAME]
                 [--sweep latest|PARENT_RUN_ID] [--tracking-uri URI] [--correction holm|bh|none]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from sweep.cli.args import correction_arg, selection_args
from sweep.config.naming import config_name
from sweep.decide.export import WINNERS_DIR, export_winner
from sweep.decide.runs import default_uri
from sweep.outputs.report import format_value


def cmd_export(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep export",
        description="Write the sweep's winner as a Hydra experiment (experiments/winners/).")
    selection_args(parser)
    parser.add_argument("--metric", help="choose the winner on this metric (default: the "
                        "sweep's headline, as `sweep compare`)")
    parser.add_argument("--top", action="store_true",
                        help="take the top row of `sweep compare` as it is (default: the "
                        "cheapest of the configurations not distinguishable from it)")
    parser.add_argument("--name", help="file name (default: from the winning config)")
    parser.add_argument("--out-dir", default=None,
                        help=f"folder to write NAME.yaml into (default: {WINNERS_DIR})")
    correction_arg(parser)
    args = parser.parse_args(argv)
    uri = args.tracking_uri or default_uri()
    out_dir = Path(args.out_dir) if args.out_dir else WINNERS_DIR
    e = export_winner(uri, args.experiment, args.sweep, args.metric, args.name, out_dir,
                      top=args.top, correction=args.correction)
    t, winner = e.table, e.winner
    best = t.rows[0]
    print(f"winner: {config_name(e.config, t.swept)} (run {winner['run_id']}, "
          f"{t.metric}={format_value(winner.get(t.metric))}, "
          f"{t.cost}={format_value(winner.get(t.cost))}, "
          f"{t.latency}={format_value(winner.get(t.latency))})")
    if winner is not best:
        print(f"  (top {t.metric}: run {best['run_id']}, {format_value(best.get(t.metric))})")
    print(f"decided by: {e.rule}")
    print(f"{'overwrote' if e.existed else 'wrote'} {e.path}")
    print(f"re-run: python -m sweep experiment=winners/{e.name}")
    return 0
