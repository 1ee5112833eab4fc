"""The on-disk embedding cache: round trip, no duplicates, concurrent writers."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import numpy as np
import pytest

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


class _FakeModel:
    """Counts what reaches the 'model': texts encoded and texts tokenised."""

    max_seq_length = 4

    def __init__(self) -> None:
        self.encoded: list[str] = []
        self.tokenised: list[str] = []

    def get_embedding_dimension(self) -> int:
        return 8

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.encoded += texts
        return np.stack([_vec(len(t)) for t in texts])

    def tokenizer(self, texts: list[str], **_: object) -> dict[str, list[list[int]]]:
        self.tokenised += texts
        return {"input_ids": [[0] * (len(t.split()) + 2) for t in texts]}


@pytest.fixture
def fake_embedder(monkeypatch: pytest.MonkeyPatch):
    import sweep.embedding.models as emb

    models: list[_FakeModel] = []

    def load(path: str, name: str) -> _FakeModel:
        models.append(_FakeModel())
        return models[-1]

    monkeypatch.setattr(emb, "_load_sentence_transformer", load)
    return lambda: (emb.Embedder(emb.EmbeddingSpec(name="fake-model")), models[-1])


def test_token_lengths_are_tokenised_once_then_read_from_disk(tmp_path: Path,
                                                              fake_embedder) -> None:
    texts = ["one two", "one two three four five", "one two"]
    first, model = fake_embedder()
    first.cache = EmbeddingCache(tmp_path / "e.sqlite")
    assert first.token_lengths(texts) == [4, 7, 4]
    assert model.tokenised == ["one two", "one two three four five"]
    assert first.token_lengths(texts[:2]) == [4, 7] and len(model.tokenised) == 2  # memory
    # A new process (new embedder, same fingerprint): lengths come from the disk cache.
    second, model2 = fake_embedder()
    assert second.fingerprint == first.fingerprint
    second.cache = EmbeddingCache(tmp_path / "e.sqlite")
    assert second.token_lengths([*texts, "new text here"]) == [4, 7, 4, 5]
    assert model2.tokenised == ["new text here"]


def test_timed_queries_time_each_question_once_after_two_untimed_warmups(fake_embedder
                                                                         ) -> None:
    embedder, model = fake_embedder()
    out = embedder.timed_queries(["q1", "q22", "q333"])
    # Two warm-up calls, then one timed call per question.
    assert model.encoded == ["q1", "q22", "q1", "q22", "q333"]
    assert [len(v) for v, _ in out] == [8, 8, 8] and all(ms >= 0 for _, ms in out)
    again = embedder.timed_queries(["q333", "q1", "q4444"])
    assert model.encoded[5:] == ["q4444", "q4444"]  # only the new question: warm-up + timed
    assert again[0][1] == out[2][1] and again[1][1] == out[0][1]  # the same measurements
    np.testing.assert_array_equal(again[2][0], _vec(5))
