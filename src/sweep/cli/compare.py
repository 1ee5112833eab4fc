"""``sweep compare``: a sweep's configurations from MLflow, best first, each tested against
the best (paired bootstrap, corrected for the table's many comparisons), the difference the
set could detect, what each axis did (``--axes``), with plots. ``--sweep`` twice or more joins
sweeps scored on the same golden set and corpus into one table: what differs between them (the
embedding model of one-model sweeps) is an axis, and ``--axes`` says whether each axis's best
holds under every model.

    sweep compare [--experiment NAME] [--sweep latest|PARENT_RUN_ID ...] [--metric M] [--json]
                  [--plot DIR] [--no-plot] [--tracking-uri URI] [--correction holm|bh|none]
                  [--detect D] [--margin M] [--axes]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from sweep.cli.args import correction_arg, detect_arg, margin_arg, selection_args
from sweep.common.errors import SweepError
from sweep.decide.answers import AnswerRun, answer_lines, answer_run, summary_rows
from sweep.decide.decision import decide_table, plot_data
from sweep.decide.present import plot_table, print_table, sweep_folder, table_json
from sweep.decide.runs import SweepTable, default_uri, load_table, row_name
from sweep.decide.winner import offer_lines
from sweep.outputs import tracking
from sweep.outputs.report import plot_axes


def cmd_compare(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep compare",
                                     description="Compare the configurations of a sweep.")
    selection_args(parser, many=True)
    parser.add_argument("--metric", help="rank by this metric (default: the sweep's headline)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--plot", metavar="DIR", help="folder for the plots "
                        "(default: the sweep folder)")
    parser.add_argument("--no-plot", action="store_true", help="skip the plots")
    correction_arg(parser)
    detect_arg(parser)
    margin_arg(parser)
    parser.add_argument("--axes", action="store_true", help="what each swept axis did "
                        "(averaged over the others) and the Pareto fronts; plot axes.png")
    args = parser.parse_args(argv)
    uri = args.tracking_uri or default_uri()
    sweeps = args.sweep or ["latest"]
    with tempfile.TemporaryDirectory(prefix="sweep-compare-") as tmp:
        t = load_table(uri, args.experiment, sweeps[0] if len(sweeps) == 1 else sweeps,
                       args.metric, Path(tmp),
                       correction=args.correction)
    if t.note:
        print(f"note: {t.note}", file=sys.stderr)
    decision = decide_table(t, args.detect, args.margin)
    answers = table_answers(t)
    offer = decision["offer"]
    plots: list[Path] = []
    if not args.no_plot:
        # Joined sweeps: the plots are no one sweep's, so not in a sweep's folder or run.
        folder = (Path(args.plot) if args.plot
                  else Path.cwd() if t.joined else sweep_folder(t.parent))
        plots = plot_table(t, folder)
        if args.axes:
            drawn = plot_axes(plot_data(decision, t.rows, t.metric), folder / "axes.png")
            plots += [drawn] if drawn is not None else []
        if not t.joined:
            try:
                tracking.log_artifacts_to(uri, t.parent["run_id"], plots)
            except SweepError as exc:
                print(f"warning: plots not logged to MLflow: {exc}", file=sys.stderr)
    if args.json:
        data = table_json(t)
        data["power"] = decision["power"]
        if data["power"] is not None:
            data["power"]["pair_run_ids"] = [t.rows[i]["run_id"] for i in data["power"]["pair"]]
        if args.axes:
            data["axes"] = decision["axes"]
            data["agreement"] = decision["agreement"]  # [] unless the sweep varied the model
            data["fronts"] = [{**f, "points": [{**p, "run_id": t.rows[p["index"]]["run_id"]}
                                               for p in f["points"]]}
                              for f in decision["fronts"]]
        data["orphans_everywhere"] = t.orphans
        data["offer"] = (None if offer is None
                         else {**dataclasses.asdict(offer), "run_id": t.rows[offer.index]["run_id"]})
        data["note"] = t.note
        data["answers"] = ({"rows": summary_rows(answers), "lines": answer_lines(answers)}
                           if answers else None)
        data["plots"] = [str(p) for p in plots]
        print(json.dumps(data, indent=2, default=str))
    else:
        print_table(t)
        if decision["inversion"]:  # a worse row above a tied one: why
            print(decision["inversion"])
        if decision["power"] is not None:
            print(decision["power"]["line"])
        for line in [*t.lost_lines,
                     *offer_lines([row_name(r, t.swept) for r in t.rows], t.metric, offer)]:
            print(line)
        if args.axes:
            for line in decision["axis_lines"]:
                print(line)
        for line in answer_lines(answers):
            print(line)
        for p in plots:
            print(f"plot: {p}")
    return 0


def table_answers(t: SweepTable) -> list[AnswerRun]:
    """The configurations of the table that ran the answer half, best first, from their
    per-question tables (read by `load_table`) and their diagnosis counts."""
    out = []
    for rec in t.rows:
        frame = t.per_question.get(rec["run_id"])
        rows = frame.to_dict("records") if frame is not None else []
        run = answer_run(row_name(rec, t.swept), float(rec.get(t.metric) or 0.0), rows)
        if run is not None:
            out.append(run)
    return out
