"""BM25 is built from 4-byte word ids (issue 14, item 3): the scores are exactly those of the
word lists both backends were given before, on the demo corpus and its questions."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import DEMO
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.retrieval.bm25 import BM25Index, query_tokens, stopwords_for, token_ids, tokenize


def _texts() -> list[str]:
    docs = load_corpus(DEMO / "corpus")
    chunks = chunk_corpus(docs, ChunkSpec("recursive", 48, 8, "path"),
                          load_chunk_tokenizer("minilm"))
    return [c.embed_text for c in chunks]


def _questions() -> list[str]:
    return [i.question for i in load_golden(DEMO / "golden.jsonl").items] + [
        "refund refund", "nothing here zzzz", "the of and"]


def test_token_ids_spell_out_the_same_words_in_order() -> None:
    texts = ["The refund window, the REFUND window!", "", "ERR_4021 on KT-200 café"]
    ids, vocab = token_ids(texts, stopwords_for("english"))
    words = list(vocab)
    assert [[words[i] for i in doc] for doc in ids] == [tokenize(t) for t in texts]
    assert vocab == {"refund": 0, "window": 1, "err_4021": 2, "kt": 3, "200": 4, "café": 5}
    assert [d.itemsize for d in ids] == [4, 4, 4]


@pytest.mark.parametrize("stopwords", ["english", "none"])
def test_bm25s_from_ids_scores_exactly_as_from_word_lists(stopwords: str) -> None:
    import bm25s

    texts = _texts()
    assert len(texts) > 50
    stop = stopwords_for(stopwords)
    # The earlier construction: bm25s indexes the word lists itself.
    ref = bm25s.BM25(k1=1.2, b=0.6, method="robertson", dtype="float64")
    ref.index([tokenize(t, stop) for t in texts], show_progress=False)
    ours = BM25Index(texts, k1=1.2, b=0.6, backend="bm25s", stopwords=stopwords)
    for q in _questions():
        known = [t for t in query_tokens(q, stop) if t in ref.vocab_dict]
        expected = (np.asarray(ref.get_scores(known), dtype=np.float64) * 2.2 if known
                    else np.zeros(len(texts)))
        assert np.array_equal(ours.scores(q), expected), q


def test_rank_bm25_from_ids_scores_exactly_as_from_word_lists() -> None:
    from rank_bm25 import BM25Okapi

    texts = _texts()
    ref = BM25Okapi([tokenize(t) for t in texts], k1=1.5, b=0.75, epsilon=0.0)
    ours = BM25Index(texts, backend="rank_bm25")
    for q in _questions():
        expected = np.asarray(ref.get_scores(query_tokens(q)), dtype=np.float64)
        assert np.array_equal(ours.scores(q), expected), q
