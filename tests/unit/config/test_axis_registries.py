"""Each axis's allowed values are its stage's registry; the schema enum and the defaults follow."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sweep.chunking.chunkers import ALL_BOUNDARIES, CHUNKERS, HEADER_TEXT, ChunkSpec, chunk_spans
from sweep.common.errors import SweepError
from sweep.config.compose import compose
from sweep.config.schema import (
    Bm25Backend,
    Boundary,
    ChunkConfig,
    EncodeBackend,
    Family,
    Header,
    IndexKind,
    Precision,
)
from sweep.data.corpus import Document, Section
from sweep.embedding.backends import BACKENDS as ENCODE_BACKENDS
from sweep.embedding.backends import PRECISIONS
from sweep.embedding.models import FAMILIES
from sweep.retrieval.bm25 import BACKENDS
from sweep.retrieval.index import BUILDERS


@pytest.mark.parametrize(("enum", "registry"), [
    (Boundary, ALL_BOUNDARIES), (Header, HEADER_TEXT), (Family, FAMILIES),
    (Bm25Backend, BACKENDS), (IndexKind, BUILDERS), (EncodeBackend, ENCODE_BACKENDS),
    (Precision, PRECISIONS),
])
def test_schema_enum_lists_the_registry_in_order(enum, registry) -> None:
    assert [e.value for e in enum] == list(registry)
    assert [e.name for e in enum] == list(registry)


@pytest.mark.parametrize("boundary", list(CHUNKERS))
def test_every_registered_boundary_composes(boundary: str) -> None:
    assert compose([f"chunk.boundary={boundary}"]).chunk.boundary.value == boundary


def test_chunk_defaults_come_from_chunkspec() -> None:
    spec = {f.name: f.default for f in dataclasses.fields(ChunkSpec)}
    cfg = compose([]).chunk
    assert (cfg.boundary.value, cfg.size, cfg.overlap, cfg.header.value) == (
        spec["boundary"], spec["size"], spec["overlap"], spec["header"])
    schema = ChunkConfig()
    assert (schema.boundary.value, schema.size, schema.overlap, schema.header.value) == (
        spec["boundary"], spec["size"], spec["overlap"], spec["header"])


def test_a_registered_chunker_is_what_chunk_spans_runs(monkeypatch) -> None:
    # Adding a boundary is one entry: chunk_spans dispatches on the registry alone.
    text = "abcdefghij"
    doc = Document("d", "D", text, (Section(0, len(text), 1, ("D",)),), "d.md")
    monkeypatch.setitem(CHUNKERS, "halves", lambda d, size, overlap: [(0, 5), (5, 10)])
    assert chunk_spans(doc, np.arange(10), ChunkSpec("halves", 4, 0)) == [(0, 5), (5, 10)]
    with pytest.raises(SweepError, match=r"chunk.boundary='nope' is not one of fixed, "):
        chunk_spans(doc, np.arange(10), ChunkSpec("nope", 4, 0))
