"""The CI gate with the real model (slow, ~40 s): the default configuration passes
evals/baseline.json in-process (MiniLM), a deliberately worse one fails it."""

from __future__ import annotations

import pytest

from sweep.cli import baseline as baseline_cmd
from sweep.decide import baseline as bl

pytestmark = pytest.mark.slow  # conftest marks all of tests/e2e/ slow; said here for the reader


def test_default_config_passes_the_gate(capsys):
    assert bl.BASELINE_PATH.is_file(), "evals/baseline.json is missing: run `sweep baseline update`"
    code = baseline_cmd.cmd_baseline(["check"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "OK: no gated metric fell" in out


def test_worse_config_fails_the_gate(capsys):
    code = baseline_cmd.cmd_baseline(["check", "chunk.size=32"])
    out = capsys.readouterr().out
    assert code == 1
    assert "chunk.size=32 (baseline 254)" in out
    assert "FAIL" in out and "questions found in the top 5 by the baseline and not now" in out
