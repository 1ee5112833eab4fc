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
