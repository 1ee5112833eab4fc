"""The starter project `sweep init` writes (`sweep.application.starter`): values through a
YAML emitter, and an all-or-nothing write. The command itself: tests/cli/test_init_command.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sweep.application.starter import project_files, write_project, yaml_scalar
from sweep.common.errors import SweepError


def test_init_yaml_scalar_round_trips() -> None:
    for value in ["docs #2024", "a: b", "plain", "- dash", "{x}", "'quote\"", "yes", "null",
                  "${project_root:}/x", "naïve/ü", "tab\there", "#lead", "trailing "]:
        assert yaml.safe_load(f"k: {yaml_scalar(value)}\n") == {"k": value}, value


def test_init_removes_what_it_wrote_when_a_write_fails(tmp_path: Path, monkeypatch) -> None:
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "symlink_to", refuse)  # after every file has been written
    with pytest.raises(SweepError) as info:
        write_project(tmp_path, project_files("docs", "docs"))
    assert str(info.value) == ("sweep init: cannot write conf/experiment (Permission denied); "
                               "nothing was left behind")
    assert list(tmp_path.iterdir()) == []
