from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared/data from a clone; $SWEEP_SHARED_DATA when the clone lives elsewhere (a worktree).
SHARED_DATA = Path(os.environ.get("SWEEP_SHARED_DATA") or ROOT.parent / "shared" / "data")
DEMO = ROOT / "data" / "demo"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def run_cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """Run ``python -m sweep ...`` (or ``-m sweep.cli`` for subcommands) in a subprocess."""
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run([sys.executable, *args], cwd=cwd or ROOT, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data sets not present at {SHARED_DATA}")
    return SHARED_DATA
