"""eval.by_content in `sweep compare`, the misses page and the end-of-sweep summary (issue 47):
a column per kind of content for the ranking metric (a hand-built MLflow store, hand-made
numbers), and the kinds on the misses page."""

from __future__ import annotations

import json

import pytest
from test_table import _job

from sweep.decide import present, runs
from sweep.evaluation.content import summary_line
from sweep.outputs import tracking
from sweep.outputs.misses_html import render_page


def test_compare_adds_a_column_per_kind(tmp_path, capsys) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "chunk-sweep-demo", run_name="kinds",
                                      params={"overrides": "chunk.size=128,256"},
                                      tags={"sweep_dir": str(tmp_path / "multirun")})
    ids = {}
    # 30 prose questions, 10 table ones: a finds 18 + 2, b finds 12 + 7
    for name, size, prose, table in (("a", 256, 18, 2), ("b", 128, 12, 7)):
        scores = [1] * prose + [0] * (30 - prose) + [1] * table + [0] * (10 - table)
        folder = tmp_path / "multirun" / name
        report = _job(folder, size, "heading", scores, 500.0)
        report["metrics"].update({
            "by_content/prose/recall_at_5": prose / 30, "by_content/prose/n": 30.0,
            "by_content/table/recall_at_5": table / 10, "by_content/table/n": 10.0,
            "by_content/table/mrr": 0.1})
        (folder / "report.json").write_text(json.dumps(report))
        ids[name] = tracking.log_job(
            uri, "chunk-sweep-demo", run_name=name, plain_config=report["config"],
            report=report, artifacts=[folder / f for f in
                                      ("report.json", "per_question.csv", "config.yaml")],
            parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    t = runs.load_table(uri, None, "latest", None, tmp_path, n=500)
    assert [r["run_id"] for r in t.rows] == [ids["a"], ids["b"]]  # 20/40 before 19/40
    assert [c for c in t.shown if c.startswith("by_content/")] == [
        "by_content/prose/recall_at_5", "by_content/table/recall_at_5"]  # the ranking metric
    assert t.rows[1]["by_content/table/recall_at_5"] == pytest.approx(0.7)  # b wins tables
    present.print_table(t)
    assert "by_content/table/recall_at_5" in capsys.readouterr().out


def test_summary_line_names_each_kind_with_its_count() -> None:
    split = {"prose": {"n": 31, "n_scored": 30, "metrics": {"recall_at_5": 0.6}},
             "code": {"n": 4, "n_scored": 4, "metrics": {}}}
    assert summary_line(split, "recall_at_5") == (
        "prose n=30 recall_at_5=0.600 · code n=4 recall_at_5=-")
    assert summary_line({}, "recall_at_5") is None


def _view(qid: str, kind: str | None, cause: str) -> dict:
    v = {"qid": qid, "question": f"question {qid}", "status": "scored", "cause": cause,
         "detail": "", "first_relevant_rank": 1, "dense_rank": 1, "bm25_rank": 1, "hits": [],
         "passages": []}
    if kind:
        v["content_kind"] = kind
    return v


def test_misses_page_counts_scored_and_missed_per_kind() -> None:
    views = [_view("1", "table", "ranked_low"), _view("2", "table", ""),
             _view("3", "prose", "")]
    page = render_page(views, "t", {})
    assert "<tr><td>table</td><td>2</td><td>1</td></tr>" in page
    assert "<tr><td>prose</td><td>1</td><td>0</td></tr>" in page
    assert " · in table — question 1" in page
    plain = render_page([_view("1", None, "ranked_low")], "t", {})
    assert "By the kind of content" not in plain and " · in " not in plain
