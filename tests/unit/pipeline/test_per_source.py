"""A real run on the demo set with mixed sources: every per-source figure equals the one
computed here from per_question.csv filtered to that source (issue 27)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest

from helpers import DEMO, job_of
from sweep.application import job as pipeline
from sweep.evaluation.smell import synthetic_smell
from sweep.outputs.report import write_per_question
from sweep.pipeline import memo

SOURCES = ["log", "synthetic", None]  # None: no source field (unspecified)


def test_per_source_metrics_equal_the_filtered_per_question_csv(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    lines = []
    for i, raw in enumerate(DEMO.joinpath("golden.jsonl").read_text().splitlines()):
        obj = json.loads(raw)
        source = SOURCES[i % 3]
        if source:
            obj.update(source=source, source_ref=f"log.csv:{i + 2}")
        lines.append(json.dumps(obj))
    golden.write_text("\n".join(lines) + "\n")
    shutil.copy(DEMO / "golden.reference.yaml", tmp_path / "golden.reference.yaml")
    memo.clear_memo()
    result = pipeline.run_job(job_of([
        f"golden.path={golden}", "retrieval=bm25", "retrieval.diagnose=false",
        "eval.latency_sample=0", f"cache.dir={tmp_path / 'cache'}"]), progress=False)
    memo.clear_memo()
    metrics, sources = result.report["metrics"], result.report["sources"]
    assert list(sources) == ["log", "synthetic", "unspecified"]

    path = write_per_question(tmp_path, result.rows)
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 60
    names = [k for k in metrics if k.startswith("by_source/log/")
             and k.rsplit("/", 1)[1] not in ("n", "share", "smell")]
    assert "by_source/log/recall_at_5" in names and len(names) >= 10
    for source in sources:
        mine = [r for r in rows if r["source"] == source]
        assert metrics[f"by_source/{source}/n"] == len(mine) == 20
        assert metrics[f"by_source/{source}/share"] == pytest.approx(1 / 3)
        for name in (n.rsplit("/", 1)[1] for n in names):
            values = [float(r[name]) for r in mine if r[name] != ""]
            expected = math.fsum(values) / len(values)
            assert metrics[f"by_source/{source}/{name}"] == pytest.approx(expected, abs=1e-12)
        smells = [float(r["smell"]) for r in mine if r["smell"] != ""]
        assert metrics[f"by_source/{source}/smell"] == pytest.approx(sum(smells) / len(smells))
    # the whole set's mean is the per-source means weighted by their scored counts
    whole = [float(r["recall_at_5"]) for r in rows if r["recall_at_5"] != ""]
    assert metrics["recall_at_5"] == pytest.approx(sum(whole) / len(whole))

    # the smell of one row, recomputed from the question and the evidence quote by hand
    first = json.loads(lines[0])
    assert float(rows[0]["smell"]) == pytest.approx(synthetic_smell(
        first["question"], [ev["quote"] for ev in first["evidence"]]))
