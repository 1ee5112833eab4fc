"""A vector in the embedding cache overwritten with another valid vector is a miss with a
warning, not a silent wrong result (issue 14, item 15); old cache files are migrated."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sweep.embedding.cache import EmbeddingCache


def test_swapped_vector_is_a_miss_with_a_warning(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    a, b = np.array([1, 0, 0], np.float32), np.array([0, 1, 0], np.float32)
    cache.put_many("m", [(b"ka", a), (b"kb", b)])
    db = sqlite3.connect(tmp_path / "e.sqlite")
    db.execute("UPDATE embeddings SET vector = ? WHERE key = ?", (b.tobytes(), b"ka"))
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING):
        got = cache.get_many("m", [b"ka", b"kb"])
    assert set(got) == {b"kb"} and np.array_equal(got[b"kb"], b)
    assert any("checksum" in r.getMessage() for r in caplog.records)
    cache.put_many("m", [(b"ka", a)])  # re-embedded: the bad row is replaced
    assert np.array_equal(cache.get_many("m", [b"ka"])[b"ka"], a)
    # The same vector under another model is not valid either: the model is in the sum.
    assert cache.get_many("other", [b"ka"]) == {}


def test_old_cache_file_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE embeddings (model TEXT NOT NULL, key BLOB NOT NULL, dim INTEGER NOT NULL,
            vector BLOB NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID;
        CREATE TABLE token_lengths (model TEXT NOT NULL, key BLOB NOT NULL, n INTEGER NOT NULL,
            PRIMARY KEY (model, key)) WITHOUT ROWID;""")
    vec = np.array([0.5, 0.5], np.float32)
    db.execute("INSERT INTO embeddings VALUES (?, ?, ?, ?)", ("m", b"k", 2, vec.tobytes()))
    db.commit()
    db.close()
    cache = EmbeddingCache(path)
    assert np.array_equal(cache.get_many("m", [b"k"])[b"k"], vec)
    cache.put_many("m", [(b"k2", vec)])
    assert set(cache.get_many("m", [b"k", b"k2"])) == {b"k", b"k2"}


@pytest.mark.parametrize("model", ["m", "", "bf09563cd7370584", "é-model"])
def test_the_read_checksum_is_the_stored_one(model: str) -> None:
    """get_many checks rows with `_Checksums` (the model part hashed once); each value equals
    `checksum`, the one put_many stores, for keys and vectors of several lengths, and
    differs when the model, the key or one bit of the vector does."""
    from sweep.common.sqlite import parts_key
    from sweep.embedding.cache import _Checksums, checksum

    rng = np.random.default_rng(5)
    check_of = _Checksums(model)
    for n in (0, 1, 3, 384, 1024):
        vec = rng.standard_normal(n).astype(np.float32).tobytes()
        key = rng.bytes(32)
        got = check_of(key, vec)
        assert got == checksum(model, key, vec) == parts_key(
            [model, key.hex(), vec.hex()])[:16]  # the layout by hand: hex strings, prefixed
        assert check_of(key, vec) == got  # the kept model part is not consumed
        assert _Checksums(model + "x")(key, vec) != got
        assert check_of(rng.bytes(32), vec) != got
        if n:
            flipped = bytearray(vec)
            flipped[0] ^= 1
            assert check_of(key, bytes(flipped)) != got
