"""The embedding, token-starts, chunk-spans and parse caches on the SQLite backend (one file per
cache in cache.dir): the shared suite (tests/cache_suite.py; tests/e2e/test_cache_postgres.py
runs it on PostgreSQL), and what only the keys need."""

from __future__ import annotations

from pathlib import Path

import pytest

from cache_suite import *  # noqa: F403  (the suite's tests, collected here)
from sweep.common.sqlite import text_key
from sweep.common.store import CacheTarget


@pytest.fixture
def target(tmp_path: Path) -> CacheTarget:
    return CacheTarget(tmp_path / "cache")


def test_text_key_is_sha256_of_the_exact_text() -> None:
    assert text_key("a") != text_key("a ")
    assert len(text_key("x")) == 32


def test_a_file_path_still_opens_one_sqlite_file(tmp_path: Path) -> None:
    from sweep.embedding.cache import EmbeddingCache

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cache.put_lengths("m", [(text_key("a"), 3)])
    assert (tmp_path / "e.sqlite").is_file() and cache.folder == tmp_path
    assert EmbeddingCache(tmp_path / "e.sqlite").get_lengths("m", [text_key("a")]) == {
        text_key("a"): 3}


def test_checksum_is_the_parts_key_of_the_hex_forms() -> None:
    """The checksum stored with every cached vector: written without the hex strings, still
    sha256 of the length-prefixed (model, key hex, vector hex), first 16 bytes (the form
    cache files were written with)."""
    import hashlib

    import numpy as np

    from sweep.common.sqlite import parts_key
    from sweep.embedding.cache import checksum

    rng = np.random.default_rng(5)
    for model, n in [("bf09563cd7370584", 384), ("modèle ü", 3), ("", 0)]:
        key = text_key(f"text {n}")
        vector = rng.standard_normal(n).astype(np.float32).tobytes()
        assert checksum(model, key, vector) == parts_key([model, key.hex(), vector.hex()])[:16]
    by_hand = hashlib.sha256(
        (1).to_bytes(8, "big") + b"m" + (4).to_bytes(8, "big") + b"00ff"
        + (2).to_bytes(8, "big") + b"0a").digest()[:16]
    assert checksum("m", b"\x00\xff", b"\n") == by_hand


def test_text_keys_memo_gives_text_key_and_starts_afresh_past_its_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from sweep.embedding import cache

    monkeypatch.setattr(cache, "_KEYS", {})
    monkeypatch.setattr(cache, "_key_chars", 0)
    monkeypatch.setattr(cache, "KEY_MEMO_CHARS", 10)
    texts = ["abcd", "é", "abcd", "abcdefg", "", "xyzxyzxyz", "abcd"]
    assert cache.text_keys(texts) == [text_key(t) for t in texts]
    # budget 10: "abcdefg" (5 + 7 held) and "xyzxyzxyz" and the last "abcd" each cleared it
    assert {"abcd": text_key("abcd")} == cache._KEYS and cache._key_chars == 4
    # a text longer than the whole budget is still keyed right, and held until the next
    assert cache.text_keys(["z" * 50]) == [text_key("z" * 50)]
    assert list(cache._KEYS) == ["z" * 50] and cache._key_chars == 50
    assert cache.text_keys(["abcd"]) == [text_key("abcd")] and cache._key_chars == 4
