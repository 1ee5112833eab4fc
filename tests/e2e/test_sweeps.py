"""End-to-end sweeps with the real bundled model and a real MLflow store (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import DEMO, run_cli

pytestmark = pytest.mark.slow


def _runs(db: Path) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    exps = [e.experiment_id for e in client.search_experiments()]
    return client, client.search_runs(exps, max_results=1000)


def test_multirun_logs_one_parent_and_four_finished_children(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    res = run_cli("-m", "sweep", "-m", "chunk.size=128,256", "chunk.boundary=fixed,heading",
                  f"tracking.uri=sqlite:///{db}", f"hydra.sweep.dir={tmp_path}/multirun",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "best: chunk.boundary=" in res.stdout

    client, runs = _runs(db)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and len(children) == 4
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    # the plot is drawn by the MLflow worker (tests/cli/test_warm_paths.py) and logged here
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"comparison.csv",
                                                                           "comparison.png",
                                                                           "axes.png"}
    # What the set can decide: corrected verdicts, the power line, each axis (issue 28).
    assert "Holm-corrected over all 6 pairs of the 4 configurations" in res.stdout
    assert "power, from best (" in res.stdout and "  chunk.size: best " in res.stdout
    assert parent.data.tags["correction"] == "holm" and "n_worse" in parent.data.metrics
    assert parent.data.tags["power"].startswith("power, from best")
    combos = set()
    for child in children:
        assert child.info.status == "FINISHED"
        assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
        params = child.data.params
        combos.add((params["chunk.size"], params["chunk.boundary"]))
        for metric in ("recall_at_5", "mrr", "evidence_recall_at_5"):
            assert 0.0 <= child.data.metrics[metric] <= 1.0
        for tag in ("config_hash", "corpus_fingerprint", "golden_fingerprint", "git_sha"):
            assert child.data.tags[tag]
        artifacts = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"per_question.csv", "report.json", "config.yaml"} <= artifacts
    assert combos == {("128", "fixed"), ("128", "heading"), ("256", "fixed"),
                      ("256", "heading")}

    # The report on disk and the run in MLflow agree.
    reports = sorted((tmp_path / "multirun").glob("*/report.json"))
    assert len(reports) == 4
    by_hash = {c.data.tags["config_hash"]: c for c in children}
    for path in reports:
        rep = json.loads(path.read_text())
        child = by_hash[rep["config_hash"]]
        assert child.data.metrics["recall_at_5"] == pytest.approx(rep["metrics"]["recall_at_5"])


def test_same_configuration_twice_gives_identical_metrics(tmp_path: Path) -> None:
    reports = []
    for i in range(2):
        res = run_cli("-m", "sweep", "chunk.size=200", "chunk.boundary=paragraph",
                      "chunk.header=title", "tracking=off", f"hydra.run.dir={tmp_path}/run{i}",
                      f"cache.dir={tmp_path}/cache", cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        reports.append(json.loads((tmp_path / f"run{i}" / "report.json").read_text()))
    from sweep.outputs.report import result_metrics

    assert reports[0]["metrics"].keys() == reports[1]["metrics"].keys()
    assert result_metrics(reports[0]["metrics"]) == result_metrics(reports[1]["metrics"])
    assert len(result_metrics(reports[0]["metrics"])) > 40
    assert reports[0]["config_hash"] == reports[1]["config_hash"]
    assert reports[0]["metrics"]["n_scored"] == 60
    # The second process found every chunk and question in the disk cache.
    assert reports[0]["metrics"]["n_texts_encoded"] > 100
    assert reports[1]["metrics"]["n_texts_encoded"] == 0


def test_a_combination_the_checks_refuse_stops_the_sweep_before_any_job(tmp_path: Path) -> None:
    # Issue 45: every check that can run before the first job runs before it, for every
    # combination: the valid job does not run first and leave a half sweep behind.
    db = tmp_path / "mlflow.db"
    res = run_cli("-m", "sweep", "-m", "chunk.size=64", "chunk.overlap=0,64",
                  f"tracking.uri=sqlite:///{db}", f"hydra.sweep.dir={tmp_path}/multirun",
                  cwd=tmp_path)
    assert res.returncode == 1
    assert "chunk.overlap=64 must be >= 0 and smaller than chunk.size=64" in res.stderr
    assert "Traceback" not in res.stderr
    assert not list((tmp_path / "multirun").glob("*/report.json"))
    if db.exists():  # no parent run and no configuration run was created
        _, runs = _runs(db)
        assert runs == []


def test_a_config_failing_at_run_time_does_not_stop_the_sweep(tmp_path: Path) -> None:
    # A folder with no document passes the checks and fails when the job reads it.
    empty = tmp_path / "empty"
    empty.mkdir()
    db = tmp_path / "mlflow.db"
    res = run_cli("-m", "sweep", "-m", f"corpus.path={DEMO / 'corpus'},{empty}",
                  "retrieval=bm25", f"tracking.uri=sqlite:///{db}",
                  f"hydra.sweep.dir={tmp_path}/multirun", cwd=tmp_path)
    assert res.returncode == 1
    assert "1 of 2 configurations failed" in res.stderr
    assert "Traceback" not in res.stderr
    _, runs = _runs(db)
    status = sorted((r.info.status, r.data.params.get("corpus.path")) for r in runs
                    if "mlflow.parentRunId" in r.data.tags)
    assert status == [("FAILED", str(empty)), ("FINISHED", str(DEMO / "corpus"))]
    failed = next(r for r in runs if r.info.status == "FAILED" and "mlflow.parentRunId"
                  in r.data.tags)
    assert failed.data.tags["error"]
    # The finished job's files are intact.
    done = [json.loads(p.read_text()) for p in (tmp_path / "multirun").glob("*/report.json")]
    assert sorted(r["status"] for r in done) == ["FAILED", "FINISHED"]


def test_optuna_sweep_maximises_the_returned_headline(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    res = run_cli("-m", "sweep", "-m", "experiment=optuna_search", "hydra.sweeper.n_trials=2",
                  "embedding=minilm_static", f"tracking.uri=sqlite:///{db}",
                  f"hydra.sweep.dir={tmp_path}/multirun", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Best value:" in res.stdout + res.stderr
    _, runs = _runs(db)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2 and all(r.info.status == "FINISHED" for r in children)
    assert all("evidence_recall_at_budget" in r.data.metrics for r in children)


def test_killed_sweep_resumes_without_losing_or_repeating(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    db = tmp_path / "mlflow.db"
    args = [sys.executable, "-m", "sweep", "-m", "chunk.size=96,128,160,192",
            "chunk.boundary=fixed", "embedding=minilm_static", "retrieval.diagnose=false",
            "eval.latency_sample=5", f"tracking.uri=sqlite:///{db}",
            f"cache.dir={tmp_path}/cache"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    first = subprocess.Popen([*args, f"hydra.sweep.dir={tmp_path}/first"], cwd=tmp_path,
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    deadline = time.time() + 600
    while time.time() < deadline:
        done = [p for p in (tmp_path / "first").glob("*/report.json")
                if json.loads(p.read_text()).get("status") == "FINISHED"]
        if len(done) >= 2:
            break
        time.sleep(0.5)
    time.sleep(1.0)  # let the tracking of the finished job land, or not: both must be fine
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert len(done) >= 2

    res = run_cli(*args[1:], f"hydra.sweep.dir={tmp_path}/second", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "skipped: this configuration" in res.stdout + res.stderr

    _, runs = _runs(db)
    finished = [r for r in runs if r.info.status == "FINISHED"
                and r.data.tags.get("chunk_sweep.role") == "config"]
    hashes = [r.data.tags["config_hash"] for r in finished]
    sizes = sorted(r.data.params["chunk.size"] for r in finished)
    assert len(hashes) == len(set(hashes)) == 4, sizes
    assert sizes == ["128", "160", "192", "96"]
    # The second sweep's table still has all four configurations.
    assert len(list((tmp_path / "second").glob("*/report.json"))) == 4


def test_joblib_workers_log_to_a_tracking_server(tmp_path: Path) -> None:
    """Two worker processes, one real `mlflow server` on loopback: one parent, four children."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
         f"sqlite:///{tmp_path}/server.db", "--artifacts-destination", str(tmp_path / "art"),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{uri}/health", timeout=2)
                break
            except OSError:
                time.sleep(1)
        res = run_cli("-m", "sweep", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                      "chunk.size=128,256", "chunk.boundary=fixed,heading",
                      "embedding=minilm_static", "eval.latency_sample=5", "tracking=server",
                      f"hydra.sweep.dir={tmp_path}/multirun", f"cache.dir={tmp_path}/cache",
                      env={"MLFLOW_TRACKING_URI": uri}, cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        from mlflow import MlflowClient

        client = MlflowClient(uri)
        runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
        parents = [r for r in runs if r.data.tags.get("chunk_sweep.role") == "sweep"]
        children = [r for r in runs if r.data.tags.get("chunk_sweep.role") == "config"]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        assert len(children) == 4
        assert all(r.info.status == "FINISHED" for r in children)
        assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
        assert len({r.data.tags["config_hash"] for r in children}) == 4
    finally:
        server.terminate()
        server.wait(30)
