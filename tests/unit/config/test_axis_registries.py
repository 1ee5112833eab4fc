"""Each axis's allowed values are its stage's registry; the schema enum and the defaults follow."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sweep.chunking.chunkers import BOUNDARY, ChunkSpec, chunk_spans
from sweep.common.errors import SweepError
from sweep.common.registry import Entry
from sweep.config import schema
from sweep.config.axes import AXES
from sweep.config.compose import compose
from sweep.config.schema import ChunkConfig
from sweep.data.corpus import Document, Section
from sweep.embedding.backends import BACKENDS as ENCODE_BACKENDS
from sweep.embedding.backends import PRECISIONS
from sweep.retrieval.bm25 import BACKENDS


@pytest.mark.parametrize(("enum", "registry"), [
    ("Bm25Backend", BACKENDS), ("EncodeBackend", ENCODE_BACKENDS), ("Precision", PRECISIONS),
    *[(name, AXES[axis]) for name, axis in schema._AXIS_ENUMS.items()],
])
def test_schema_enum_lists_the_registry_in_order(enum, registry) -> None:
    enum = getattr(schema, enum)
    assert [e.value for e in enum] == list(registry)
    assert [e.name for e in enum] == list(registry)


@pytest.mark.parametrize("boundary", list(BOUNDARY))
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


def test_a_registered_chunker_is_what_chunk_spans_runs() -> None:
    # Adding a boundary is one entry: chunk_spans dispatches on the registry alone.
    text = "abcdefghij"
    doc = Document("d", "D", text, (Section(0, len(text), 1, ("D",)),), "d.md")
    with BOUNDARY.added(Entry("halves", lambda d, size, overlap: [(0, 5), (5, 10)])):
        assert chunk_spans(doc, np.arange(10), ChunkSpec("halves", 4, 0)) == [(0, 5), (5, 10)]
    assert "halves" not in BOUNDARY
    with pytest.raises(SweepError, match=r"chunk.boundary='nope' is not one of fixed, "):
        chunk_spans(doc, np.arange(10), ChunkSpec("nope", 4, 0))


def _schema_default(section_cls: type, key: str) -> object:
    f = {f.name: f for f in dataclasses.fields(section_cls)}[key]
    value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


@pytest.mark.parametrize("axis", list(AXES))
def test_each_entrys_settings_are_schema_fields_with_its_defaults(axis: str) -> None:
    section = axis.split(".")[0]
    section_cls = {f.name: f.type for f in dataclasses.fields(schema.Config)}[section]
    section_cls = getattr(schema, section_cls) if isinstance(section_cls, str) else section_cls
    for entry in AXES[axis].values():
        for key, default in entry.params.items():
            got = _schema_default(section_cls, key)
            if isinstance(default, dict):  # a nested group: the entry's keys, as the schema's
                assert {k: got[k] for k in default} == default, (entry.name, key)
            else:
                assert got == default, (entry.name, key)


def test_the_derived_gates_are_the_table_identity_held_by_hand() -> None:
    # identity.GATED_KEYS as it was written before the registries (every shipped hash was
    # computed with it; tests/unit/config/test_pinned_hashes.py holds those hashes).
    from sweep.config.identity import GATED_KEYS

    hnsw = ("kind", ("hnsw", "chroma"))
    ivf = ("kind", ("ivf_flat", "ivf_pq"))
    assert {s: dict(g) for s, g in GATED_KEYS.items()} == {
        "chunk": {"semantic": ("boundary", ("semantic",)),
                  "cluster": ("boundary", ("cluster",)),
                  "context": ("header", ("contextual",))},
        "retrieval": {"unit": ("unit", ("parent", "window")),
                      "parent_max_tokens": ("unit", ("parent",)),
                      "window_sentences": ("unit", ("window",)),
                      # added with the query-transform axis (no shipped hash holds them)
                      "query_transform": ("query_transform", ("hyde", "multi_query")),
                      "transform": ("query_transform", ("hyde", "multi_query")),
                      "hyde": ("query_transform", ("hyde",)),
                      "multi_query": ("query_transform", ("multi_query",))},
        "embedding": {k: ("family", ("openai",)) for k in (
            "model", "dimensions", "query_input_type", "document_input_type", "fingerprint")},
        "index": {"M": hnsw, "ef_construction": hnsw, "ef_search": hnsw, "nlist": ivf,
                  "nprobe": ivf, "seed": ivf, "pq_m": ("kind", ("ivf_pq",)),
                  "quantizer": ("kind", ("scalar",)), "rescore": ("kind", ("binary",))},
    }


def test_a_registered_value_is_accepted_by_the_schema_and_gone_after() -> None:
    from sweep.retrieval.units import UNIT

    with UNIT.added(Entry("sentence_only", lambda d, hit, spec, memo: hit)):
        assert compose(["retrieval.unit=sentence_only"]).retrieval.unit.value == "sentence_only"
    with pytest.raises(SweepError, match=r"Invalid value 'sentence_only'"):
        compose(["retrieval.unit=sentence_only"])


def test_typed_config_follows_a_refreshed_axis() -> None:
    """`typed_config` keeps one schema node per set of axis enums: a value registered (and
    the enums refreshed) converts, and is refused again once it is gone."""
    from omegaconf import OmegaConf
    from omegaconf.errors import ValidationError

    from sweep.retrieval.units import UNIT

    base = OmegaConf.to_container(OmegaConf.structured(compose([])), enum_to_str=True)
    plain = {**base, "retrieval": {**base["retrieval"], "unit": "sentence_only"}}
    with pytest.raises(ValidationError):
        schema.typed_config(plain)
    with UNIT.added(Entry("sentence_only", lambda d, hit, spec, memo: hit)):
        schema.refresh_axes()
        assert schema.typed_config(plain).retrieval.unit.value == "sentence_only"
    schema.refresh_axes()
    with pytest.raises(ValidationError):
        schema.typed_config(plain)
    assert schema.typed_config(base) == compose([])
