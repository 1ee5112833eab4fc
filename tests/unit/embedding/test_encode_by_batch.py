"""Chunks are embedded one batch per model call (issue 14, item 3: one call over the 69k
chunks of a 52 MB document held every output and its stacked copy at once): the vectors are
bit for bit those of one call."""

from __future__ import annotations

import numpy as np

from helpers import DEMO
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus
from sweep.embedding.models import _load_sentence_transformer, encode_by_batch, resolve_model_path


class _Recorder:
    """A model whose vector of a text is (its length, its position in the input)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), i] for i, t in enumerate(texts)], dtype=np.float32)


def test_batches_are_cut_longest_first_and_rows_go_back_in_input_order() -> None:
    texts = ["bb", "a", "dddd", "ccc", "eeeee", "ff", "g"]
    model = _Recorder()
    out = encode_by_batch(model, texts, 3, False)
    assert [[len(t) for t in call] for call in model.calls] == [[5, 4, 3], [2, 2, 1], [1]]
    assert sorted(t for call in model.calls for t in call) == sorted(texts)
    assert out[:, 0].tolist() == [len(t) for t in texts]
    assert out.dtype == np.float32


def test_the_real_model_gives_the_vectors_of_one_call() -> None:
    docs = load_corpus(DEMO / "corpus")
    texts = [c.embed_text for c in chunk_corpus(docs, ChunkSpec("recursive", 48, 8, "path"),
                                                load_chunk_tokenizer("minilm"))][:240]
    lengths = [len(t) for t in texts]
    assert len(set(lengths)) < len(texts)  # texts of equal length: the sort's ties are covered
    model = _load_sentence_transformer(resolve_model_path("minilm"), "minilm")
    one = model.encode(texts, batch_size=8, normalize_embeddings=True, convert_to_numpy=True)
    got = encode_by_batch(model, texts, 8, False)
    assert got.dtype == np.float32 and got.shape == one.shape
    assert np.array_equal(got, one)
