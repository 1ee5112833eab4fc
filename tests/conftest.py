"""Fixtures for every tier, and the rules that make the folders the tiers.

- ``tests/e2e/`` holds the slow tests: everything there is marked ``slow`` and a ``slow`` test
  anywhere else is a collection error, so the cost of each part shows in the tree.
- ``tests/realdata/`` and ``tests/comparison/`` read ``../shared/data``: marked ``realdata``.
- One session-wide fixture points every cache and output at a temporary folder, so a test run
  leaves the repository as it found it (``.ci/run`` checks ``git status`` afterwards).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# helpers.py asserts too (check_written): let pytest explain their failures.
pytest.register_assert_rewrite("helpers")

from helpers import SHARED_DATA  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TESTS = Path(__file__).resolve().parent
SLOW_DIR = TESTS / "e2e"
REALDATA_DIRS = (TESTS / "realdata", TESTS / "comparison")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.is_relative_to(SLOW_DIR):
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("slow") is not None:
            misplaced.append(item.nodeid)
        if any(path.is_relative_to(d) for d in REALDATA_DIRS):
            item.add_marker(pytest.mark.realdata)
    if misplaced:
        raise pytest.UsageError("slow tests belong in tests/e2e/: " + ", ".join(misplaced))


@pytest.fixture(scope="session", autouse=True)
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's working folder, and where the embedding/judge caches go.

    ``cache.dir`` defaults to ``$CHUNK_SWEEP_CACHE_DIR`` (else ``<repo>/.cache``); the default
    ``tracking.uri`` and Hydra's ``outputs/``/``multirun/`` are relative to the current folder.
    Both reach subprocesses through the environment and ``run_cli``'s default ``cwd``.
    The cache is shared by the whole session, as a user's would be across sweeps.
    """
    root = tmp_path_factory.mktemp("scratch")
    patch = pytest.MonkeyPatch()
    patch.setenv("CHUNK_SWEEP_CACHE_DIR", str(root / "cache"))
    patch.chdir(root)
    try:
        yield root
    finally:
        patch.undo()


def _guard_tracking_uri(who: str) -> Iterator[None]:
    before = os.environ.get("MLFLOW_TRACKING_URI")
    yield
    after = os.environ.get("MLFLOW_TRACKING_URI")
    if after != before:
        if "mlflow" in sys.modules:
            sys.modules["mlflow"].set_tracking_uri(before)
        if before is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = before
        pytest.fail(f"{who} left MLFLOW_TRACKING_URI={after!r} (it was {before!r}): use "
                    "helpers.mlflow_tracking_uri or monkeypatch", pytrace=False)


@pytest.fixture(autouse=True)
def _no_tracking_uri_leak(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves MLFLOW_TRACKING_URI changed fails here, by name, and the variable is
    put back: mlflow.set_tracking_uri exports it, and a later test's subprocesses then wrote
    their sweep to that other store (helpers.mlflow_tracking_uri sets and restores it)."""
    yield from _guard_tracking_uri(request.node.nodeid)


@pytest.fixture(scope="module", autouse=True)
def _no_tracking_uri_leak_by_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """The same for a module's fixtures (set up after this one, so torn down before it)."""
    yield from _guard_tracking_uri(f"a fixture of {request.node.nodeid}")


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data sets not present at {SHARED_DATA} (set $CHUNK_SWEEP_SHARED_DATA)")
    return SHARED_DATA
