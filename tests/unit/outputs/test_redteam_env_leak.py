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


def test_sweep_runs_puts_mlflows_own_uri_back(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only the variable: MLflow's global URI too, so that this process's fluent calls
    after a `sweep compare` in-process do not go to the store it read."""
    import mlflow

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    default = mlflow.get_tracking_uri()  # computed from the folder, not set
    uri = f"sqlite:///{tmp_path / 'other.db'}"
    tracking.client_for(uri)
    tracking.sweep_runs(uri, {"experiment_id": "0", "run_id": "none", "tags": {}})
    assert mlflow.get_tracking_uri() == default != tracking._client_uri(uri)
    assert "MLFLOW_TRACKING_URI" not in os.environ


def test_the_test_helper_restores_an_unset_variable(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """helpers.mlflow_tracking_uri: restoring with set_tracking_uri(get_tracking_uri()) (what
    two tests did) exported the computed default, and every later test's subprocess wrote to
    the session folder's mlflow.db."""
    import mlflow

    from helpers import mlflow_tracking_uri

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with mlflow_tracking_uri(f"sqlite:///{tmp_path / 'a.db'}"):
        assert os.environ["MLFLOW_TRACKING_URI"] == f"sqlite:///{tmp_path / 'a.db'}"
    assert "MLFLOW_TRACKING_URI" not in os.environ
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////kept.db")
    with mlflow_tracking_uri(f"sqlite:///{tmp_path / 'a.db'}"):
        pass
    assert os.environ["MLFLOW_TRACKING_URI"] == "sqlite:////kept.db"
    assert mlflow.get_tracking_uri() == "sqlite:////kept.db"
