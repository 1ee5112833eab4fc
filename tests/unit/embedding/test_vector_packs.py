"""`sweep.embedding.cache`'s packs: a whole read kept as one file, served back equal to the
rows, never trusted when damaged, bounded, and emptied with the cache."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from sweep.common.sqlite import text_key
from sweep.embedding import cache as ec
from sweep.embedding.cache import PACKS_FOLDER, EmbeddingCache


def _filled(tmp_path: Path, n: int, dim: int = 8, model: str = "m") -> tuple[
        EmbeddingCache, list[bytes], np.ndarray]:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    keys = [text_key(f"text {i}") for i in range(n)]
    vecs = np.random.default_rng(n).standard_normal((n, dim)).astype(np.float32)
    cache.put_many(model, list(zip(keys, vecs, strict=True)))
    return cache, keys, vecs


def _packs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / PACKS_FOLDER).glob("*.f32"))


@pytest.fixture(autouse=True)
def small_packs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ec, "PACK_MIN_KEYS", 5)


def test_a_complete_read_is_packed_and_the_pack_gives_the_rows_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, keys, vecs = _filled(tmp_path, 12)
    asked = keys[3:10][::-1]  # not the stored order
    first = cache.get_many("m", asked)
    [pack] = _packs(tmp_path)
    assert pack.stat().st_size == 32 + 7 * 8 * 4  # the seal, then the rows
    # the next read of the same keys is the pack alone: the database is not asked
    monkeypatch.setattr(cache, "_get_rows", lambda *a: pytest.fail("rows read"))
    second = cache.get_many("m", asked)
    assert list(second) == asked
    for k in asked:
        assert second[k].dtype == np.float32
        assert second[k].tobytes() == first[k].tobytes() == vecs[keys.index(k)].tobytes()


def test_no_pack_for_a_partial_or_small_read_or_another_model(tmp_path: Path) -> None:
    cache, keys, _ = _filled(tmp_path, 12)
    missing = text_key("never stored")
    assert len(cache.get_many("m", [*keys[:6], missing])) == 6  # one key not there
    assert len(cache.get_many("m", keys[:4])) == 4  # under PACK_MIN_KEYS
    assert cache.get_many("other", keys[:6]) == {}
    assert _packs(tmp_path) == []
    cache.get_many("m", keys[:6])
    cache.get_many("m", keys[:7])  # another set of keys: its own pack
    assert len(_packs(tmp_path)) == 2


@pytest.mark.parametrize("damage", ["flip", "cut", "empty"])
def test_a_damaged_pack_is_dropped_and_the_rows_are_read(
        tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    cache, keys, vecs = _filled(tmp_path, 12)
    cache.get_many("m", keys)
    [pack] = _packs(tmp_path)
    raw = bytearray(pack.read_bytes())
    if damage == "flip":
        raw[-1] ^= 1  # one bit of the last vector
    elif damage == "cut":
        raw = raw[:-4]
    else:
        raw = bytearray()
    pack.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING):
        got = cache.get_many("m", keys)
    assert any("damaged" in r.getMessage() for r in caplog.records)
    assert all(got[k].tobytes() == vecs[i].tobytes() for i, k in enumerate(keys))
    # read from the rows again, and packed again from them
    assert pack.read_bytes() != bytes(raw)
    assert cache.get_many("m", keys)[keys[0]].tobytes() == vecs[0].tobytes()


def test_a_pack_of_another_model_under_this_name_is_not_used(tmp_path: Path) -> None:
    """The seal covers the model: a pack renamed to another read's name fails it."""
    cache, keys, vecs = _filled(tmp_path, 12)
    cache.put_many("m2", list(zip(keys, -vecs, strict=True)))
    cache.get_many("m2", keys)
    [other] = _packs(tmp_path)
    cache.get_many("m", keys)
    [mine] = [p for p in _packs(tmp_path) if p != other]
    mine.write_bytes(other.read_bytes())
    got = cache.get_many("m", keys)
    assert all(got[k].tobytes() == vecs[i].tobytes() for i, k in enumerate(keys))


def test_packs_past_the_budget_go_oldest_read_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    cache, keys, _ = _filled(tmp_path, 12)
    size = 32 + 6 * 8 * 4
    monkeypatch.setattr(ec, "PACK_BUDGET_BYTES", 2 * size)
    cache.get_many("m", keys[0:6])
    a = _packs(tmp_path)[0]
    os.utime(a, ns=(1, 1_000_000_000))
    cache.get_many("m", keys[6:12])
    [b] = [p for p in _packs(tmp_path) if p != a]
    os.utime(b, ns=(1, 2_000_000_000))
    cache.get_many("m", keys[0:6])  # a read again: now the latest
    cache.get_many("m", keys[3:9])  # a third pack: b, read longest ago, goes
    assert a in _packs(tmp_path) and b not in _packs(tmp_path)
    assert len(_packs(tmp_path)) == 2


def test_clear_empties_the_packs(tmp_path: Path) -> None:
    cache, keys, _ = _filled(tmp_path, 12)
    cache.get_many("m", keys)
    assert _packs(tmp_path)
    assert cache.clear() == 12
    assert _packs(tmp_path) == []
    assert cache.get_many("m", keys) == {}


def test_a_read_completed_by_put_many_is_packed(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`tiered`'s order: the read misses some keys, the model makes them, put_many stores
    exactly those; the pack then holds the read's every vector as the rows hold them."""
    cache, keys, _ = _filled(tmp_path, 6)
    new = [text_key(f"new {i}") for i in range(4)]
    made = np.random.default_rng(9).standard_normal((4, 8))  # float64: stored as float32
    asked = [*keys, *new]
    assert len(cache.get_many("m", asked)) == 6 and _packs(tmp_path) == []
    cache.put_many("m", list(zip(new, made, strict=True)))
    assert len(_packs(tmp_path)) == 1
    rows = cache._get_rows("m", asked)
    monkeypatch.setattr(cache, "_get_rows", lambda *a: pytest.fail("rows read"))
    got = cache.get_many("m", asked)
    assert all(got[k].tobytes() == rows[k].tobytes() for k in asked)
    assert got[new[0]].tobytes() == made[0].astype(np.float32).tobytes()


def test_no_pack_when_put_many_stores_other_keys_or_a_read_came_between(
        tmp_path: Path) -> None:
    cache, keys, _ = _filled(tmp_path, 6)
    new = [text_key(f"new {i}") for i in range(4)]
    vec = np.ones(8, dtype=np.float32)
    cache.get_many("m", [*keys, *new])
    cache.put_many("m", [(new[0], vec)])  # not every missing key
    cache.get_many("m", [*keys, *new])
    cache.get_many("m", keys[:2])  # another read: the first is no longer pending
    cache.put_many("m", [(k, vec) for k in new])
    assert _packs(tmp_path) == []
    newer = [text_key(f"newer {i}") for i in range(4)]
    cache.get_many("m", [*keys, *newer])
    cache.put_many("other", [(k, vec) for k in newer])  # another model's rows
    assert _packs(tmp_path) == []
