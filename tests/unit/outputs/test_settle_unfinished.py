"""A sweep that stops before any configuration finished leaves no parent run to resume or
compare (issue 45): removed when no configuration run was logged, named FAILED beside failed
ones; a sweep with a finished (or reused) configuration is left as it is. Real SQLite store."""

from __future__ import annotations

import json

from sweep.application.sweep import stopped_note
from sweep.decide import runs
from sweep.outputs import tracking


def _parent(uri: str, name: str, tmp_path) -> str:
    _, run_id = tracking.start_parent(uri, "exp", run_name=name, params={},
                                      tags={"sweep_dir": str(tmp_path / name)})
    return run_id


def _child(uri: str, parent: str, tmp_path, size: int, status: str) -> str:
    config = {"chunk": {"size": size}, "eval": {"prompt_k": 5, "headline": "recall_at_5"}}
    folder = tmp_path / f"job{size}{status}"
    folder.mkdir()
    (folder / "per_question.csv").write_text("qid,status,recall_at_5\nq1,scored,1\nq2,scored,0\n")
    report = {"status": status, "config": config, "config_hash": f"h{size}",
              "headline": {"metric": "recall_at_5", "value": 0.5},
              "metrics": {"recall_at_5": 0.5, "context_tokens_at_5": float(size)}}
    (folder / "report.json").write_text(json.dumps(report))
    return tracking.log_job(uri, "exp", run_name=str(size), plain_config=config, report=report,
                            artifacts=[folder / "per_question.csv", folder / "report.json"],
                            parent_run_id=parent, status=status,
                            error=None if status == "FINISHED" else "boom")


def test_no_configuration_run_removes_the_parent(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = _parent(uri, "sweep nothing", tmp_path)
    tracking.kill_run(uri, parent, status="FAILED")
    assert tracking.settle_unfinished(uri, parent) == "deleted"
    client = tracking.client_for(uri)
    assert client.get_run(parent).info.lifecycle_stage == "deleted"
    exp = client.get_experiment_by_name("exp").experiment_id
    assert client.search_runs([exp]) == []  # the UI's and `sweep compare`'s view


def test_only_failed_configurations_keep_a_parent_named_failed_that_compare_skips(
        tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    good = _parent(uri, "sweep good", tmp_path)
    kept = _child(uri, good, tmp_path, 128, "FINISHED")
    tracking.finish_parent(uri, good, status="FINISHED", metrics={}, tags={}, artifacts=[])
    assert tracking.settle_unfinished(uri, good) == "finished"
    bad = _parent(uri, "sweep typo", tmp_path)
    _child(uri, bad, tmp_path, 256, "FAILED")
    tracking.kill_run(uri, bad, status="FAILED")
    assert tracking.settle_unfinished(uri, bad) == "failed"
    client = tracking.client_for(uri)
    assert client.get_run(bad).info.run_name == tracking.UNFINISHED_PREFIX + "sweep typo"
    assert client.get_run(good).info.run_name == "sweep good"
    assert tracking.settle_unfinished(uri, bad) == "failed"  # named once, not twice
    assert client.get_run(bad).info.run_name == tracking.UNFINISHED_PREFIX + "sweep typo"
    t = runs.load_table(uri, None, "latest", None, tmp_path / "t", n=200)
    assert t.parent["run_id"] == good and [r["run_id"] for r in t.rows] == [kept]


def test_a_sweep_whose_configurations_were_all_reused_is_finished(tmp_path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = _parent(uri, "sweep again", tmp_path)
    tracking.tag_run(uri, parent, "resumed.h128", "someone")
    tracking.kill_run(uri, parent)
    assert tracking.settle_unfinished(uri, parent) == "finished"
    assert tracking.client_for(uri).get_run(parent).info.lifecycle_stage == "active"


def test_only_a_sweep_with_a_finished_configuration_says_it_resumes() -> None:
    assert "resumes the rest" in stopped_note("finished", "p1", "KILLED")
    for settled in ("deleted", "failed"):
        note = stopped_note(settled, "p1", "FAILED")
        assert "resumes" not in note and "nothing to resume" in note
    assert "removed from MLflow" in stopped_note("deleted", "p1", "FAILED")
    assert "parent run p1 closed FAILED" in stopped_note("failed", "p1", "FAILED")
