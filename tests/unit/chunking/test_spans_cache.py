"""Chunk spans kept in the token starts cache (issue 21): read back, they are the spans the
chunker cuts, for every tiling boundary; anything a cut depends on changes the key; a damaged
row is cut again with a warning; other tools' boundaries are never cached."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from helpers import DEMO
from sweep.chunking import chunkers
from sweep.chunking.cache import get_starts_cache
from sweep.chunking.chunkers import (
    TILING_BOUNDARIES,
    ChunkSpec,
    corpus_spans,
    corpus_token_starts,
    spans_key,
)
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus


@pytest.fixture(scope="module")
def corpus():
    docs = load_corpus(DEMO / "corpus")
    tok = load_chunk_tokenizer("minilm")
    return docs, tok, corpus_token_starts(docs, tok)


@pytest.mark.parametrize("boundary", TILING_BOUNDARIES)
@pytest.mark.parametrize(("size", "overlap"), [(48, 0), (128, 16)])
def test_cached_spans_are_the_cut_spans(tmp_path: Path, corpus, boundary: str, size: int,
                                        overlap: int, monkeypatch: pytest.MonkeyPatch) -> None:
    docs, tok, starts = corpus
    spec = ChunkSpec(boundary, size, overlap, "none")
    expected = corpus_spans(docs, spec, tok, starts)
    cache = get_starts_cache(tmp_path)
    assert corpus_spans(docs, spec, tok, starts, cache) == expected  # cut, then written
    assert cache.count_spans() == len({spans_key(d, spec, tok.fingerprint) for d in docs})

    def no_cutting(*args, **kwargs):
        raise AssertionError("cut again")

    monkeypatch.setattr(chunkers, "chunk_spans", no_cutting)
    assert corpus_spans(docs, spec, tok, starts, cache) == expected  # read back


def test_the_key_follows_what_a_cut_depends_on(corpus) -> None:
    docs, tok, _ = corpus
    doc = docs[0]
    spec = ChunkSpec("recursive", 48, 0, "none")
    key = spans_key(doc, spec, tok.fingerprint)
    assert spans_key(doc, ChunkSpec("recursive", 48, 0, "path"), tok.fingerprint) == key
    others = [
        spans_key(replace(doc, text=doc.text + " "), spec, tok.fingerprint),
        spans_key(replace(doc, sections=doc.sections[1:]), spec, tok.fingerprint),
        spans_key(replace(doc, pages=(0, 10)), spec, tok.fingerprint),
        spans_key(doc, ChunkSpec("heading", 48, 0, "none"), tok.fingerprint),
        spans_key(doc, ChunkSpec("recursive", 64, 0, "none"), tok.fingerprint),
        spans_key(doc, ChunkSpec("recursive", 48, 8, "none"), tok.fingerprint),
        spans_key(doc, spec, load_chunk_tokenizer("regex").fingerprint),
    ]
    assert len({key, *others}) == len(others) + 1


def test_other_tools_boundaries_are_not_cached(tmp_path: Path, corpus) -> None:
    docs, tok, starts = corpus
    cache = get_starts_cache(tmp_path)
    corpus_spans(docs, ChunkSpec("token_text", 48, 0, "none"), tok, starts, cache)
    assert cache.count_spans() == 0
