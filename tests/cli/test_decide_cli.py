"""`sweep rerun` argument errors through the real command line (subprocess, no model)."""

from __future__ import annotations

from pathlib import Path

from helpers import run_cli


def test_rerun_needs_a_positive_top(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep.cli", "rerun", "--top", "0", cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.strip() == "error: --top 0: must be >= 1"
