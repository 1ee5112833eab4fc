"""`sweep.common.files.folder_signature` with its disk memo: a large model file is hashed once
while its stat is unchanged, and any write to it is hashed again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from sweep.common import files


def _model(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"dim": 4}')
    (folder / "model.safetensors").write_bytes(weights)
    return folder


def _expected(folder: Path) -> str:
    """The signature computed by hand: name, size and sha256 of each file, in sorted order."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        data = (folder / name).read_bytes()
        h.update(name.encode())
        h.update(str(len(data)).encode())
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each call as in a new process: no digest kept in memory."""
    monkeypatch.setattr(files, "_FILE_DIGESTS", {})
    monkeypatch.setattr(files, "DIGEST_MEMO_MIN_BYTES", 1000)


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_FILE_DIGESTS", {})


def test_the_memo_gives_the_same_signature_and_spares_the_second_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None) -> None:
    model = _model(tmp_path / "m", os.urandom(5000))
    memo = tmp_path / "cache" / files.DIGESTS_FOLDER
    first = files.folder_signature(str(model), memo)
    assert first == _expected(model) == files.folder_signature(str(model))
    assert len(list(memo.iterdir())) == 1  # the weights only: config.json is under the size
    kept = next(memo.iterdir()).read_text()
    assert kept == hashlib.sha256((model / "model.safetensors").read_bytes()).hexdigest()

    _new_process(monkeypatch)
    read: list[str] = []
    real_open = files.open_regular
    monkeypatch.setattr(files, "open_regular",
                        lambda p, *a: (read.append(Path(p).name), real_open(p, *a))[1])
    assert files.folder_signature(str(model), memo) == first
    # the weights' digest came from the memo (the memo file itself is read through it too)
    assert "config.json" in read and "model.safetensors" not in read


def test_a_file_written_again_is_hashed_again_even_with_its_old_mtime(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None) -> None:
    weights = os.urandom(5000)
    model = _model(tmp_path / "m", weights)
    memo = tmp_path / "memo"
    before = files.folder_signature(str(model), memo)
    path = model / "model.safetensors"
    st = path.stat()
    changed = bytes([weights[0] ^ 1]) + weights[1:]  # same size: a fine-tune's shape
    path.write_bytes(changed)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the mtime put back
    _new_process(monkeypatch)
    after = files.folder_signature(str(model), memo)
    assert after != before
    assert after == _expected(model)


def test_a_damaged_memo_file_is_read_past_and_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None) -> None:
    model = _model(tmp_path / "m", os.urandom(5000))
    memo = tmp_path / "memo"
    good = files.folder_signature(str(model), memo)
    kept = next(memo.iterdir())
    for bad in ("not hex at all, but sixty-four characters long: xxxxxxxxxxxxxxx", "ab12"):
        kept.write_text(bad)
        _new_process(monkeypatch)
        assert files.folder_signature(str(model), memo) == good
        assert kept.read_text() == hashlib.sha256(
            (model / "model.safetensors").read_bytes()).hexdigest()


def test_an_unwritable_memo_costs_only_the_saving(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_process: None) -> None:
    model = _model(tmp_path / "m", os.urandom(5000))
    blocker = tmp_path / "memo"
    blocker.write_text("a file where the folder should be")
    assert files.folder_signature(str(model), blocker) == _expected(model)
