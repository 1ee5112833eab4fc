"""Config -> plain specs: the one place where a stage's settings are read off a `Config`.

With config.schema (which reads the axis registries), it is the only module of `sweep.config`
that imports stage code (the spec dataclasses); `config.checks` validates through these
specs, so the rules a stage enforces (overlap < size, the metric names of an evaluation) live
with the stage (import contract in pyproject.toml).
"""

from __future__ import annotations

from sweep.chunking.chunkers import ChunkSpec
from sweep.chunking.semantic import SemanticParams
from sweep.common.store import CacheTarget
from sweep.config.schema import Config
from sweep.data.parsers.limits import ParseLimits
from sweep.embedding.embedder import ServedSpec
from sweep.embedding.models import EmbeddingSpec
from sweep.endpoints.spec import EndpointSpec
from sweep.evaluation.evaluate import EvalSpec
from sweep.retrieval.index import IndexSpec
from sweep.retrieval.rerank import RerankSpec, ServedRerankSpec
from sweep.retrieval.units import UnitSpec


def cache_target(cfg: Config) -> CacheTarget | None:
    """Where the caches are (None with cache.enabled=false)."""
    if not cfg.cache.enabled:
        return None
    return CacheTarget(cfg.cache.dir, cfg.cache.backend, cfg.cache.url, cfg.cache.password_env)


def chunk_spec(cfg: Config) -> ChunkSpec:
    c = cfg.chunk
    return ChunkSpec(c.boundary.value, c.size, c.overlap, c.header.value)


def embedding_spec(cfg: Config) -> EmbeddingSpec:
    e = cfg.embedding
    served = None
    if e.family.value == "openai":
        served = ServedSpec(
            EndpointSpec("embedding", e.base_url, e.api_key_env, e.timeout_s, e.max_retries,
                         e.concurrency, e.requests_per_minute, e.tokens_per_minute),
            e.model, e.dimensions, e.query_input_type, e.document_input_type, e.fingerprint,
            e.max_texts_per_request, e.max_tokens_per_request, e.price_per_mtok)
    return EmbeddingSpec(e.name, e.family.value, e.distill_from, e.pca_dims, e.batch_size,
                         e.query_prefix, e.document_prefix, e.device, served,
                         e.backend.value, e.precision.value)


def rerank_spec(cfg: Config) -> RerankSpec:
    r = cfg.rerank
    return RerankSpec(r.model, r.batch_size, r.max_length)


def served_rerank_spec(cfg: Config) -> ServedRerankSpec:
    r = cfg.rerank
    return ServedRerankSpec(EndpointSpec("rerank", r.base_url, r.api_key_env, r.timeout_s,
                                         r.max_retries, r.concurrency),
                            r.model, r.price_per_mtok, r.price_per_request)


def eval_spec(cfg: Config) -> EvalSpec:
    e = cfg.eval
    return EvalSpec(tuple(e.k), e.prompt_k, e.token_budget, e.min_overlap, e.span_mode.value)


def index_spec(cfg: Config) -> IndexSpec:
    i = cfg.index
    return IndexSpec(i.kind.value, i.M, i.ef_construction, i.ef_search, i.nlist, i.nprobe,
                     i.pq_m, i.quantizer.value, i.rescore, i.seed, i.host, i.port)


def corpus_limits(cfg: Config) -> ParseLimits:
    """The bounds on one parsed file, as `sweep.data.corpus.load_corpus` takes them."""
    c = cfg.corpus
    return ParseLimits(c.max_pages, c.max_inflated_mb, c.max_html_chars, c.max_html_depth)


def corpus_parsers(cfg: Config) -> dict[str, str]:
    """Format -> parser name, as `sweep.data.corpus.load_corpus` takes it."""
    c = cfg.corpus
    return {"pdf": c.pdf_parser.value, "html": c.html_parser.value, "docx": c.docx_parser.value}

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
