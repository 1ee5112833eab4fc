"""sweep compare on a golden set mixing sources: a column per source for the ranking metric,
and each source's share (a hand-built MLflow store, hand-made numbers)."""

from __future__ import annotations

import json

import pytest
from test_table import _job

from sweep.decide import present, runs
from sweep.outputs import tracking


@pytest.fixture
def store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "chunk-sweep-demo", run_name="sources",
                                      params={"overrides": "chunk.size=128,256"},
                                      tags={"sweep_dir": str(tmp_path / "multirun")})
    ids = {}
    # 30 log questions, 10 synthetic: a finds 18 + 10, b finds 21 + 5
    for name, size, log_hits, syn_hits in (("a", 256, 18, 10), ("b", 128, 21, 5)):
        scores = [1] * log_hits + [0] * (30 - log_hits) + [1] * syn_hits + [0] * (10 - syn_hits)
        folder = tmp_path / "multirun" / name
        report = _job(folder, size, "heading", scores, 500.0)
        report["metrics"].update({
            "by_source/log/recall_at_5": log_hits / 30, "by_source/log/n": 30.0,
            "by_source/log/share": 0.75, "by_source/synthetic/recall_at_5": syn_hits / 10,
            "by_source/synthetic/n": 10.0, "by_source/synthetic/share": 0.25,
            "by_source/log/mrr": 0.1})
        (folder / "report.json").write_text(json.dumps(report))
        ids[name] = tracking.log_job(
            uri, "chunk-sweep-demo", run_name=name, plain_config=report["config"],
            report=report, artifacts=[folder / f for f in
                                      ("report.json", "per_question.csv", "config.yaml")],
            parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    return uri, ids


def test_compare_adds_a_column_per_source(store, tmp_path, capsys) -> None:
    uri, ids = store
    t = runs.load_table(uri, None, "latest", None, tmp_path, n=500)
    assert [r["run_id"] for r in t.rows] == [ids["a"], ids["b"]]  # 28/40 before 26/40
    assert [c for c in t.shown if c.startswith("by_source/")] == [
        "by_source/log/recall_at_5", "by_source/synthetic/recall_at_5"]  # the ranking metric only
    assert t.rows[0]["by_source/log/recall_at_5"] == pytest.approx(0.6)
    assert t.rows[1]["by_source/log/recall_at_5"] == pytest.approx(0.7)  # b is better on logs
    assert present.source_shares(t.rows[0]) == [("log", 30, 0.75), ("synthetic", 10, 0.25)]
    present.print_table(t)
    out = capsys.readouterr().out
    assert "by_source/synthetic/recall_at_5" in out
    assert "the questions of one source only (log n=30 (75%), synthetic n=10 (25%))" in out
    data = present.table_json(t)
    assert data["sources"] == [{"source": "log", "n": 30, "share": 0.75},
                               {"source": "synthetic", "n": 10, "share": 0.25}]
    assert data["rows"][1]["by_source/synthetic/recall_at_5"] == pytest.approx(0.5)
