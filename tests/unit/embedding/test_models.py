"""The embedder around a stand-in model: token lengths tokenised once then read from the disk cache, live-query timing (warm-ups untimed, each question timed once)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sweep.embedding.cache import EmbeddingCache


def _vec(i: int) -> np.ndarray:
    return np.full(8, i, dtype=np.float32) / (8**0.5 * max(i, 1))


class _FakeModel:
    """Counts what reaches the 'model': texts encoded and texts tokenised."""

    max_seq_length = 4

    def __init__(self) -> None:
        self.encoded: list[str] = []
        self.tokenised: list[str] = []
        self.clock = 0.0  # seconds; encoding a text of n characters "takes" n ms

    def get_embedding_dimension(self) -> int:
        return 8

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.encoded += texts
        self.clock += sum(len(t) for t in texts) / 1000.0
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
    return lambda: (emb.LocalEmbedder(emb.EmbeddingSpec(name="fake-model")), models[-1])


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


def test_timed_queries_time_each_question_once_after_two_untimed_warmups(
        fake_embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import sweep.embedding.models as emb

    embedder, model = fake_embedder()
    # The model's own clock: a timed call must measure exactly that question's encoding.
    monkeypatch.setattr(emb, "time", SimpleNamespace(perf_counter=lambda: model.clock))
    out = embedder.timed_queries(["q1", "q22", "q333"])
    # Two warm-up calls, then one timed call per question.
    assert model.encoded == ["q1", "q22", "q1", "q22", "q333"]
    assert [len(v) for v, _ in out] == [8, 8, 8]
    assert [ms for _, ms in out] == pytest.approx([2.0, 3.0, 4.0])  # len(question) ms each
    again = embedder.timed_queries(["q333", "q1", "q4444"])
    assert model.encoded[5:] == ["q4444", "q4444"]  # only the new question: warm-up + timed
    assert again[0][1] == out[2][1] and again[1][1] == out[0][1]  # the same measurements
    assert again[2][1] == pytest.approx(5.0)
    np.testing.assert_array_equal(again[2][0], _vec(5))
