"""Config -> plain specs: the one place where a stage's settings are read off a `Config`."""

from __future__ import annotations

from sweep.chunking.semantic import SemanticParams
from sweep.config.schema import Config
from sweep.embedding.models import EmbeddingSpec
from sweep.retrieval.units import UnitSpec


def embedding_spec(cfg: Config) -> EmbeddingSpec:
    e = cfg.embedding
    return EmbeddingSpec(e.name, e.family.value, e.distill_from, e.pca_dims, e.batch_size,
                         e.query_prefix, e.document_prefix)



def semantic_params(cfg: Config) -> SemanticParams:
    """The settings the embedded boundary in use reads (the other one's stay at defaults, so
    two configurations that cut alike share one memoised chunking)."""
    c = cfg.chunk
    if c.boundary.value == "semantic":
        return SemanticParams(window=c.semantic.window, threshold=float(c.semantic.threshold))
    return SemanticParams(piece_tokens=c.cluster.piece_tokens)


def cut_model(cfg: Config) -> str:
    """The model that embeds for cutting ("" = the swept embedding)."""
    c = cfg.chunk
    return c.semantic.model if c.boundary.value == "semantic" else c.cluster.model


def unit_spec(cfg: Config) -> UnitSpec:
    r = cfg.retrieval
    return UnitSpec(r.unit.value, r.parent_max_tokens, r.window_sentences)
