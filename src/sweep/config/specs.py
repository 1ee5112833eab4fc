"""Config -> plain specs: the one place where a stage's settings are read off a `Config`.

`build_job_spec` turns the composed configuration into one frozen `JobSpec` holding every
stage's spec; the pipeline and the commands that run a job (estimate, baseline, label) take
that and never go back to the `Config` (an import contract in pyproject.toml keeps
`sweep.pipeline` off `config.schema`).

With config.schema (which reads the axis registries), it is the only module of `sweep.config`
that imports stage code (the spec dataclasses); `config.checks` validates through these
specs, so the rules a stage enforces (overlap < size, the metric names of an evaluation) live
with the stage (import contract in pyproject.toml).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sweep.chunking.chunkers import BOUNDARY, HEADER, ChunkSpec
from sweep.chunking.semantic import SemanticParams
from sweep.common.store import CacheTarget
from sweep.config.compose import to_container
from sweep.config.schema import Config
from sweep.data.parsers.limits import ParseLimits
from sweep.embedding.embedder import ServedSpec
from sweep.embedding.models import FAMILY, EmbeddingSpec
from sweep.endpoints.spec import EndpointSpec
from sweep.evaluation.evaluate import EvalSpec
from sweep.generation.contextual import ContextSpec
from sweep.retrieval.index import IndexSpec
from sweep.retrieval.rerank import RerankSpec, ServedRerankSpec
from sweep.retrieval.search import uses_bm25, uses_dense
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
    if FAMILY.has(e.family.value, "remote"):  # a model behind an endpoint
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


# --------------------------------------------------------------------------- the job spec


@dataclass(frozen=True)
class CorpusSpec:
    """What `sweep.data.corpus.load_corpus` reads: the folder, which files, their parsers
    (format -> parser name) and the bounds on one parsed file."""

    path: str
    extensions: tuple[str, ...]
    on_error: str
    parsers: tuple[tuple[str, str], ...]
    max_file_mb: float
    limits: ParseLimits

    @property
    def parser_map(self) -> dict[str, str]:
        return dict(self.parsers)


@dataclass(frozen=True)
class CuttingSpec:
    """An embedded boundary's settings: its parameters and the model that embeds for cutting
    ("" = the swept embedding)."""

    params: SemanticParams
    model: str


@dataclass(frozen=True)
class ContextJob:
    """``chunk.header=contextual``: the chat endpoint that writes each chunk's context."""

    endpoint: EndpointSpec
    model: str
    spec: ContextSpec


@dataclass(frozen=True)
class ChunkingSpec:
    spec: ChunkSpec
    tokenizer: str
    cutting: CuttingSpec | None  # the embedded boundaries (semantic, cluster) only
    context: ContextJob | None  # chunk.header=contextual only


@dataclass(frozen=True)
class Bm25Spec:
    backend: str
    k1: float
    b: float
    stopwords: str


@dataclass(frozen=True)
class RetrievalSpec:
    method: str
    depth: int
    rrf_k: int
    dense_weight: float
    bm25_weight: float
    diagnose: bool  # also run the retriever the method does not use (never changes a metric)
    bm25: Bm25Spec
    unit: UnitSpec

    @property
    def uses_dense(self) -> bool:
        return uses_dense(self.method)

    @property
    def uses_bm25(self) -> bool:
        return uses_bm25(self.method)


@dataclass(frozen=True)
class RerankSetup:
    """The reranker in use: ``spec`` is a `RerankSpec` (cross_encoder), a `ServedRerankSpec`
    (cohere) or None (none)."""

    method: str
    pool: int
    spec: RerankSpec | ServedRerankSpec | None


@dataclass(frozen=True)
class ScoringSpec:
    spec: EvalSpec
    headline: str
    latency_sample: int


@dataclass(frozen=True)
class GenerationSpec:
    method: str
    limit: int
    max_chars: int
    max_sentences: int
    endpoint: EndpointSpec
    model: str
    system_prompt: str
    prompt: str
    temperature: float
    max_tokens: int
    price_input_per_mtok: float
    price_output_per_mtok: float
    cache_answers: bool = False


@dataclass(frozen=True)
class JudgeSpec:
    method: str
    endpoint: EndpointSpec
    model: str
    price_input_per_mtok: float
    price_output_per_mtok: float


@dataclass(frozen=True)
class TrackingSpec:
    enabled: bool
    uri: str
    experiment: str
    store_wait_s: float


@dataclass(frozen=True)
class JobSpec:
    """One configuration's job, every stage's spec inside, built once by `build_job_spec`.
    ``plain`` is the configuration as plain data: what report.json records and what
    `config_hash` reads."""

    corpus: CorpusSpec
    golden: str  # the golden set's path
    chunking: ChunkingSpec
    embedding: EmbeddingSpec
    retrieval: RetrievalSpec
    index: IndexSpec
    rerank: RerankSetup
    scoring: ScoringSpec
    generation: GenerationSpec
    judge: JudgeSpec
    cache: CacheTarget | None
    tracking: TrackingSpec
    force: bool  # sweep.force: re-run a configuration the store has as FINISHED
    audit: bool  # sweep.audit: write the golden set's audit beside the results
    plain: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def corpus_spec(cfg: Config) -> CorpusSpec:
    c = cfg.corpus
    return CorpusSpec(c.path, tuple(c.extensions), c.on_error,
                      tuple(corpus_parsers(cfg).items()), c.max_file_mb, corpus_limits(cfg))


def chunking_spec(cfg: Config) -> ChunkingSpec:
    spec = chunk_spec(cfg)
    cutting = (CuttingSpec(semantic_params(cfg), cut_model(cfg))
               if BOUNDARY.has(spec.boundary, "needs_embedder") else None)
    context = None
    if HEADER.has(spec.header, "remote"):
        c = cfg.chunk.context
        context = ContextJob(
            EndpointSpec("chunk.context", c.base_url, c.api_key_env, c.timeout_s,
                         c.max_retries, c.concurrency),
            c.model,
            ContextSpec(c.max_doc_tokens, c.max_tokens, c.price_input_per_mtok,
                        c.price_output_per_mtok, c.dry_run))
    return ChunkingSpec(spec, cfg.chunk.tokenizer, cutting, context)


def retrieval_spec(cfg: Config) -> RetrievalSpec:
    r = cfg.retrieval
    return RetrievalSpec(r.method.value, r.depth, r.rrf_k, r.dense_weight, r.bm25_weight,
                         r.diagnose,
                         Bm25Spec(r.bm25_backend.value, r.bm25_k1, r.bm25_b, r.bm25_stopwords),
                         unit_spec(cfg))


def rerank_setup(cfg: Config) -> RerankSetup:
    method = cfg.rerank.method.value
    spec: RerankSpec | ServedRerankSpec | None = None
    if method == "cross_encoder":
        spec = rerank_spec(cfg)
    elif method == "cohere":
        spec = served_rerank_spec(cfg)
    return RerankSetup(method, cfg.rerank.pool, spec)


def generation_spec(cfg: Config) -> GenerationSpec:
    g = cfg.generation
    return GenerationSpec(
        g.method.value, g.limit, g.max_chars, g.max_sentences,
        EndpointSpec("generation", g.base_url, g.api_key_env, g.timeout_s, g.max_retries,
                     g.concurrency),
        g.model,
        g.system_prompt, g.prompt, g.temperature, g.max_tokens, g.price_input_per_mtok,
        g.price_output_per_mtok, g.cache_answers)


def judge_spec(cfg: Config) -> JudgeSpec:
    j = cfg.judge
    return JudgeSpec(j.method.value,
                     EndpointSpec("judge", j.base_url, j.api_key_env, j.timeout_s,
                                  j.max_retries, j.concurrency),
                     j.model,
                     j.price_input_per_mtok, j.price_output_per_mtok)


def build_job_spec(cfg: Config, plain: dict[str, Any] | None = None) -> JobSpec:
    """The job of ``cfg``, every stage's spec built now. ``plain`` is ``cfg`` as plain data
    (`to_container`) when the caller has it already: the Hydra job does, and converting the
    typed config again costs a structured OmegaConf copy."""
    t = cfg.tracking
    return JobSpec(
        corpus=corpus_spec(cfg),
        golden=cfg.golden.path,
        chunking=chunking_spec(cfg),
        embedding=embedding_spec(cfg),
        retrieval=retrieval_spec(cfg),
        index=index_spec(cfg),
        rerank=rerank_setup(cfg),
        scoring=ScoringSpec(eval_spec(cfg), cfg.eval.headline, cfg.eval.latency_sample),
        generation=generation_spec(cfg),
        judge=judge_spec(cfg),
        cache=cache_target(cfg),
        tracking=TrackingSpec(t.enabled, t.uri, t.experiment, t.store_wait_s),
        force=cfg.sweep.force,
        audit=cfg.sweep.audit,
        plain=to_container(cfg) if plain is None else plain,
    )
