"""Every subcommand honours MLFLOW_TRACKING_URI when no flag or override names a store:
flag/override, then the variable, then ./mlflow.db (issue 14, item 17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli
from sweep.config.compose import compose
from sweep.decide.runs import default_uri


def test_default_uri_prefers_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert default_uri() == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////elsewhere/m.db")
    assert default_uri() == "sqlite:////elsewhere/m.db"


def test_composed_config_prefers_override_then_variable(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert compose([]).tracking.uri == f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////from/env.db")
    assert compose([]).tracking.uri == "sqlite:////from/env.db"
    assert compose(["tracking.uri=sqlite:////from/flag.db"]).tracking.uri == \
        "sqlite:////from/flag.db"


def test_compare_reads_the_store_the_variable_names(tmp_path: Path) -> None:
    store = tmp_path / "named" / "store.db"
    res = run_cli("-m", "sweep.cli", "compare", cwd=tmp_path,
                  env={"MLFLOW_TRACKING_URI": f"sqlite:///{store}"}, timeout=300)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert str(store) in res.stderr  # not ./mlflow.db of the cwd
