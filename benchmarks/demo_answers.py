"""Both halves on the bundled demo (``make demo-answers``): the retrieval sweep of
experiments/chunking_grid.yaml, then its best 3 configurations answered live and oracle by the
local model of ``make llm-server`` (``sweep rerun --top 3 generation=local``), then the closing
statement: answer accuracy live/oracle, the retrieval tax and the diagnosis per configuration,
whether the retrieval winner also wins on answers (paired intervals), and the rank agreement.

    python benchmarks/demo_answers.py [--out DIR] [--questions 20] [--top 3]
        [--base-url http://127.0.0.1:8088/v1] [--grid OVERRIDE ...]

--grid replaces axes of the grid for a quicker look (e.g. --grid chunk.size=128
chunk.header=none: the five boundaries at one size).

Everything it writes (MLflow store, job folders) goes to --out; the embedding cache is the
usual cache.dir. Re-running it answers from the answer cache (cache.dir/answers.sqlite).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sweep.decide.answers import AnswerRun, closing_statement, summary_rows
from sweep.generation.run import DIAGNOSES


def _run(cmd: list[str], cwd: Path) -> float:
    print(">> " + " ".join(cmd[2:]), flush=True)
    t = time.monotonic()
    rc = subprocess.run(cmd, cwd=cwd, check=False).returncode
    if rc != 0:
        sys.exit(f"error: `{' '.join(cmd[2:])}` exited with {rc}")
    return time.monotonic() - t


def _name(config: dict) -> str:
    c = config["chunk"]
    return f"{c['boundary']}/{c['size']}/header={c['header']}"


def _answer_run(job: Path) -> AnswerRun:
    rep = json.loads((job / "report.json").read_text())
    live, oracle = {}, {}
    with (job / "per_question.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            if row.get("answer_accuracy_live"):  # graded on both sides
                live[row["qid"]] = float(row["answer_accuracy_live"])
                oracle[row["qid"]] = float(row["answer_accuracy_oracle"])
    m = rep["metrics"]
    return AnswerRun(_name(rep["config"]), float(rep["headline"]["value"]), live, oracle,
                     {d: int(m.get(f"n_{d}", 0)) for d in DIAGNOSES})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/chunk-sweep-demo-answers")
    ap.add_argument("--questions", type=int, default=20, help="generation.limit")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    ap.add_argument("--grid", nargs="*", default=[],
                    help="overrides of the retrieval sweep's axes (default: the whole grid)")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    health = args.base_url.rstrip("/").removesuffix("/v1") + "/health"
    try:
        urllib.request.urlopen(health, timeout=3).close()
    except OSError as exc:
        sys.exit(f"error: no model server at {health} ({exc}): run `make llm-server`")
    uri = f"sqlite:///{out}/mlflow.db"
    py = [sys.executable, "-m"]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    t_retrieval = _run([*py, "sweep", "-m", "experiment=chunking_grid", *args.grid,
                        f"tracking.uri={uri}", f"hydra.sweep.dir={out}/retrieval-{stamp}"], out)
    answers = out / f"answers-{stamp}"
    t_answers = _run([*py, "sweep.cli", "rerun", "--top", str(args.top), "--tracking-uri", uri,
                      "generation=local", f"generation.base_url={args.base_url}",
                      f"generation.limit={args.questions}", f"hydra.sweep.dir={answers}"], out)
    runs = [_answer_run(job) for job in sorted(answers.glob("[0-9]*"))]
    if not runs:
        sys.exit(f"error: no configuration answered in {answers}")

    print(f"\nanswers of the best {len(runs)} configurations by retrieval, first "
          f"{args.questions} scorable questions each, local model ({args.base_url}):")
    head = (f"{'configuration':<32} {'retrieval':>9} {'n':>3} {'live':>6} {'oracle':>6} "
            f"{'tax':>6}  diagnosis")
    print(head)
    for r in summary_rows(runs):
        diag = " ".join(f"{d}={r[f'n_{d}']}" for d in DIAGNOSES)
        print(f"{r['configuration']:<32} {r['retrieval']:>9.3f} {r['n']:>3} "
              f"{_pct(r['live']):>6} {_pct(r['oracle']):>6} {_pts(r['tax']):>6}  {diag}")
    print()
    for line in closing_statement(runs):
        print(line)
    print(f"\ntimes: retrieval sweep {t_retrieval:.0f} s, answers (rerun of the top "
          f"{len(runs)}) {t_answers:.0f} s; store {uri}")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _pts(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f}pt"


if __name__ == "__main__":
    raise SystemExit(main())
