"""Chunkings that differ only in chunk.header share their cuts (issue 21: a sweep over
header=none,path cuts each chunking once): chunks built from another header's spans are the
chunks cut from scratch, for every boundary."""

from __future__ import annotations

import bisect
import dataclasses

import pytest

from helpers import DEMO
from sweep.chunking.chunkers import (
    BOUNDARIES,
    BOUNDARY,
    HEADERS,
    Chunk,
    ChunkSpec,
    chunk_corpus,
    chunks_from_spans,
    corpus_spans,
    corpus_token_starts,
    header_for,
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


@pytest.mark.parametrize("header", HEADERS)
def test_chunks_from_spans_fields_by_hand(header: str) -> None:
    """Each chunk's fields worked out one by one from its span (`bisect` on the token starts,
    the section the span starts in, that section's header), against `chunks_from_spans`'
    batched token counts and per-section headers; sizes small enough that some chunks are
    oversize (read against a size below the one cut with) and every demo document has
    several sections."""
    docs = load_corpus(DEMO / "corpus")
    tok = load_chunk_tokenizer("minilm")
    starts = corpus_token_starts(docs, tok)
    spec = ChunkSpec("recursive", 12, 0, header)
    spans = corpus_spans(docs, spec, tok, starts)
    seen_oversize = 0
    for doc, doc_starts, doc_spans in zip(docs, starts, spans, strict=True):
        chunks = chunks_from_spans(doc, doc_starts, dataclasses.replace(spec, size=8),
                                   doc_spans)
        assert len(chunks) == len(doc_spans)
        ticks = doc_starts.tolist()
        for ordinal, (chunk, (a, b)) in enumerate(zip(chunks, doc_spans, strict=True)):
            n = bisect.bisect_left(ticks, b) - bisect.bisect_left(ticks, a)
            inside = [s for s in doc.sections if s.start <= a]
            path = inside[-1].heading_path if inside else ()
            head = header_for(doc, path, header)
            assert chunk == Chunk(f"{doc.doc_id}#{ordinal}", doc.doc_id, ordinal, a, b,
                                  doc.text[a:b], f"{head}\n\n{doc.text[a:b]}" if head
                                  else doc.text[a:b], n, path, n > 8)
            assert type(chunk.n_tokens) is int and type(chunk.oversize) is bool
            seen_oversize += chunk.oversize
    assert 0 < seen_oversize < sum(map(len, spans))
    assert chunks_from_spans(docs[0], starts[0], spec, []) == []


def test_boundaries_that_cut_alike_share_one_chunk_list(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """The process memo chunks equal spans once: a heading split of a corpus without
    headings is a recursive split, so those two chunkings are one list (equal to each cut
    from scratch); a boundary that cuts otherwise, or another header, is its own list."""
    from sweep.chunking import chunkers
    from sweep.data.corpus import corpus_fingerprint
    from sweep.pipeline import memo

    docs = [dataclasses.replace(d, sections=()) for d in load_corpus(DEMO / "corpus")]
    fp = corpus_fingerprint(docs)
    tok = load_chunk_tokenizer("minilm")
    starts = corpus_token_starts(docs, tok)
    made: list[ChunkSpec] = []
    real = chunkers.chunk_corpus

    def counting(docs_: list, spec: ChunkSpec, *args: object) -> list:
        made.append(spec)
        return real(docs_, spec, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(memo, "chunk_corpus", counting)
    memo.clear_memo()
    try:
        got = {(b, h): memo.chunks_for(docs, fp, ChunkSpec(b, 40, 0, h), "minilm")
               for b in ("recursive", "heading", "fixed") for h in ("none", "path")}
    finally:
        memo.clear_memo()
    for (b, h), chunks in got.items():
        assert chunks == chunk_corpus(docs, ChunkSpec(b, 40, 0, h), tok, starts)
    assert got["heading", "none"] is got["recursive", "none"]
    assert got["heading", "path"] is got["recursive", "path"]
    assert got["recursive", "none"] != got["fixed", "none"]  # fixed cuts otherwise here
    assert got["recursive", "none"] != got["recursive", "path"]
    assert [(s.boundary, s.header) for s in made] == [
        ("recursive", "none"), ("recursive", "path"), ("fixed", "none"), ("fixed", "path")]


def test_a_boundary_giving_arrays_is_chunked_without_being_compared() -> None:
    """A boundary registered elsewhere may give each document's spans as a numpy array:
    two such cuts cannot be compared with ``==``, so each is chunked on its own, as before
    the memo shared equal cuts (no error, the chunks of each equal `chunk_corpus`'s)."""
    import numpy as np

    from sweep.common.registry import Entry
    from sweep.data.corpus import corpus_fingerprint
    from sweep.pipeline import memo

    def halves(d: object, size: int, overlap: int) -> np.ndarray:
        n = len(d.text)  # type: ignore[attr-defined]
        return np.array([(0, n // 2), (n // 2, n)], dtype=np.int64)

    docs = load_corpus(DEMO / "corpus")
    tok = load_chunk_tokenizer("minilm")
    starts = corpus_token_starts(docs, tok)
    with BOUNDARY.added(Entry("halves_a", halves), Entry("halves_b", halves)):
        memo.clear_memo()
        try:
            fp = corpus_fingerprint(docs)
            a = memo.chunks_for(docs, fp, ChunkSpec("halves_a", 40), "minilm")
            b = memo.chunks_for(docs, fp, ChunkSpec("halves_b", 40), "minilm")
        finally:
            memo.clear_memo()
        assert a is not b and a == b == chunk_corpus(docs, ChunkSpec("halves_a", 40), tok,
                                                     starts)
    assert len(a) == 2 * len(docs)

