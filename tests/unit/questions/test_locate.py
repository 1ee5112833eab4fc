"""Disagreement and coverage on a hand-made corpus: which chunk each retriever puts first,
when that counts as a disagreement, and which documents and sections the golden set covers."""

from __future__ import annotations

import numpy as np

from sweep.chunking.chunkers import ChunkSpec, chunk_corpus, corpus_token_starts
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.data.corpus import parse_document
from sweep.questions.locate import (
    Tops,
    coverage,
    covered_places,
    disagreement,
    first_chunks,
    signals_for,
)
from sweep.questions.merge import Candidate
from sweep.retrieval.bm25 import BM25Index

REGEX = RegexTokenizer()
A = parse_document("a.md", "# Refunds\n\nRefunds take thirty days.\n\n"
                           "## Exceptions\n\nSale items are final.\n")
B = parse_document("b.md", "# Shipping\n\nWe ship parcels to Canada.\n")
DOCS = [A, B]
CHUNKS = chunk_corpus(DOCS, ChunkSpec("heading", 64, 0, "none"), REGEX,
                      corpus_token_starts(DOCS, REGEX))


def test_chunks_are_the_sections() -> None:
    assert [c.chunk_id for c in CHUNKS] == ["a#0", "a#1", "b#0"]


def test_first_chunks_and_disagreement() -> None:
    bm25 = BM25Index([c.text for c in CHUNKS], backend="rank_bm25")
    # dense "vectors": a#0, a#1, b#0 along three axes; the queries point where the test says
    chunk_vecs = np.eye(3, dtype=np.float32)
    query_vecs = np.asarray([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=np.float32)
    questions = ["refunds thirty days", "sale items final", "zzz unknown words"]
    tops = first_chunks(questions, CHUNKS, bm25.scores, chunk_vecs, query_vecs, depth=1)
    assert tops == [Tops((0,), (0,)), Tops((1,), (2,)), Tops((), (1,))]
    assert disagreement(tops[0], CHUNKS) == (False, "")
    assert disagreement(tops[1], CHUNKS) == (True, "BM25: a#1, dense: b#0")
    assert disagreement(tops[2], CHUNKS) == (True, "BM25 matches no word; dense: a#1")
    deep = first_chunks(questions, CHUNKS, bm25.scores, chunk_vecs, query_vecs, depth=2)
    # dense's second chunk is a tie at 0 broken by chunk id; BM25 matched only a#1
    assert deep[1] == Tops((1,), (2, 0))


def test_disagreement_looks_into_each_others_first_chunks() -> None:
    # BM25 first a#1; dense first b#0, with a#1 second: they agree that a#1 is a place
    assert disagreement(Tops((1,), (2, 1)), CHUNKS) == (False, "")
    assert disagreement(Tops((1, 2), (2,)), CHUNKS) == (False, "")
    assert disagreement(Tops((1, 0), (2, 0)), CHUNKS) == (True, "BM25: a#1, dense: b#0")
    assert disagreement(Tops((1,), ()), CHUNKS) == (False, "")  # dense did not run


def test_overlapping_chunks_are_no_disagreement() -> None:
    doc = parse_document("c.md", "one two three four five six seven eight nine ten")
    cs = chunk_corpus([doc], ChunkSpec("fixed", 6, 3, "none"), REGEX,
                      corpus_token_starts([doc], REGEX))
    assert cs[0].end > cs[1].start  # they share text
    assert disagreement(Tops((0,), (1,)), cs) == (False, "")


def test_coverage_by_document_and_section() -> None:
    # a golden span inside "Refunds" only
    start = A.text.index("Refunds take")
    docs, sections = covered_places([("a", start, start + 10)], DOCS)
    assert docs == {"a"} and sections == {("a", ("Refunds",))}
    assert coverage("a", ("Refunds",), docs, sections) == (False, "")
    assert coverage("a", ("Refunds", "Exceptions"), docs, sections) == (
        True, "no golden question in a: Refunds > Exceptions")
    assert coverage("b", ("Shipping",), docs, sections) == (True, "no golden question in b")


def test_signals_use_a_synthetic_passage_else_dense_first() -> None:
    start = A.text.index("Refunds take")
    covered = covered_places([("a", start, start + 10)], DOCS)
    synthetic = Candidate("s", "q", passage={"doc_id": "b", "start": 2, "end": 8, "text": "x"})
    logged = Candidate("l", "q")
    sig = signals_for([synthetic, logged], [Tops((0,), (0,)), Tops((2,), (0,))], CHUNKS, DOCS,
                      covered)
    assert sig["s"].uncovered is True and sig["s"].disagree is False  # its passage is in b
    assert sig["l"].uncovered is False and sig["l"].disagree is True  # dense: a#0, covered
    none = signals_for([logged], [Tops((2,), ())], CHUNKS, DOCS, None)
    assert none["l"].disagree is None and none["l"].uncovered is None
