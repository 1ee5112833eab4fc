"""Token starts on disk (issue 21): a warm process reads each document's starts instead of
tokenising it, and gets exactly the starts the tokenizer gives."""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from helpers import DEMO
from sweep.chunking.cache import TokenStartsCache, get_starts_cache
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus, corpus_token_starts
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus


class Counting:
    """A tokenizer that counts the documents it tokenises."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.name = inner.name  # type: ignore[attr-defined]
        self.fingerprint = inner.fingerprint  # type: ignore[attr-defined]
        self.calls = 0

    def token_starts(self, text: str) -> np.ndarray:
        self.calls += 1
        return self.inner.token_starts(text)  # type: ignore[attr-defined]


def test_second_pass_reads_every_document_and_cuts_the_same_chunks(tmp_path: Path) -> None:
    docs = load_corpus(DEMO / "corpus")
    tok = Counting(load_chunk_tokenizer("minilm"))
    cache = TokenStartsCache(tmp_path / "starts.sqlite")
    first = corpus_token_starts(docs, tok, cache)
    assert tok.calls == len(docs)
    second = corpus_token_starts(docs, tok, TokenStartsCache(tmp_path / "starts.sqlite"))
    assert tok.calls == len(docs)  # nothing tokenised again
    plain = [tok.inner.token_starts(d.text) for d in docs]
    assert all(np.array_equal(a, b) for a, b in zip(second, plain, strict=True))
    assert [a.dtype for a in second] == [a.dtype for a in first]
    spec = ChunkSpec("recursive", 40, 8, "path")
    assert chunk_corpus(docs, spec, tok.inner, second) == chunk_corpus(docs, spec, tok.inner)


def test_a_changed_document_and_another_tokenizer_are_tokenised(tmp_path: Path) -> None:
    docs = load_corpus(DEMO / "corpus")
    cache = get_starts_cache(tmp_path)
    minilm = Counting(load_chunk_tokenizer("minilm"))
    corpus_token_starts(docs, minilm, cache)
    edited = [dataclasses.replace(docs[0], text=docs[0].text + " one more sentence."), *docs[1:]]
    corpus_token_starts(edited, minilm, cache)
    assert minilm.calls == len(docs) + 1
    regex = Counting(load_chunk_tokenizer("regex"))
    got = corpus_token_starts(docs, regex, cache)
    assert regex.calls == len(docs)
    assert np.array_equal(got[0], regex.inner.token_starts(docs[0].text))
    assert not np.array_equal(got[0], minilm.inner.token_starts(docs[0].text))
    assert cache.count() == 2 * len(docs) + 1


@pytest.mark.parametrize("damage", ["unsorted", "past_the_end", "torn"])
def test_a_damaged_row_is_tokenised_again_with_a_warning(
        tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture) -> None:
    docs = load_corpus(DEMO / "corpus")[:2]
    tok = Counting(load_chunk_tokenizer("minilm"))
    path = tmp_path / "starts.sqlite"
    good = corpus_token_starts(docs, tok, TokenStartsCache(path))
    bad = good[0].copy()
    if damage == "unsorted":
        bad[[1, 2]] = bad[[2, 1]]
    elif damage == "past_the_end":
        bad[-1] = len(docs[0].text)
    blob = bad.tobytes()[:-2] if damage == "torn" else bad.tobytes()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE token_starts SET starts = ? WHERE n = ?", (blob, len(bad)))
    with caplog.at_level(logging.WARNING):
        again = corpus_token_starts(docs, tok, TokenStartsCache(path))
    assert "fail their check" in caplog.text
    assert tok.calls == len(docs) + 1
    assert all(np.array_equal(a, b) for a, b in zip(again, good, strict=True))
    # the fresh starts replaced the damaged row
    corpus_token_starts(docs, tok, TokenStartsCache(path))
    assert tok.calls == len(docs) + 1


def test_fingerprints_tell_tokenizers_apart() -> None:
    names = ["minilm", "regex", "cl100k"]
    prints = {load_chunk_tokenizer(n).fingerprint for n in names}
    assert len(prints) == len(names) and all(prints)
