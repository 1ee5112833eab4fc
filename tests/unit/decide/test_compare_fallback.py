"""After a failed sweep, `sweep compare` takes the last sweep that has results and says so
(issue 45); a sweep named by its id is that sweep or an error."""

from __future__ import annotations

import json
import time

import pytest

from sweep.cli.compare import cmd_compare
from sweep.decide import runs
from sweep.outputs import tracking


def _sweep_with_results(tmp_path, uri: str) -> tuple[str, dict[str, str]]:
    _, parent = tracking.start_parent(uri, "exp", run_name="sweep good",
                                      params={"overrides": "chunk.size=128,256"},
                                      tags={"sweep_dir": str(tmp_path / "good")})
    ids = {}
    for size, found in ((128, 30), (256, 20)):
        config = {"chunk": {"size": size}, "eval": {"prompt_k": 5, "headline": "recall_at_5"}}
        folder = tmp_path / "good" / str(size)
        folder.mkdir(parents=True)
        rows = ["qid,status,recall_at_5"] + [f"q{i},scored,{int(i < found)}" for i in range(40)]
        (folder / "per_question.csv").write_text("\n".join(rows) + "\n")
        report = {"status": "FINISHED", "config": config, "config_hash": f"h{size}",
                  "headline": {"metric": "recall_at_5", "value": found / 40},
                  "metrics": {"recall_at_5": found / 40, "context_tokens_at_5": float(size)}}
        (folder / "report.json").write_text(json.dumps(report))
        ids[str(size)] = tracking.log_job(uri, "exp", run_name=str(size), plain_config=config,
                                          report=report,
                                          artifacts=[folder / "per_question.csv",
                                                     folder / "report.json"],
                                          parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    return parent, ids


def test_compare_after_a_failed_sweep_takes_the_last_one_with_results(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    good, ids = _sweep_with_results(tmp_path, uri)
    time.sleep(0.05)  # the failed sweep starts later
    _, failed = tracking.start_parent(uri, "exp", run_name="sweep typo",
                                      params={"overrides": "embedding=bge_smal"},
                                      tags={"sweep_dir": str(tmp_path / "typo")})
    tracking.finish_parent(uri, failed, status="FAILED", metrics={}, tags={}, artifacts=[])

    t = runs.load_table(uri, None, "latest", None, tmp_path / "t", n=200)
    assert t.parent["run_id"] == good
    assert [r["run_id"] for r in t.rows] == [ids["128"], ids["256"]]
    assert t.note is not None
    assert t.note.startswith(f"the latest sweep, {failed} (FAILED), has no results (no "
                             f"configuration runs); this is sweep {good} of ")
    assert "the last one with results" in t.note

    assert cmd_compare(["--tracking-uri", uri, "--no-plot"]) == 0
    captured = capsys.readouterr()
    assert f"note: the latest sweep, {failed} (FAILED), has no results" in captured.err
    assert f"sweep {good} (experiment exp" in captured.out

    # Named by its id, the failed sweep is what was asked for: no other one instead.
    with pytest.raises(runs.NoResults, match=f"sweep {failed} has no configuration runs"):
        runs.load_table(uri, None, failed, None, tmp_path / "t2")


def test_no_sweep_with_results_at_all_is_still_an_error(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, failed = tracking.start_parent(uri, "exp", run_name="sweep typo", params={},
                                      tags={"sweep_dir": str(tmp_path)})
    tracking.finish_parent(uri, failed, status="FAILED", metrics={}, tags={}, artifacts=[])
    with pytest.raises(runs.NoResults, match=f"sweep {failed} has no configuration runs"):
        runs.load_table(uri, None, "latest", None, tmp_path / "t")
