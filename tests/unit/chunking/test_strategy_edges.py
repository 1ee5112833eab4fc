"""Strategies on the documents that break them (issue 30, "Strategies"): semantic and cluster
cuts on a one-sentence corpus and on a document without sentences, retrieval.unit=parent
without headings, a window larger than the document, contextual headers when the chat
endpoint is down. Each either gives the exact spans below (whole text covered, nothing
invented) or one line naming the key, before any model is called."""

from __future__ import annotations

import socket
import sqlite3

import numpy as np
import pytest

from sweep.chunking.chunkers import ChunkSpec, TokenizedDoc, chunk_corpus
from sweep.chunking.semantic import SemanticParams, chunk_corpus_embedded
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.common.errors import SweepError
from sweep.config.compose import compose
from sweep.config.specs import build_job_spec
from sweep.data.corpus import parse_document
from sweep.pipeline.strategies import contextual_chunks
from sweep.retrieval.units import parent_span, window_span

REGEX = RegexTokenizer()


def _counted_embed(calls: list[int]):
    def embed(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.array([[len(t), 1.0] for t in texts])
    return embed


def _cut(text: str, boundary: str, size: int = 40) -> tuple[list[tuple[int, int]], int]:
    doc = parse_document("t.md", text)
    starts = REGEX.token_starts(doc.text)
    chunks = chunk_corpus_embedded([doc], ChunkSpec(boundary, size, 0, "none"),
                                   SemanticParams(window=3), [starts], _counted_embed([]))
    for c in chunks:  # every chunk is its exact text, never an invented one
        assert c.text == doc.text[c.start:c.end]
    return [(c.start, c.end) for c in chunks], len(doc.text)


@pytest.mark.parametrize("boundary", ["semantic", "cluster"])
def test_a_one_sentence_corpus_is_one_chunk(boundary: str) -> None:
    spans, n = _cut("My cat likes to purr.", boundary)
    assert spans == [(0, n)] and n == 21


@pytest.mark.parametrize("boundary", ["semantic", "cluster"])
def test_a_document_without_sentences_is_cut_by_size(boundary: str) -> None:
    spans, n = _cut("no punctuation here at all", boundary)
    assert spans == [(0, n)]
    long = "cat purr whiskers kitten litter " * 30  # 150 words, no full stop: size decides
    spans, n = _cut(long, boundary, size=40)
    assert spans == [(0, 255), (256, 511), (512, 767), (768, 959)] and n == 960
    assert all(len(REGEX.token_starts(long[a:b])) <= 40 for a, b in spans)


@pytest.mark.parametrize("boundary", ["semantic", "cluster"])
def test_a_blank_document_gives_no_chunk_and_no_model_call(boundary: str) -> None:
    calls: list[int] = []
    doc = parse_document("t.md", "   \n\n  ")
    chunks = chunk_corpus_embedded([doc], ChunkSpec(boundary, 40, 0, "none"), SemanticParams(),
                                   [REGEX.token_starts(doc.text)], _counted_embed(calls))
    assert chunks == [] and sum(calls) == 0


TEXT = "One two three. Four five six. Seven eight nine."  # no heading at all


def test_parent_without_headings_is_the_document_or_cut_around_the_hit() -> None:
    doc = parse_document("plain.md", TEXT)
    d = TokenizedDoc(doc, REGEX.token_starts(doc.text))
    assert [(s.start, s.end, s.heading_path) for s in doc.sections] == [(0, 47, ())]
    hit = (15, 29)  # "Four five six."
    assert parent_span(d, hit, 1000) == (0, 47)  # the whole document is the parent
    assert parent_span(d, hit, 3) == hit  # a budget under the hit keeps the hit whole


def test_a_window_larger_than_the_document_is_the_document() -> None:
    doc = parse_document("plain.md", TEXT)
    d = TokenizedDoc(doc, REGEX.token_starts(doc.text))
    assert window_span(d, (15, 29), 50) == (0, 47)
    assert window_span(d, (0, 47), 5) == (0, 47)
    assert window_span(d, (15, 29), 1) == (0, 47)  # one sentence each side: all three
    assert window_span(d, (15, 29), 0) == (15, 29)


def test_contextual_headers_with_the_chat_endpoint_down_is_one_line(tmp_path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens
    cfg = compose(["chunk.header=contextual", f"chunk.context.base_url=http://127.0.0.1:{port}/v1",
                   "chunk.context.model=m", f"cache.dir={tmp_path}",
                   "chunk.context.max_retries=0", "chunk.context.timeout_s=2"])
    doc = parse_document("a.md", "# A\n\nOne two three. Four five.\n")
    starts = REGEX.token_starts(doc.text)
    chunks = chunk_corpus([doc], ChunkSpec("recursive", 5, 0, "none"), REGEX, [starts])
    job = build_job_spec(cfg)
    with pytest.raises(SweepError) as err:
        contextual_chunks(job.chunking.context, job.cache, chunks, [doc], [starts], False)
    assert str(err.value).startswith(f"chunk.context.base_url=http://127.0.0.1:{port}/v1: "
                                     "cannot reach the endpoint (Connection refused)")
    assert "\n" not in str(err.value) and err.value.hint == "start the server or fix the URL"
    db = sqlite3.connect(tmp_path / "contexts.sqlite")  # opened, but nothing cached
    assert db.execute("SELECT COUNT(*) FROM contexts").fetchone() == (0,)
    db.close()
