"""abstentions.jsonl beside the golden file, scored by a real run (BM25 on the demo set)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import DEMO, job_of
from sweep.application import job as pipeline
from sweep.common.errors import SweepError
from sweep.data.golden import load_golden
from sweep.evaluation.abstention import separation
from sweep.pipeline import memo

OFF_TOPIC = ["what is the capital of mongolia", "who won the 1998 world cup",
             "best recipe for sourdough bread"]


def _run(folder: Path):
    memo.clear_memo()
    try:
        return pipeline.run_job(job_of([
            f"golden.path={folder / 'golden.jsonl'}", "retrieval=bm25", "retrieval.diagnose=false",
            "eval.latency_sample=0", f"cache.dir={folder / 'cache'}"]), progress=False)
    finally:
        memo.clear_memo()


def test_abstentions_are_searched_and_compared(tmp_path: Path) -> None:
    shutil.copy(DEMO / "golden.jsonl", tmp_path / "golden.jsonl")
    shutil.copy(DEMO / "golden.reference.yaml", tmp_path / "golden.reference.yaml")
    before = load_golden(tmp_path / "golden.jsonl").fingerprint
    plain = _run(tmp_path)
    assert "abstentions" not in plain.report and "abstention_n" not in plain.report["metrics"]

    (tmp_path / "abstentions.jsonl").write_text("".join(
        json.dumps({"qid": f"abstain-{i}", "question": q, "source": "log",
                    "source_ref": f"log.csv:{i}", "cid": f"c-{i:012d}", "at": None}) + "\n"
        for i, q in enumerate(OFF_TOPIC)))
    assert load_golden(tmp_path / "golden.jsonl").fingerprint != before  # part of its identity
    result = _run(tmp_path)
    metrics, report = result.report["metrics"], result.report["abstentions"]
    assert [q["qid"] for q in report["questions"]] == ["abstain-0", "abstain-1", "abstain-2"]
    # the golden questions are scored exactly as without the abstentions
    assert result.rows == plain.rows
    answerable = [rk.scores[0] for rk, row in zip(result.rankings, result.rows, strict=True)
                  if row["status"] == "scored"]
    abstained = [q["top1_score"] for q in report["questions"]]
    assert metrics["abstention_n"] == 3
    expected = separation(answerable, abstained)
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value)
    # off-topic questions share few words with a smart-home help centre: BM25 is unsure
    assert metrics["abstention_top1_mean"] < metrics["answerable_top1_mean"]
    assert 0.5 < metrics["abstention_auroc"] <= 1.0


def test_a_bad_abstentions_line_stops_the_run_in_one_line(tmp_path: Path) -> None:
    shutil.copy(DEMO / "golden.jsonl", tmp_path / "golden.jsonl")
    (tmp_path / "abstentions.jsonl").write_text('{"qid": "a1"}\n')
    with pytest.raises(SweepError, match=r"abstentions\.jsonl:1: question: missing"):
        load_golden(tmp_path / "golden.jsonl")
