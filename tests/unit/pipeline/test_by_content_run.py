"""A real run on the demo set with eval.by_content=true: every by_content figure equals the
mean computed here from per_question.csv filtered to that kind (issue 47), and the switch
changes no other number."""

from __future__ import annotations

import csv
import math
from pathlib import Path

from helpers import job_of
from sweep.application import job as pipeline
from sweep.outputs.report import write_per_question
from sweep.pipeline import memo

BASE = ["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=0"]


def test_by_content_equals_the_filtered_per_question_csv(tmp_path: Path) -> None:
    memo.clear_memo()
    try:
        on = pipeline.run_job(job_of([*BASE, f"cache.dir={tmp_path / 'c'}",
                                      "eval.by_content=true"]), progress=False)
        off = pipeline.run_job(job_of([*BASE, f"cache.dir={tmp_path / 'c'}"]), progress=False)
    finally:
        memo.clear_memo()
    metrics = on.report["metrics"]
    split = {k: v for k, v in metrics.items() if k.startswith("by_content/")}
    assert {k: v for k, v in metrics.items() if k not in split} == off.report["metrics"]
    assert on.report["config_hash"] == off.report["config_hash"]
    assert not any(k.startswith("by_content/") for k in off.report["metrics"])

    path = write_per_question(tmp_path, on.rows)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    kinds = {k.split("/")[1] for k in split}
    assert len(kinds) >= 2, kinds  # the demo's evidence is not all of one kind
    checked = 0
    for kind in kinds:
        mine = [r for r in rows if r["content_kind"] == kind]
        assert metrics[f"by_content/{kind}/n"] == sum(r["status"] == "scored" for r in mine)
        for name in ("recall_at_5", "mrr", "evidence_recall_at_budget"):
            values = [float(r[name]) for r in mine if r[name] != ""]
            if values:
                assert math.isclose(metrics[f"by_content/{kind}/{name}"],
                                    math.fsum(values) / len(values), abs_tol=1e-12)
                checked += 1
    assert checked >= 2 * len(kinds)
    assert on.report["by_content"].keys() == kinds
    assert [v["content_kind"] for v in on.views] == [r["content_kind"] for r in on.rows]
