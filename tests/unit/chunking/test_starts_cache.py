"""Token starts on disk (issue 21): the cache's round trips, re-tokenising a changed document or
a damaged row, are in the backend suite (tests/cache_suite.py, run on SQLite by
tests/unit/embedding/test_cache.py and on PostgreSQL by tests/e2e/test_cache_postgres.py)."""

from __future__ import annotations

from sweep.chunking.tokenizers import load_chunk_tokenizer


def test_fingerprints_tell_tokenizers_apart() -> None:
    names = ["minilm", "regex", "cl100k"]
    prints = {load_chunk_tokenizer(n).fingerprint for n in names}
    assert len(prints) == len(names) and all(prints)
