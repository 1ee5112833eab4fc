"""``sweep compare``: a sweep's configurations from MLflow, best first, each tested against
the best (paired bootstrap), with plots.

    sweep compare [--experiment NAME] [--sweep latest|PARENT_RUN_ID] [--metric M] [--json]
                  [--plot DIR] [--no-plot] [--tracking-uri URI]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sweep.cli.args import selection_args
from sweep.common.errors import SweepError
from sweep.decide.table import (
    default_uri,
    load_table,
    plot_table,
    print_table,
    sweep_folder,
    table_json,
)
from sweep.outputs import tracking


def cmd_compare(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep compare",
                                     description="Compare the configurations of a sweep.")
    selection_args(parser)
    parser.add_argument("--metric", help="rank by this metric (default: the sweep's headline)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="DIR", help="folder for the plots "
                        "(default: the sweep folder)")
    parser.add_argument("--no-plot", action="store_true", help="skip the plots")
    args = parser.parse_args(argv)
    uri = args.tracking_uri or default_uri()
    with tempfile.TemporaryDirectory(prefix="sweep-compare-") as tmp:
        t = load_table(uri, args.experiment, args.sweep, args.metric, Path(tmp))
    plots: list[Path] = []
    if not args.no_plot:
        folder = Path(args.plot) if args.plot else sweep_folder(t.parent)
        plots = plot_table(t, folder)
        try:
            tracking.log_artifacts_to(uri, t.parent["run_id"], plots)
        except SweepError as exc:
            print(f"warning: plots not logged to MLflow: {exc}", file=sys.stderr)
    if args.json:
        data = table_json(t)
        data["plots"] = [str(p) for p in plots]
        print(json.dumps(data, indent=2, default=str))
    else:
        print_table(t)
        for p in plots:
            print(f"plot: {p}")
    return 0
