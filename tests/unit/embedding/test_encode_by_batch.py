"""Chunks are embedded one batch per model call (issue 14, item 3: one call over the 69k
chunks of a 52 MB document held every output and its stacked copy at once): the vectors are
bit for bit those of one call; with token lengths, batches hold texts of one length (issue 21)."""

from __future__ import annotations

import itertools

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


def test_with_lengths_batches_are_cut_by_tokens_longest_first() -> None:
    texts = ["bb", "a", "dddd", "ccc", "eeeee", "ff", "g"]
    tokens = [9, 1, 2, 7, 3, 7, 5]  # not the order of the characters
    model = _Recorder()
    out = encode_by_batch(model, texts, 3, False, tokens)
    assert model.calls == [["bb", "ccc", "ff"], ["g", "eeeee", "dddd"], ["a"]]
    assert out[:, 0].tolist() == [len(t) for t in texts]  # rows back in input order


def test_an_embedder_sends_batches_of_one_token_length() -> None:
    """COVID-like text: characters per token vary, so batches cut by characters mix lengths.
    The embedder's batches are non-increasing in tokens read, batch after batch, and each
    vector is the model's own for that batch; against one call the vectors agree to float
    rounding."""
    from sweep.embedding.models import EmbeddingSpec, LocalEmbedder

    docs = load_corpus(DEMO / "corpus")
    texts = [c.embed_text for c in chunk_corpus(docs, ChunkSpec("recursive", 48, 8, "path"),
                                                load_chunk_tokenizer("minilm"))][:200]
    texts += ["12.5 ± 0.3 mg/kg (p<0.01) " * k for k in range(1, 12)]  # many tokens a char
    emb = LocalEmbedder(EmbeddingSpec(batch_size=16))
    model = emb.model
    calls: list[list[str]] = []
    real = model.encode

    def spy(batch: list[str], **kw: object) -> np.ndarray:
        calls.append(list(batch))
        return real(batch, **kw)

    model.encode = spy  # type: ignore[method-assign]
    got = emb.encode(texts, progress=False)
    limit = emb.max_seq_length
    read = [[min(n, limit) for n in emb.token_lengths(c)] for c in calls]
    assert sum(map(len, calls)) == len(texts)
    assert all(min(a) >= max(b) for a, b in itertools.pairwise(read))
    by_chars = sorted(texts, key=len, reverse=True)
    chars_read = [[min(n, limit) for n in emb.token_lengths(by_chars[i:i + 16])]
                  for i in range(0, len(texts), 16)]
    # the point of it: fewer padded tokens than sentence-transformers' character order
    assert (sum(max(b) * len(b) for b in read)
            < sum(max(b) * len(b) for b in chars_read))
    model.encode = real  # type: ignore[method-assign]
    one = real(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    assert np.allclose(got, one, atol=2e-6, rtol=0)
    for batch in calls:
        idx = [texts.index(t) for t in batch]
        alone = real(batch, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
        assert np.array_equal(got[idx], alone)
