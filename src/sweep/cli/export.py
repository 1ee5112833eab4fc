"""``sweep export``: the winner of a sweep as a Hydra experiment file
(``experiment=winners/NAME``).

    sweep export [--metric M] [--prefer best|cheaper] [--margin M] [--name NAME]
                 [--out-dir DIR] [--experiment NAME] [--sweep latest|PARENT_RUN_ID]
                 [--tracking-uri URI] [--correction holm|bh|none]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sweep.cli.args import correction_arg, margin_arg, selection_args
from sweep.common.errors import SweepError
from sweep.config.naming import config_name
from sweep.decide.export import WINNERS_DIR, export_winner
from sweep.decide.runs import default_uri, row_name
from sweep.decide.winner import offer_lines
from sweep.outputs.report import format_value


def gate_command(path: Path) -> str:
    """The command that makes `sweep baseline` gate the file just written."""
    experiments = WINNERS_DIR.parent.resolve()
    try:
        path.resolve().relative_to(experiments)
    except ValueError:
        return (f"copy it to {WINNERS_DIR}/, then sweep baseline update --from-export "
                f"{WINNERS_DIR / path.name}")
    shown = os.path.relpath(path.resolve())
    return f"sweep baseline update --from-export {shown}"


def cmd_export(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep export",
        description="Write the sweep's winner as a Hydra experiment (experiments/winners/): "
        "the best configuration on the metric, the top row of `sweep compare`.")
    selection_args(parser)
    parser.add_argument("--metric", help="choose the winner on this metric (default: the "
                        "sweep's headline, as `sweep compare`)")
    parser.add_argument("--prefer", choices=("best", "cheaper"), default="best",
                        help="best (default): the top row; cheaper: the cheaper configuration "
                        "offered beside it, only when shown within --margin of the best "
                        "(else the best is kept, and the command says why)")
    margin_arg(parser)
    parser.add_argument("--top", action="store_true",
                        help="the top row of `sweep compare` (the default; kept for scripts)")
    parser.add_argument("--name", help="file name (default: from the winning config)")
    parser.add_argument("--out-dir", default=None,
                        help=f"folder to write NAME.yaml into (default: {WINNERS_DIR})")
    correction_arg(parser)
    args = parser.parse_args(argv)
    if args.top and args.prefer != "best":
        raise SweepError("--top takes the top row; it cannot go with --prefer cheaper")
    uri = args.tracking_uri or default_uri()
    out_dir = Path(args.out_dir) if args.out_dir else WINNERS_DIR
    e = export_winner(uri, args.experiment, args.sweep, args.metric, args.name, out_dir,
                      prefer=args.prefer, margin=args.margin, correction=args.correction)
    t, winner = e.table, e.winner
    if t.note:
        print(f"note: {t.note}", file=sys.stderr)
    best = t.rows[0]
    print(f"winner: {config_name(e.config, t.swept)} (run {winner['run_id']}, "
          f"{t.metric}={format_value(winner.get(t.metric))}, "
          f"{t.cost}={format_value(winner.get(t.cost))}, "
          f"{t.latency}={format_value(winner.get(t.latency))})")
    if winner is not best:
        print(f"  (the best {t.metric}: run {best['run_id']}, "
              f"{format_value(best.get(t.metric))})")
    print(f"decided by: {e.rule}")
    for line in [*t.lost_lines,
                 *offer_lines([row_name(r, t.swept) for r in t.rows], t.metric, e.offer)]:
        print(line)
    print(f"{'overwrote' if e.existed else 'wrote'} {e.path}")
    print(f"re-run: python -m sweep experiment=winners/{e.name}")
    print(f"gate it: {gate_command(e.path)}")
    return 0
