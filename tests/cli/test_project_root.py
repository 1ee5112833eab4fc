"""The project a command works for, found from a sub-folder: the nearest folder up with
`sweep init`'s marker (conf/project/), or, with the package installed, with a conf/; never the
bundled demo silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli
from sweep.common import paths


def _repo(root: Path, conf: str | None) -> Path:
    """A user's repository: .git, docs/guide/ and, when ``conf``, that folder."""
    (root / ".git").mkdir(parents=True)
    (root / "docs" / "guide").mkdir(parents=True)
    if conf:
        (root / conf).mkdir(parents=True)
    return root


def test_installed_package_finds_the_nearest_conf_from_a_sub_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "in_clone", lambda: False)
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    repo = _repo(tmp_path / "repo", "conf")
    for here in (repo, repo / "docs", repo / "docs" / "guide"):
        assert paths.project_root(here) == repo
        assert paths.no_project_note(here) is None


def test_installed_package_without_a_project_says_it_uses_the_demo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "in_clone", lambda: False)
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    # a conf/ above the repository's top is someone else's: not taken
    (tmp_path / "conf").mkdir()
    repo = _repo(tmp_path / "repo", None)
    here = repo / "docs"
    assert paths.project_root(here) == here
    note = paths.no_project_note(here)
    assert note is not None and str(here) in note and "bundled demo" in note
    assert "sweep init" in note


def test_the_init_marker_wins_in_a_clone_too(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "in_clone", lambda: True)
    monkeypatch.delenv(paths.ROOT_ENV, raising=False)
    repo = _repo(tmp_path / "repo", "conf/project")
    assert paths.project_root(repo / "docs" / "guide") == repo
    # a conf/ without the marker is not a project of an editable install: the clone is
    plain = _repo(tmp_path / "plain", "conf")
    assert paths.project_root(plain / "docs") == paths.CLONE_ROOT
    assert paths.no_project_note(plain / "docs") is None  # a clone runs its own demo


def test_validate_from_the_docs_folder_checks_the_project(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "a.md").write_text("# Returns\n\nThirty days to send it back.\n")
    (tmp_path / "docs").mkdir()
    init = run_cli("-m", "sweep.cli", "init", "--corpus", "handbook", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    item = ('{"qid": "q1", "question": "How long do I have to send it back?", '
            '"evidence": [{"doc_id": "a", "quote": "Thirty days to send it back."}]}\n')
    (tmp_path / "golden" / "handbook.jsonl").write_text(item)
    proc = run_cli("-m", "sweep.cli", "validate", cwd=tmp_path / "docs")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    # the project's one question over its one document, not the demo's 60 over 34
    assert f"{tmp_path / 'golden' / 'handbook.jsonl'}: 1 items checked against 1 documents" \
        in out
    assert "data/demo" not in out
