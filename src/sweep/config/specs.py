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

import logging
from dataclasses import dataclass, field
from typing import Any

from sweep.chunking.chunkers import BOUNDARY, HEADER, ChunkSpec
from sweep.chunking.semantic import SemanticParams
from sweep.common.errors import SweepError
from sweep.common.store import CacheTarget
from sweep.config.compose import to_container
from sweep.config.schema import Config, typed_config
from sweep.data.parsers.limits import ParseLimits
from sweep.embedding.embedder import ServedSpec
from sweep.embedding.models import FAMILY, EmbeddingSpec
from sweep.endpoints.spec import EndpointSpec
from sweep.evaluation.evaluate import EvalSpec
from sweep.generation.contextual import ContextSpec
from sweep.generation.queries import TransformJob
from sweep.retrieval.assembly import AssemblySpec
from sweep.retrieval.index import IndexSpec
from sweep.retrieval.rerank import RERANK, RerankSpec, ServedRerankSpec
from sweep.retrieval.search import uses_bm25, uses_dense
from sweep.retrieval.transform import QUERY_TRANSFORM, HydeSpec, MultiQuerySpec
from sweep.retrieval.units import UnitSpec


def cache_target(cfg: Config) -> CacheTarget | None:
    """Where the caches are (None with cache.enabled=false)."""
    if not cfg.cache.enabled:
        return None
    c = cfg.cache
    return CacheTarget(dir=c.dir, backend=c.backend, url=c.url, password_env=c.password_env)


def chunk_spec(cfg: Config) -> ChunkSpec:
    c = cfg.chunk
    return ChunkSpec(boundary=c.boundary.value, size=c.size, overlap=c.overlap,
                     header=c.header.value)


def embedding_spec(cfg: Config) -> EmbeddingSpec:
    e = cfg.embedding
    served = None
    if FAMILY.has(e.family.value, "remote"):  # a model behind an endpoint
        served = ServedSpec(
            endpoint=endpoint_spec("embedding", e, requests_per_minute=e.requests_per_minute,
                                   tokens_per_minute=e.tokens_per_minute),
            model=e.model, dimensions=e.dimensions, query_input_type=e.query_input_type,
            document_input_type=e.document_input_type, fingerprint=e.fingerprint,
            max_texts_per_request=e.max_texts_per_request,
            max_tokens_per_request=e.max_tokens_per_request, price_per_mtok=e.price_per_mtok)
    return EmbeddingSpec(name=e.name, family=e.family.value, distill_from=e.distill_from,
                         pca_dims=e.pca_dims, batch_size=e.batch_size,
                         query_prefix=e.query_prefix, document_prefix=e.document_prefix,
                         device=e.device, served=served, backend=e.backend.value,
                         precision=e.precision.value, long_text=e.long_text.value)


def endpoint_spec(section: str, conf: Any, **limits: Any) -> EndpointSpec:
    """The endpoint of a config section that talks to a served model (its URL, key, timeout,
    retries and concurrency; ``limits``: the rate limits the embedding section also has)."""
    return EndpointSpec(section=section, base_url=conf.base_url, api_key_env=conf.api_key_env,
                        timeout_s=conf.timeout_s, max_retries=conf.max_retries,
                        concurrency=conf.concurrency, **limits)


def rerank_spec(cfg: Config) -> RerankSpec:
    r = cfg.rerank
    return RerankSpec(model=r.model, batch_size=r.batch_size, max_length=r.max_length)


def served_rerank_spec(cfg: Config) -> ServedRerankSpec:
    r = cfg.rerank
    return ServedRerankSpec(endpoint=endpoint_spec("rerank", r), model=r.model,
                            price_per_mtok=r.price_per_mtok,
                            price_per_request=r.price_per_request)


def eval_spec(cfg: Config) -> EvalSpec:
    e = cfg.eval
    return EvalSpec(k=tuple(e.k), prompt_k=e.prompt_k, token_budget=e.token_budget,
                    min_overlap=e.min_overlap, span_mode=e.span_mode.value)


def index_spec(cfg: Config) -> IndexSpec:
    i = cfg.index
    return IndexSpec(kind=i.kind.value, M=i.M, ef_construction=i.ef_construction,
                     ef_search=i.ef_search, nlist=i.nlist, nprobe=i.nprobe, pq_m=i.pq_m,
                     quantizer=i.quantizer.value, rescore=i.rescore, seed=i.seed, host=i.host,
                     port=i.port)


def corpus_limits(cfg: Config) -> ParseLimits:
    """The bounds on one parsed file, as `sweep.data.corpus.load_corpus` takes them."""
    c = cfg.corpus
    return ParseLimits(max_pages=c.max_pages, max_inflated_mb=c.max_inflated_mb,
                       max_html_chars=c.max_html_chars, max_html_depth=c.max_html_depth)


def corpus_parsers(cfg: Config) -> dict[str, str]:
    """Format -> parser name, as `sweep.data.corpus.load_corpus` takes it."""
    c = cfg.corpus
    return {"pdf": c.pdf_parser.value, "html": c.html_parser.value, "docx": c.docx_parser.value}

def cutting_spec(cfg: Config) -> CuttingSpec | None:
    """An embedded boundary's settings, read where its registry entry says they are: each key
    of the entry's ``params`` names a section of ``chunk`` and the settings it reads there;
    ``model`` is the cutting model, the others are `SemanticParams` fields (the ones another
    boundary reads stay at their defaults, so two configurations that cut alike share one
    memoised chunking). None for a boundary that cuts without a model."""
    boundary = cfg.chunk.boundary.value
    if not BOUNDARY.has(boundary, "needs_embedder"):
        return None
    defaults = SemanticParams()
    values: dict[str, Any] = {}
    model = ""
    for section, keys in BOUNDARY.get_entry(boundary).params.items():
        conf = getattr(cfg.chunk, section)
        for key in keys:
            if key == "model":
                model = getattr(conf, key)
            else:  # typed as SemanticParams' default (a percentile threshold is a float)
                values[key] = type(getattr(defaults, key))(getattr(conf, key))
    return CuttingSpec(params=SemanticParams(**values), model=model)


def unit_spec(cfg: Config) -> UnitSpec:
    r = cfg.retrieval
    return UnitSpec(unit=r.unit.value, parent_max_tokens=r.parent_max_tokens,
                    window_sentences=r.window_sentences)


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
    transform: TransformJob | None = None  # retrieval.query_transform=none: None

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
    by_content: bool = False  # eval.by_content: the split by kind of content


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
    # What reaches the prompt from the ranking (assembly.*); the defaults: the top prompt_k.
    assembly: AssemblySpec = field(default_factory=AssemblySpec)


def corpus_spec(cfg: Config) -> CorpusSpec:
    c = cfg.corpus
    return CorpusSpec(path=c.path, extensions=tuple(c.extensions), on_error=c.on_error,
                      parsers=tuple(corpus_parsers(cfg).items()), max_file_mb=c.max_file_mb,
                      limits=corpus_limits(cfg))


def chunking_spec(cfg: Config) -> ChunkingSpec:
    spec = chunk_spec(cfg)
    cutting = cutting_spec(cfg)
    context = None
    if HEADER.has(spec.header, "remote"):
        c = cfg.chunk.context
        context = ContextJob(
            endpoint=endpoint_spec("chunk.context", c), model=c.model,
            spec=ContextSpec(max_doc_tokens=c.max_doc_tokens, max_tokens=c.max_tokens,
                             price_input_per_mtok=c.price_input_per_mtok,
                             price_output_per_mtok=c.price_output_per_mtok,
                             dry_run=c.dry_run))
    return ChunkingSpec(spec=spec, tokenizer=cfg.chunk.tokenizer, cutting=cutting,
                        context=context)


def retrieval_spec(cfg: Config) -> RetrievalSpec:
    r = cfg.retrieval
    return RetrievalSpec(
        method=r.method.value, depth=r.depth, rrf_k=r.rrf_k, dense_weight=r.dense_weight,
        bm25_weight=r.bm25_weight, diagnose=r.diagnose,
        bm25=Bm25Spec(backend=r.bm25_backend.value, k1=r.bm25_k1, b=r.bm25_b,
                      stopwords=r.bm25_stopwords),
        unit=unit_spec(cfg), transform=transform_job(cfg))


def transform_job(cfg: Config) -> TransformJob | None:
    r = cfg.retrieval
    method = r.query_transform.value
    if method == QUERY_TRANSFORM.off:
        return None
    t, h, m = r.transform, r.hyde, r.multi_query
    return TransformJob(
        method=method, endpoint=endpoint_spec("retrieval.transform", t), model=t.model,
        hyde=HydeSpec(embed=h.embed.value, system_prompt=h.system_prompt, prompt=h.prompt,
                      max_tokens=h.max_tokens, temperature=h.temperature),
        multi_query=MultiQuerySpec(n=m.n, system_prompt=m.system_prompt, prompt=m.prompt,
                                   max_tokens=m.max_tokens, temperature=m.temperature),
        price_input_per_mtok=t.price_input_per_mtok,
        price_output_per_mtok=t.price_output_per_mtok)


def rerank_setup(cfg: Config) -> RerankSetup:
    # Read off the registry: its off value reranks nothing, a remote entry is an endpoint,
    # any other a local cross-encoder.
    method = cfg.rerank.method.value
    spec: RerankSpec | ServedRerankSpec | None = None
    if method != RERANK.off:
        spec = served_rerank_spec(cfg) if RERANK.has(method, "remote") else rerank_spec(cfg)
    return RerankSetup(method=method, pool=cfg.rerank.pool, spec=spec)


def generation_spec(cfg: Config) -> GenerationSpec:
    g = cfg.generation
    return GenerationSpec(
        method=g.method.value, limit=g.limit, max_chars=g.max_chars,
        max_sentences=g.max_sentences, endpoint=endpoint_spec("generation", g), model=g.model,
        system_prompt=g.system_prompt, prompt=g.prompt, temperature=g.temperature,
        max_tokens=g.max_tokens, price_input_per_mtok=g.price_input_per_mtok,
        price_output_per_mtok=g.price_output_per_mtok, cache_answers=g.cache_answers)


def judge_spec(cfg: Config) -> JudgeSpec:
    j = cfg.judge
    return JudgeSpec(method=j.method.value, endpoint=endpoint_spec("judge", j), model=j.model,
                     price_input_per_mtok=j.price_input_per_mtok,
                     price_output_per_mtok=j.price_output_per_mtok)


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
        scoring=ScoringSpec(spec=eval_spec(cfg), headline=cfg.eval.headline,
                            latency_sample=cfg.eval.latency_sample,
                            by_content=cfg.eval.by_content),
        generation=generation_spec(cfg),
        judge=judge_spec(cfg),
        cache=cache_target(cfg),
        tracking=TrackingSpec(enabled=t.enabled, uri=t.uri, experiment=t.experiment,
                              store_wait_s=t.store_wait_s),
        force=cfg.sweep.force,
        audit=cfg.sweep.audit,
        plain=to_container(cfg) if plain is None else plain,
        assembly=AssemblySpec(order=cfg.assembly.order.value,
                              budget_tokens=cfg.assembly.budget_tokens,
                              dedup=cfg.assembly.dedup.value),
    )


log = logging.getLogger("sweep")


def sweep_job_spec(config: Any) -> JobSpec | None:
    """The job spec of a multirun's callback config (its ``config`` holds ``hydra`` too); None
    with a warning when it does not convert."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from sweep.config.compose import config_error_line

    try:
        plain = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
        return build_job_spec(typed_config(plain))
    except OmegaConfBaseException as exc:
        log.warning("the golden set's audit was not written: %s", config_error_line(exc))
        return None
    except SweepError as exc:  # a cache target that does not validate
        log.warning("the golden set's audit was not written: %s", exc)
        return None
