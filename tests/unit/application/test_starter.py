"""The starter project `sweep init` writes (`sweep.application.starter`): values through a
YAML emitter, and an all-or-nothing write. The command itself: tests/cli/test_init_command.py."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from sweep.application.starter import (
    default_install,
    project_files,
    write_project,
    yaml_scalar,
)
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


# --------------------------------------------------------------------------- issue 45


def _pip_arguments(command: str, install: str) -> list[str]:
    """The arguments ``command`` (a CI file's install line) gives pip in a real shell, with
    CHUNK_SWEEP_INSTALL set as the CI file sets it."""
    script = 'pip() { printf "%s\\n" "$@"; }\n' + command
    out = subprocess.run(["bash", "-c", script], env={"CHUNK_SWEEP_INSTALL": install},
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


@pytest.mark.parametrize("install", [None, "git+https://example.org/you/chunk-sweep@v0.1.0",
                                     "vendor/chunk_sweep-0.1.0-py3-none-any.whl"])
def test_ci_files_install_chunk_sweep_from_the_variable(install: str | None) -> None:
    # Before: both files ran `pip install chunk-sweep`, a name no package index has.
    files = project_files("docs", "docs", install)
    expected = default_install() if install is None else install
    gh = yaml.safe_load(files[".github/workflows/retrieval-gate.yml"])
    gl = yaml.safe_load(files[".gitlab-ci.yml"])["retrieval-gate"]
    assert gh["env"]["CHUNK_SWEEP_INSTALL"] == expected
    assert gl["variables"]["CHUNK_SWEEP_INSTALL"] == expected
    step = next(s for s in gh["jobs"]["gate"]["steps"] if s.get("name") == "install")
    gh_line = step["run"].splitlines()[-1]
    gl_line = gl["script"][-2]
    for line in (gh_line, gl_line):
        assert _pip_arguments(line, expected) == ["install", expected]
    for text in files.values():
        assert "pip install chunk-sweep" not in text


def test_the_default_install_is_the_wheel_make_wheel_builds() -> None:
    project = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    name = project["project"]["name"].replace("-", "_")
    assert default_install() == (f"wheels/{name}-{project['project']['version']}"
                                 "-py3-none-any.whl")


@pytest.mark.parametrize("bad", ["", "two words", "--index-url=https://x", "a\nb"])
def test_an_install_spec_pip_would_not_read_as_one_argument_is_refused(bad: str) -> None:
    with pytest.raises(SweepError, match="--install"):
        project_files("docs", "docs", bad)


def test_the_gitignore_lists_the_virtual_environment(tmp_path: Path) -> None:
    write_project(tmp_path, project_files("docs", "docs"))
    ignored = (tmp_path / ".gitignore").read_text().splitlines()
    assert ".venv/" in ignored and ".cache/" in ignored
