"""Paths and files that cannot be read as they look (issue 44).

Before: a golden.path that is a symlink loop ended a run in `RuntimeError: Symlink loop` from
`Path.resolve()` (reached through resume); a FIFO where the gate memo, a baseline or a parse
cache entry should be blocked the read forever (a restored CI cache can hold one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.common.files import (
    NotRegularFile,
    content_digest,
    open_regular,
    read_bytes_regular,
    read_text_regular,
)
from sweep.common.paths import resolve_user_path

ROOT = Path(__file__).resolve().parents[3]


def loop(tmp_path: Path, name: str = "loop.jsonl") -> Path:
    (tmp_path / "a").symlink_to(tmp_path / name)
    (tmp_path / name).symlink_to(tmp_path / "a")
    return tmp_path / name


# --------------------------------------------------------------------------- resolving


def test_resolve_user_path_turns_a_symlink_loop_into_one_line(tmp_path: Path) -> None:
    path = loop(tmp_path)
    with pytest.raises(RuntimeError if sys.version_info < (3, 13) else OSError):
        path.resolve()  # what the helper guards against
    with pytest.raises(SweepError) as info:
        resolve_user_path(path, "golden.path")
    assert str(info.value) == (f"golden.path={str(path)!r}: a symlink loop (it never reaches "
                               "a file or folder)")
    # an ordinary path resolves as Path.resolve does, existing or not
    assert resolve_user_path(tmp_path / "x" / ".." / "y") == (tmp_path / "y").resolve()


def test_golden_loop_through_the_memoised_loader_is_one_line(tmp_path: Path) -> None:
    from sweep.pipeline.memo import clear_memo, load_golden_cached

    clear_memo()
    with pytest.raises(SweepError, match=r"golden\.path=.*: a symlink loop"):
        load_golden_cached(str(loop(tmp_path)))


def test_run_with_a_looping_golden_path_ends_in_one_line(tmp_path: Path) -> None:
    # the path the issue reported: a run resumes through the golden set's fingerprint first
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1",
           "CHUNK_SWEEP_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "sweep", f"golden.path={loop(tmp_path)}",
         f"hydra.run.dir={tmp_path / 'run'}", f"tracking.uri=sqlite:///{tmp_path / 'm.db'}"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "RuntimeError" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "symlink loop" in ln]
    assert len(errors) == 1 and "golden.path=" in errors[0]


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize("reader", [read_bytes_regular, read_text_regular,
                                    lambda p: open_regular(p).read()])
def test_a_fifo_is_refused_without_blocking(tmp_path: Path, reader) -> None:
    os.mkfifo(tmp_path / "memo.json")  # no writer: a blocking open would wait forever
    with pytest.raises(NotRegularFile) as info:
        reader(tmp_path / "memo.json")
    assert str(info.value) == f"{tmp_path / 'memo.json'}: a FIFO (named pipe), not a regular file"
    # callers that turn OSError into "unreadable" keep doing so
    assert isinstance(info.value, OSError) and isinstance(info.value, SweepError)


def test_device_folder_loop_and_missing(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile, match="a character device, not a regular file"):
        read_bytes_regular(Path("/dev/null"))
    with pytest.raises(NotRegularFile, match="a folder"):
        read_bytes_regular(tmp_path)
    with pytest.raises(NotRegularFile, match="a symlink loop"):
        read_bytes_regular(loop(tmp_path))
    with pytest.raises(FileNotFoundError):  # missing stays missing: callers tell it apart
        read_bytes_regular(tmp_path / "nope")
    (tmp_path / "ok.txt").write_bytes(b"caf\xc3\xa9\r\n")
    assert read_bytes_regular(tmp_path / "ok.txt") == b"caf\xc3\xa9\r\n"
    assert read_text_regular(tmp_path / "ok.txt") == (tmp_path / "ok.txt").read_text("utf-8")


def test_a_fifo_in_a_digested_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("x")
    os.mkfifo(tmp_path / "b.md")
    with pytest.raises(NotRegularFile, match=r"b\.md: a FIFO"):
        content_digest(tmp_path)


def test_gate_memo_that_is_a_fifo_is_unreadable_not_a_hang(tmp_path: Path, monkeypatch) -> None:
    from sweep.decide import memo

    target = tmp_path / "memo" / "k.json"
    target.parent.mkdir()
    os.mkfifo(target)
    monkeypatch.setattr(memo, "_memo_path", lambda overrides: (target, "k"))
    run, why = memo.lookup([])
    assert run is None and why == f"{target}: unreadable memo"


def test_parse_cache_entry_that_is_a_fifo_is_parsed_again(tmp_path: Path, caplog) -> None:
    from sweep.data.parsers.cache import ParseCache

    cache = ParseCache(tmp_path / "cache")
    key = "ab" + "0" * 62
    cache._path(key).parent.mkdir(parents=True)
    os.mkfifo(cache._path(key))
    assert cache.get(key) is None
    assert any("a FIFO" in r.getMessage() for r in caplog.records)


def test_decisions_file_that_is_a_fifo(tmp_path: Path) -> None:
    from sweep.questions.queue import decisions_path, read_decisions

    queue = tmp_path / "queue.jsonl"
    os.mkfifo(decisions_path(queue))
    with pytest.raises(SweepError, match="a FIFO"):
        read_decisions(queue)


def test_a_question_log_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    from sweep.questions.rows import open_text

    os.mkfifo(tmp_path / "queries.csv")
    with pytest.raises(SweepError, match=r"queries\.csv: a FIFO"):
        open_text(tmp_path / "queries.csv")
