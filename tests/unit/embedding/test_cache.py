"""The on-disk embedding cache: round trip, no duplicates, concurrent writers, token lengths."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np

from sweep.common.sqlite import text_key
from sweep.embedding.cache import EmbeddingCache


def _vec(i: int) -> np.ndarray:
    return np.full(8, i, dtype=np.float32) / (8**0.5 * max(i, 1))


def test_round_trip_and_models_kept_apart(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    keys = [text_key(f"text {i}") for i in range(3)]
    assert cache.get_many("m1", keys) == {}
    assert cache.put_many("m1", [(k, _vec(i)) for i, k in enumerate(keys)]) == 3
    got = cache.get_many("m1", keys + keys)  # duplicates asked for are fine
    assert set(got) == set(keys)
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(got[k], _vec(i))
    assert cache.get_many("m2", keys) == {}
    cache.put_many("m1", [(keys[0], _vec(99))])  # first write wins: same key, same text
    np.testing.assert_array_equal(cache.get_many("m1", keys[:1])[keys[0]], _vec(0))
    info = cache.info()
    assert info["vectors"] == 3 and info["models"]["m1"]["vectors"] == 3
    assert cache.clear() == 3 and cache.info()["vectors"] == 0


def test_text_key_is_sha256_of_the_exact_text() -> None:
    assert text_key("a") != text_key("a ")
    assert len(text_key("x")) == 32


def _writer(path: str, start: int, stop: int) -> None:
    cache = EmbeddingCache(path)
    for lo in range(start, stop, 25):
        items = [(text_key(f"text {i}"), _vec(i)) for i in range(lo, min(lo + 25, stop))]
        cache.put_many("model", items)
    cache.close()


def test_two_processes_writing_overlapping_keys(tmp_path: Path) -> None:
    path = str(tmp_path / "e.sqlite")
    EmbeddingCache(path).close()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 0, 600)),
             ctx.Process(target=_writer, args=(path, 300, 900))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = EmbeddingCache(path)
    keys = [text_key(f"text {i}") for i in range(900)]
    got = cache.get_many("model", keys)
    assert len(got) == 900
    for i, k in enumerate(keys):
        np.testing.assert_array_equal(got[k], _vec(i))
    assert cache.info()["vectors"] == 900


def test_token_lengths_round_trip_and_clear(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    keys = [text_key(f"text {i}") for i in range(3)]
    assert cache.get_lengths("m1", keys) == {}
    assert cache.put_lengths("m1", [(k, 10 + i) for i, k in enumerate(keys)]) == 3
    assert cache.get_lengths("m1", keys + keys[:1]) == {k: 10 + i for i, k in enumerate(keys)}
    assert cache.get_lengths("m2", keys) == {}
    cache.put_many("m1", [(keys[0], _vec(1))])
    assert cache.info()["token_lengths"] == 3
    assert cache.clear() == 1
    assert cache.get_lengths("m1", keys) == {}


