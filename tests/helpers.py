"""Shared helpers for the test tiers (importable from any folder: pyproject puts tests/ on
``pythonpath``). Fixtures live in conftest.py; plain functions and constants live here, because
pytest discourages importing conftest modules by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
DEMO = ROOT / "data" / "demo"


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """Run ``python -m sweep ...`` (or ``-m sweep.cli`` for subcommands) in a subprocess.

    Without ``cwd`` it runs in the current folder, which during a test session is the
    session's scratch folder (conftest.py), never the repository: Hydra's ``outputs/`` and
    ``multirun/`` and the default ``mlflow.db`` are relative to it.
    """
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
