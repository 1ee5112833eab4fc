"""An axis given twice (`-m chunk.size=128,256 chunk.size=512`) is refused instead of silently
running one job; a plain key given twice is warned about (issue 14, item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli
from sweep.common.errors import SweepError
from sweep.config.compose import check_duplicate_overrides


def test_swept_key_given_twice_is_refused() -> None:
    with pytest.raises(SweepError) as err:
        check_duplicate_overrides(["chunk.size=128,256", "chunk.size=512"])
    assert "chunk.size" in str(err.value) and "twice" in str(err.value)
    with pytest.raises(SweepError):
        check_duplicate_overrides(["+experiment=a,b", "experiment=c"])


def test_plain_duplicates_warn_and_distinct_keys_pass() -> None:
    assert check_duplicate_overrides(["chunk.size=128", "chunk.overlap=0,16"]) == []
    warnings = check_duplicate_overrides(["chunk.size=128", "chunk.size=512"])
    assert len(warnings) == 1 and "chunk.size" in warnings[0] and "512" in warnings[0]


def test_cli_refuses_before_any_job(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "-m", "chunk.size=128,256", "chunk.size=512",
                  f"hydra.sweep.dir={tmp_path}/sweep", "tracking.enabled=false", timeout=300)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "chunk.size" in lines[0], res.stderr
    assert not (tmp_path / "sweep").exists()
