"""`sweep.common.files.folder_syncs_once`: the folder fsyncs of `atomic_write` held to the end of
a block, once per folder."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_folder_syncs_once_holds_each_folders_fsync_to_the_blocks_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from sweep.common import files

    synced: list[Path] = []
    monkeypatch.setattr(files, "fsync_dir", synced.append)
    a, b = tmp_path / "a", tmp_path / "b"
    files.atomic_write(a / "x", "1")
    assert synced == [a]  # outside a block: at once
    synced.clear()
    with files.folder_syncs_once():
        for name in ("x", "y", "z"):
            files.atomic_write(a / name, name)
        files.atomic_write(b / "x", "b")
        # another thread's writes are not held by this thread's block
        other = threading.Thread(target=files.atomic_write, args=(b / "t", "t"))
        other.start()
        other.join()
        assert synced == [b]
    assert synced == [b, a, b]  # once per folder, after every rename
    assert (a / "y").read_text() == "y" and (b / "t").read_text() == "t"
    synced.clear()
    with pytest.raises(RuntimeError), files.folder_syncs_once():
        files.atomic_write(a / "x", "2")
        raise RuntimeError("a failure after the write")
    assert synced == [a]  # the written file's rename is made durable all the same


def test_a_parallel_block_writes_while_the_caller_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a parallel block `atomic_write` returns before its file is written; the block's end
    waits for every write, then fsyncs each folder once; a file written twice ends with the
    later text."""
    import threading

    from sweep.common import files

    synced: list[Path] = []
    monkeypatch.setattr(files, "fsync_dir", synced.append)
    go = threading.Event()
    replace = files._replace

    def held_back(path: Path, data: bytes | str) -> None:
        go.wait()
        replace(path, data)

    monkeypatch.setattr(files, "_replace", held_back)
    a, b = tmp_path / "a", tmp_path / "b"
    with files.folder_syncs_once(parallel=True):
        files.atomic_write(a / "x", "first")
        files.atomic_write(b / "y", b"y")
        assert not (a / "x").exists() and synced == []  # handed over, not written yet
        go.set()
        files.atomic_write(a / "x", "second")
        files.atomic_write(a / "z", "z")
    assert synced == [a, b]
    assert [(a / "x").read_text(), (b / "y").read_text(), (a / "z").read_text()] == \
        ["second", "y", "z"]
    assert sorted(p.name for p in a.iterdir()) == ["x", "z"]  # no temporary file left


def test_a_parallel_blocks_failed_write_is_raised_at_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sweep.common import files

    synced: list[Path] = []
    monkeypatch.setattr(files, "fsync_dir", synced.append)
    (tmp_path / "taken").write_text("a file where a folder should be")
    with pytest.raises(OSError), files.folder_syncs_once(parallel=True):
        files.atomic_write(tmp_path / "ok", "ok")
        files.atomic_write(tmp_path / "taken" / "x", "x")  # its folder cannot be made
    assert (tmp_path / "ok").read_text() == "ok" and tmp_path in synced
    # the body's own error goes up, after the writes it started are done
    with pytest.raises(RuntimeError, match="the body's"), \
            files.folder_syncs_once(parallel=True):
        files.atomic_write(tmp_path / "later", "later")
        files.atomic_write(tmp_path / "taken" / "y", "y")
        raise RuntimeError("the body's own failure")
    assert (tmp_path / "later").read_text() == "later"
