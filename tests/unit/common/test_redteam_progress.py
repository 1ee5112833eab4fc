"""Progress bars only on a terminal (issue 14, item 19)."""

from __future__ import annotations

import io

import pytest

from sweep.common.progress import show_progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHUNK_SWEEP_PROGRESS", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert show_progress(True) is False  # a CI log or a Slurm file
    monkeypatch.setattr("sys.stderr", _Tty())
    assert show_progress(True) is True
    assert show_progress(False) is False  # the caller's own "no" always wins


def test_progress_variable_forces_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", _Tty())
    monkeypatch.setenv("CHUNK_SWEEP_PROGRESS", "0")
    assert show_progress(True) is False
    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.setenv("CHUNK_SWEEP_PROGRESS", "1")
    assert show_progress(True) is True
