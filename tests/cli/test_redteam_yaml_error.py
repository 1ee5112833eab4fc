"""A badly indented experiment YAML is one line with file:line:col, not a YAML traceback
(issue 14, item 8), for a run and for a subcommand."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli

BAD = "# @package _global_\nchunk:\n  size: 128\n   overlap: 0\n"


@pytest.mark.parametrize("command", [["sweep"], ["sweep.cli", "validate"]])
def test_bad_indentation_is_one_line(tmp_path: Path, command: list[str]) -> None:
    folder = tmp_path / "extra" / "experiment"
    folder.mkdir(parents=True)
    bad = folder / "badindent.yaml"
    bad.write_text(BAD, encoding="utf-8")
    res = run_cli("-m", *command, f"hydra.searchpath=[file://{tmp_path / 'extra'}]",
                  "experiment=badindent", "tracking.enabled=false",
                  f"hydra.run.dir={tmp_path}/run", timeout=300)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    # PyYAML's marks are 0-based; the line shows them as an editor does (line 4, column 11).
    assert f"{bad}:4:11" in lines[0]
    assert "mapping values are not allowed" in lines[0]
    assert not (tmp_path / "run").exists()
