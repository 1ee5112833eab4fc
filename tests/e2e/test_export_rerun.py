"""Export -> re-run reproduces the metrics (slow: real model, real sweep, real MLflow store)."""

from __future__ import annotations

import json
import math
import uuid

import pytest
import yaml

from helpers import run_cli

pytestmark = pytest.mark.slow  # conftest marks all of tests/e2e/ slow; said here for the reader


def _retrieval_metrics(report: dict) -> dict:
    from sweep.outputs.report import result_metrics

    return result_metrics(report["metrics"])


def test_exported_winner_reruns_to_identical_metrics(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = run_cli("-m", "sweep", "-m", "chunk.size=128,256", f"tracking.uri={uri}",
                    f"hydra.sweep.dir={tmp_path / 'multirun'}", "eval.latency_sample=5",
                    cwd=tmp_path)
    assert sweep.returncode == 0, sweep.stderr[-3000:]
    name = f"test-{uuid.uuid4().hex[:8]}"
    exp_dir = tmp_path / "search" / "experiment" / "winners"
    exported = run_cli("-m", "sweep.cli", "export", "--metric", "recall_at_5", "--name", name,
                       "--out-dir", str(exp_dir), "--tracking-uri", uri, cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "decided by:" in exported.stdout
    winner = yaml.safe_load((exp_dir / f"{name}.yaml").read_text())
    reports = {json.loads(p.read_text())["config"]["chunk"]["size"]: json.loads(p.read_text())
               for p in (tmp_path / "multirun").glob("*/report.json")}
    original = reports[winner["chunk"]["size"]]

    # The tutorial's step, in the sweep's own store: the single run runs again (a sweep would
    # reuse the FINISHED run of this config_hash; a single run names what it wants run).
    rerun = run_cli("-m", "sweep", f"experiment=winners/{name}",
                    f"hydra.searchpath=[file://{tmp_path / 'search'}]", f"tracking.uri={uri}",
                    f"hydra.run.dir={tmp_path / 'rerun'}", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    again = json.loads((tmp_path / "rerun" / "report.json").read_text())
    assert "resumed_from_run" not in again
    assert "running it again" in rerun.stdout + rerun.stderr
    assert again["config_hash"] == original["config_hash"]
    assert again["config"]["chunk"] == original["config"]["chunk"]
    a, b = _retrieval_metrics(original), _retrieval_metrics(again)
    assert a.keys() == b.keys()
    for key in a:
        assert (a[key] == b[key]) or (math.isnan(a[key]) and math.isnan(b[key])), key
