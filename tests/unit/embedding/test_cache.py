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
