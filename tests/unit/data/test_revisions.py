"""`sweep.data.revisions`: a corpus folder at a git revision, read by git from a repository
the test makes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.data.revisions import corpus_at


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                          cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "docs" / "sub").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "docs" / "a.md").write_text("# A\n\nfirst version\n")
    (repo / "docs" / "sub" / "b.md").write_text("# B\n\nbee\n")
    (repo / "README.md").write_text("not part of the corpus\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    (repo / "docs" / "a.md").write_text("# A\n\nsecond version\n")
    git(repo, "mv", "docs/sub/b.md", "docs/b-renamed.md")
    git(repo, "commit", "-q", "-am", "two")
    (repo / "docs" / "a.md").write_text("# A\n\nworking tree, not committed\n")
    return repo


def test_a_revision_is_the_corpus_folder_as_committed(repo: Path, tmp_path: Path) -> None:
    src = corpus_at("HEAD~1", repo / "docs", tmp_path / "out")
    assert sorted(p.relative_to(src.folder).as_posix() for p in src.folder.rglob("*")
                  if p.is_file()) == ["a.md", "sub/b.md"]
    assert (src.folder / "a.md").read_text() == "# A\n\nfirst version\n"
    assert src.revision == git(repo, "rev-parse", "HEAD~1")
    assert src.label.startswith("HEAD~1 (") and src.label.endswith("of docs")
    head = corpus_at("HEAD", repo / "docs", tmp_path / "out")
    assert (head.folder / "a.md").read_text() == "# A\n\nsecond version\n"
    assert (head.folder / "b-renamed.md").is_file()
    # The working tree is untouched by reading revisions.
    assert (repo / "docs" / "a.md").read_text() == "# A\n\nworking tree, not committed\n"


def test_a_folder_is_taken_as_it_is(repo: Path, tmp_path: Path) -> None:
    src = corpus_at(str(repo / "docs"), repo / "docs", tmp_path / "out")
    assert src.folder == repo / "docs" and src.revision == ""


def test_neither_folder_nor_revision_is_one_line(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="'nope' is neither a folder nor a git revision"):
        corpus_at("nope", repo / "docs", tmp_path / "out")
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SweepError, match="not inside a git repository"):
        corpus_at("HEAD", plain, tmp_path / "out")


def test_committed_links_that_leave_the_tree_are_skipped_with_a_warning(
        repo: Path, tmp_path: Path, caplog) -> None:
    # Before (issue 44): tarfile's data filter raised AbsoluteLinkError, a traceback
    secret = tmp_path / "secret.md"
    secret.write_text("# not yours\n")
    (repo / "docs" / "abs.md").symlink_to(secret)
    (repo / "docs" / "up.md").symlink_to(Path("..") / ".." / ".." / "secret.md")
    (repo / "docs" / "inside.md").symlink_to("a.md")  # stays in the tree: extracted
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")
    with caplog.at_level("WARNING"):
        src = corpus_at("HEAD", repo / "docs", tmp_path / "out")
    names = sorted(p.name for p in src.folder.iterdir())
    assert names == ["a.md", "b-renamed.md", "inside.md"]
    assert (src.folder / "inside.md").read_text() == (src.folder / "a.md").read_text()
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert any("docs/abs.md not extracted" in m for m in warned)
    assert any("docs/up.md not extracted" in m for m in warned)
    assert all("\n" not in m for m in warned)
