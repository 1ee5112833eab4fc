"""embedding.long_text=window_mean: a text longer than the model's window is embedded as the
normalised mean of the vectors of its consecutive windows; truncate (the default) is what the
model does on its own, and stays out of every key."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from sweep.embedding.models import mean_by_owner, token_windows


def test_token_windows_hand_computed() -> None:
    # "ab cd ef gh ij": five tokens of two characters, a blank between each
    offsets = [(0, 2), (3, 5), (6, 8), (9, 11), (12, 14)]
    assert token_windows(offsets, 2) == [(0, 5), (6, 11), (12, 14)]
    assert token_windows(offsets, 5) == [(0, 14)]
    assert token_windows(offsets, 9) == [(0, 14)]
    assert token_windows([], 3) == []


def test_mean_by_owner_hand_computed() -> None:
    vecs = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    out = mean_by_owner(vecs, [0, 0, 1], 2)
    # text 0: mean (0.5, 0.5), normalised; text 1: one window, its own vector bit for bit
    assert out[0] == pytest.approx([2 ** -0.5, 2 ** -0.5])
    assert out[1].tobytes() == vecs[2].tobytes()


def _unit(text: str) -> np.ndarray:
    """A stand-in model's vector: one per text, unit length, different for different texts."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    v = np.random.default_rng(seed).standard_normal(8)
    return (v / np.linalg.norm(v)).astype(np.float32)


class _Tokenizer:
    """One token per blank-separated word, two special tokens (as BERT's [CLS] and [SEP])."""

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return 2

    def __call__(self, texts, add_special_tokens=True, return_offsets_mapping=False, **_):
        one = isinstance(texts, str)
        out_ids, out_offsets = [], []
        for text in [texts] if one else texts:
            offsets, pos = [], 0
            for word in text.split():
                start = text.index(word, pos)
                offsets.append((start, start + len(word)))
                pos = start + len(word)
            out_ids.append([0] * (len(offsets) + (2 if add_special_tokens else 0)))
            out_offsets.append(offsets)
        out = {"input_ids": out_ids[0] if one else out_ids}
        if return_offsets_mapping:
            out["offset_mapping"] = out_offsets[0] if one else out_offsets
        return out


class _Model:
    max_seq_length = 6  # four words and the two special tokens

    def __init__(self) -> None:
        self.tokenizer = _Tokenizer()
        self.encoded: list[str] = []

    def get_embedding_dimension(self) -> int:
        return 8

    def encode(self, texts, **_):
        self.encoded += texts
        return np.stack([_unit(t) for t in texts])


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch):
    import sweep.embedding.models as emb

    monkeypatch.setattr(emb, "_load_sentence_transformer", lambda path, name: _Model())
    monkeypatch.setattr(emb, "declared_max_seq_length", lambda path, family: (True, 6))

    def make(long_text: str, prefix: str = ""):
        e = emb.LocalEmbedder(emb.EmbeddingSpec(name="fake-model", long_text=long_text,
                                                document_prefix=prefix))
        return e

    return make


LONG = "w1 w2 w3 w4  w5 w6\nw7 w8 w9 w10"
SHORT = "only three words"


def test_window_mean_is_the_normalised_mean_of_the_windows(embedder) -> None:
    e = embedder("window_mean")
    long_vec, short_vec = e.encode([LONG, SHORT], progress=False)
    windows = ["w1 w2 w3 w4", "w5 w6\nw7 w8", "w9 w10"]
    want = np.mean([_unit(w) for w in windows], axis=0)
    assert long_vec == pytest.approx(want / np.linalg.norm(want), abs=1e-6)
    assert np.linalg.norm(long_vec) == pytest.approx(1.0, abs=1e-6)
    assert short_vec.tobytes() == _unit(SHORT).tobytes()  # read whole: its own vector
    assert sorted(e.model.encoded) == sorted([*windows, SHORT])


def test_window_mean_puts_the_document_prefix_on_each_window(embedder) -> None:
    # the prefix takes a token of each window's room: three words per window
    e = embedder("window_mean", prefix="doc: ")
    (vec,) = e.encode([LONG], progress=False)
    windows = ["doc: w1 w2 w3", "doc: w4  w5 w6", "doc: w7 w8 w9", "doc: w10"]
    want = np.mean([_unit(w) for w in windows], axis=0)
    assert vec == pytest.approx(want / np.linalg.norm(want), abs=1e-6)


def test_truncate_leaves_the_text_to_the_model_and_keys_apart(embedder) -> None:
    cut, mean = embedder("truncate"), embedder("window_mean")
    (vec,) = cut.encode([LONG], progress=False)
    assert vec.tobytes() == _unit(LONG).tobytes() and cut.model.encoded == [LONG]
    # vectors of the two modes never share a cache entry; truncate's key is the one every
    # cache held before the setting existed (the same formula, nothing added)
    assert cut.fingerprint != mean.fingerprint
    assert embedder("truncate").fingerprint == cut.fingerprint


def test_queries_are_not_windowed(embedder) -> None:
    e = embedder("window_mean")
    (vec,) = e.encode([LONG], query=True, progress=False)
    assert vec.tobytes() == _unit(LONG).tobytes()
