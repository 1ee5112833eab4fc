"""A SQLite store held by another writer (``BEGIN EXCLUSIVE``): the tool waits up to
``tracking.store_wait_s``, then says so in one line naming the store (issue 14, item 14)."""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.outputs import tracking


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated store (creating one takes seconds), copied for each test."""
    db = tmp_path_factory.mktemp("store") / "mlflow.db"
    uri = f"sqlite:///{db}"
    tracking.ensure_experiment(tracking.client_for(uri), uri, "e")
    return db


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    db = tmp_path / "mlflow.db"
    shutil.copy(template, db)
    uri = f"sqlite:///{db}"
    saved = tracking.STORE_WAIT_S
    yield uri, db
    tracking.set_store_wait(saved)


def _hold(db: Path, seconds: float, release: threading.Event | None = None,
          releasing: threading.Event | None = None) -> threading.Thread:
    """Another writer: a plain sqlite3 connection holding an exclusive lock for ``seconds``
    (or until ``release`` is set); ``releasing`` is set just before it commits."""
    held = threading.Event()

    def run() -> None:
        conn = sqlite3.connect(str(db), isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        held.set()
        if release is None:
            time.sleep(seconds)
        else:
            release.wait(seconds)
        if releasing is not None:
            releasing.set()
        conn.execute("COMMIT")
        conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert held.wait(10)
    return thread


def test_waits_for_a_writer_that_finishes_within_the_wait(store: tuple[str, Path]) -> None:
    uri, db = store
    tracking.set_store_wait(30)
    releasing = threading.Event()
    _hold(db, 6.5, releasing=releasing)  # longer than SQLite's default busy timeout of 5 s
    exp_id, run_id = tracking.start_parent(uri, "e", "r", {"overrides": "x"}, {})
    assert releasing.is_set()  # it got through only once the other writer let go
    from mlflow import MlflowClient

    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    assert run.info.experiment_id == exp_id and run.data.params == {"overrides": "x"}


def test_a_writer_that_holds_on_gives_one_line_naming_the_store(
        store: tuple[str, Path], caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    uri, db = store
    tracking.set_store_wait(1)
    release = threading.Event()
    holder = _hold(db, 120, release)  # held until the attempt has given up
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(SweepError) as err:
            tracking.start_parent(uri, "e", "r", {}, {})
    finally:
        release.set()
        holder.join()
    message = str(err.value)
    assert f"the MLflow store {db} is held by another writer (waited 1 s)" in message
    assert "tracking.store_wait_s" in message and "\n" not in message
    logged = caplog.text + capsys.readouterr().err
    assert "Traceback" not in logged and "sqlalchemy" not in logged.lower()
