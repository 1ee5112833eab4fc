"""Reading a sweep must not leave MLFLOW_TRACKING_URI set in the process (mlflow's
set_tracking_uri exports it): since item 17 the variable picks the store of every later
command and subprocess."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sweep.outputs import tracking


def test_sweep_runs_leaves_the_environment_alone(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracking.client_for(uri)
    df = tracking.sweep_runs(uri, {"experiment_id": "0", "run_id": "none", "tags": {}})
    assert len(df) == 0
    assert "MLFLOW_TRACKING_URI" not in os.environ
