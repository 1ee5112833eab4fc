"""Chunkings that differ only in chunk.header share their cuts (issue 21: a sweep over
header=none,path cuts each chunking once): chunks built from another header's spans are the
chunks cut from scratch, for every boundary."""

from __future__ import annotations

import dataclasses

import pytest

from helpers import DEMO
from sweep.chunking.chunkers import (
    BOUNDARIES,
    HEADERS,
    ChunkSpec,
    chunk_corpus,
    corpus_spans,
    corpus_token_starts,
)
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_spans_of_one_header_cut_every_header(boundary: str) -> None:
    docs = load_corpus(DEMO / "corpus")
    tok = load_chunk_tokenizer("minilm")
    starts = corpus_token_starts(docs, tok)
    spec = ChunkSpec(boundary, 40, 8, "none")
    spans = corpus_spans(docs, spec, tok, starts)
    assert sum(map(len, spans)) > len(docs)  # several chunks a document
    for header in HEADERS:
        other = dataclasses.replace(spec, header=header)
        fresh = chunk_corpus(docs, other, tok, starts)
        assert chunk_corpus(docs, other, tok, starts, spans) == fresh
        assert [(c.start, c.end) for c in fresh] == [s for doc in spans for s in doc]
