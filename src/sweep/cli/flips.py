"""``sweep flips``: the questions one configuration gets right and the other wrong.

    sweep flips RUN_A RUN_B [--metric recall_at_5] [--json] [--tracking-uri URI]

RUN_A / RUN_B: MLflow run ids, job folders or per_question.csv files.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from sweep.decide.export import flips
from sweep.decide.runs import DEFAULT_METRIC, default_uri
from sweep.outputs.report import format_value


def cmd_flips(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep flips",
        description="Questions one configuration gets right and the other wrong.")
    parser.add_argument("run_a", help="MLflow run id (or a job folder / per_question.csv)")
    parser.add_argument("run_b", help="MLflow run id (or a job folder / per_question.csv)")
    parser.add_argument("--metric", default=DEFAULT_METRIC)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--tracking-uri", default=None)
    args = parser.parse_args(argv)
    f = flips(args.tracking_uri or default_uri(), args.run_a, args.run_b, args.metric)
    if args.json:
        print(json.dumps({"a": f.name_a, "b": f.name_b, "metric": f.metric,
                          "n_paired": f.n_paired, "flips": f.rows}, indent=2, default=str))
        return 0
    binary = all(r["a"] in (0.0, 1.0) and r["b"] in (0.0, 1.0) for r in f.rows)
    print(f"A = {f.name_a}\nB = {f.name_b}\n{f.metric}: {len(f.rows)} of {f.n_paired} "
          "questions scored in both differ")
    for side, other in (("a", "b"), ("b", "a")):
        chosen = [r for r in f.rows if r["better"] == side]
        what = (f"{side.upper()} right, {other.upper()} wrong" if binary
                else f"{side.upper()} better than {other.upper()}")
        print(f"\n{what} ({len(chosen)}):")
        for r in chosen:
            print(f"  {r['qid']:<10} {f.metric} A={format_value(r['a'])} "
                  f"B={format_value(r['b'])}  first_relevant_rank "
                  f"A={format_value(r['rank_a'])} B={format_value(r['rank_b'])}  "
                  f"{str(r['question'])[:70]}")
    return 0
