"""Structured-config schema (validated by Hydra/OmegaConf before any work starts).

YAML in ``conf/`` holds the values; these dataclasses hold the shape. A wrong key fails with
"Key 'x' not in 'ChunkConfig'", a wrong choice with "Invalid value 'x', expected one of [...]".
Checks that span several keys (overlap < size) live in `check_config`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from sweep.chunking.chunkers import ChunkSpec
from sweep.chunking.tokenizers import DEFAULT_TOKENIZER
from sweep.common.errors import SweepError
from sweep.common.paths import PROJECT_ROOT, conf_path, demo_path
from sweep.config.axes import AXES
from sweep.data.parsers.limits import ParseLimits
from sweep.data.parsers.registry import DEFAULT_PARSERS
from sweep.embedding.backends import BACKENDS as ENCODE_BACKENDS
from sweep.embedding.backends import PRECISIONS
from sweep.questions.prompts import PROMPT as QUESTIONS_PROMPT
from sweep.retrieval.bm25 import BACKENDS, BM25_B, BM25_K1
from sweep.retrieval.index import IndexSpec
from sweep.retrieval.transform import EMBEDS, HydeSpec, MultiQuerySpec


def conf_dir() -> Path:
    """The ``conf/`` folder, as an absolute path.

    Hydra resolves a relative ``config_path`` against the calling module, which breaks as soon
    as the package is imported from elsewhere; an absolute path does not.
    ``$CHUNK_SWEEP_CONF_DIR`` overrides it (e.g. for a non-editable install).
    """
    path = conf_path()
    if not (path / "config.yaml").is_file():
        raise SweepError(f"config folder not found: {path}",
                         hint="reinstall chunk-sweep (the wheel carries sweep/conf) or set "
                         "CHUNK_SWEEP_CONF_DIR")
    return path


def _axis(name: str, values: Iterable[str]) -> type[StrEnum]:
    """A StrEnum of an axis's allowed values, read off the stage's registry, so a value added
    there is accepted here (and listed in Hydra's "expected one of [...]") with no second
    list to keep in step."""
    return StrEnum(name, {v: v for v in values}, module=__name__)


# The enum of each registry axis (`sweep.config.axes`), by the name the fields below use.
# `register` rebuilds one whose registry has changed since (an entry registered at run time),
# and the fields' annotations are resolved when the schema is stored, so the new value is
# accepted too.
_AXIS_ENUMS: dict[str, str] = {
    "Boundary": "chunk.boundary", "Header": "chunk.header", "Family": "embedding.family",
    "Method": "retrieval.method", "RetrievalUnit": "retrieval.unit",
    "QueryTransform": "retrieval.query_transform",
    "RerankMethod": "rerank.method", "IndexKind": "index.kind",
    "GenerationMethod": "generation.method", "JudgeMethod": "judge.method",
    "PdfParser": "corpus.pdf_parser", "HtmlParser": "corpus.html_parser",
    "DocxParser": "corpus.docx_parser",
}
Boundary = _axis("Boundary", AXES["chunk.boundary"])
Header = _axis("Header", AXES["chunk.header"])
Family = _axis("Family", AXES["embedding.family"])
Method = _axis("Method", AXES["retrieval.method"])
RetrievalUnit = _axis("RetrievalUnit", AXES["retrieval.unit"])
QueryTransform = _axis("QueryTransform", AXES["retrieval.query_transform"])
RerankMethod = _axis("RerankMethod", AXES["rerank.method"])
IndexKind = _axis("IndexKind", AXES["index.kind"])
GenerationMethod = _axis("GenerationMethod", AXES["generation.method"])
JudgeMethod = _axis("JudgeMethod", AXES["judge.method"])
PdfParser = _axis("PdfParser", AXES["corpus.pdf_parser"])
HtmlParser = _axis("HtmlParser", AXES["corpus.html_parser"])
DocxParser = _axis("DocxParser", AXES["corpus.docx_parser"])
# Registries of the other stage settings (config.schema may import them: see the import
# contract in pyproject.toml).
EncodeBackend = _axis("EncodeBackend", ENCODE_BACKENDS)
Precision = _axis("Precision", PRECISIONS)
Bm25Backend = _axis("Bm25Backend", BACKENDS)


def refresh_axes() -> None:
    """Rebuild each axis enum whose registry no longer lists the same names."""
    names = globals()
    for enum_name, axis in _AXIS_ENUMS.items():
        if [m.value for m in names[enum_name]] != list(AXES[axis]):
            names[enum_name] = _axis(enum_name, AXES[axis])


class LongText(StrEnum):
    """What a local model embeds of a text longer than its window (max_seq_length)."""

    truncate = "truncate"  # the first window only: what every model did before this key
    window_mean = "window_mean"  # the mean of the embeddings of consecutive windows


class SpanMode(StrEnum):
    exact = "exact"
    chroma = "chroma"


# The context assembly axis (sweep.retrieval.assembly holds the same names: a test keeps them
# equal; the schema takes no stage import for two literals).
class AssemblyOrder(StrEnum):
    rank = "rank"
    document = "document"
    lost_in_middle = "lost_in_middle"


class AssemblyDedup(StrEnum):
    none = "none"
    overlap = "overlap"


class Quantizer(StrEnum):
    int8 = "int8"
    int4 = "int4"
    fp16 = "fp16"


_LIMITS = ParseLimits()


@dataclass
class CorpusConfig:
    name: str = MISSING
    path: str = MISSING
    on_error: str = "raise"  # raise | skip (checked in check_config: `raise` is a keyword)
    extensions: list[str] = field(default_factory=lambda: [
        ".md", ".markdown", ".txt", ".pdf", ".html", ".htm", ".docx"])
    # The parser of each non-markdown format: a sweep axis (the text, hence the evidence and
    # every metric, depends on it). Defaults: the parser that kept the most evidence on the
    # Debian Reference (docs/results/parsers.md).
    pdf_parser: PdfParser = PdfParser[DEFAULT_PARSERS["pdf"]]
    html_parser: HtmlParser = HtmlParser[DEFAULT_PARSERS["html"]]
    docx_parser: DocxParser = DocxParser[DEFAULT_PARSERS["docx"]]
    # Files larger than this (megabytes of 10^6 bytes; 0 = no limit) are refused before they
    # are read, or skipped with on_error=skip: a 200 MB PDF is a scan or a dump, not help text.
    max_file_mb: float = 100.0
    # What one parsed file may cost (sweep.data.parsers.limits; 0 = no limit): a bomb is
    # refused by one of these, before its parser runs, not by running out of memory.
    # The defaults live in ParseLimits only.
    max_pages: int = _LIMITS.max_pages  # pages of a PDF
    max_inflated_mb: float = _LIMITS.max_inflated_mb  # MB a PDF's streams / a Word file inflate to
    max_html_chars: int = _LIMITS.max_html_chars  # characters of an HTML page, decoded
    max_html_depth: int = _LIMITS.max_html_depth  # nested elements (at most 250: libxml2's)


@dataclass
class GoldenConfig:
    name: str = MISSING
    path: str = MISSING


@dataclass
class SemanticConfig:
    window: int = 3  # sentences on each side of a gap
    threshold: float = 95.0  # percentile of the document's drops: 95 = cut at the largest 5%
    model: str = ""  # the model that embeds for cutting; "" = the swept embedding


@dataclass
class ClusterConfig:
    piece_tokens: int = 50  # size of the pieces that are grouped
    model: str = ""  # as semantic.model


@dataclass
class ContextConfig:
    """chunk.header=contextual: an OpenAI-compatible chat endpoint writes each chunk's header."""

    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key
    max_doc_tokens: int = 8000  # longer documents: the section around the chunk is shown
    max_tokens: int = 150  # length limit of one context
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 4
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    dry_run: bool = False  # state the calls, tokens and cost, then stop before spending


@dataclass
class ChunkConfig:
    # The defaults are ChunkSpec's (chunking/chunkers.py), the one home of the chunk defaults.
    boundary: Boundary = Boundary[ChunkSpec.boundary]
    size: int = ChunkSpec.size
    overlap: int = ChunkSpec.overlap
    header: Header = Header[ChunkSpec.header]
    # A named tokenizer (sweep.chunking.tokenizers), a tokenizer.json (or its folder), or a
    # hub id.
    tokenizer: str = DEFAULT_TOKENIZER
    # Settings of the embedded boundaries; each counts only with its own boundary.
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    context: ContextConfig = field(default_factory=ContextConfig)


@dataclass
class EmbeddingConfig:
    name: str = "minilm"
    family: Family = Family[AXES["embedding.family"].names()[0]]
    distill_from: str = "minilm"
    pca_dims: int = 256
    batch_size: int = 32
    query_prefix: str = ""
    document_prefix: str = ""
    # Local models (sentence_transformers, model2vec_distill): where they run. auto = cuda, else
    # mps, else cpu.
    device: str = "auto"
    # family=sentence_transformers: what runs the transformer and at what precision
    # (docs/performance-backends.md); torch fp32 is the reference the quantisation tax is
    # measured against. Not every backend runs every precision (`check_config` says which).
    backend: EncodeBackend = EncodeBackend["torch"]
    precision: Precision = Precision["fp32"]
    # A text longer than the model's window: cut it (what the model does on its own), or embed
    # each window and take the mean (normalised), so the vector covers the whole chunk.
    long_text: LongText = LongText.truncate
    # family=openai: a model behind an OpenAI-compatible endpoint (docs/guide/served-models.md). `model` is the name the endpoint serves; `name` stays the label in tables.
    base_url: str = ""
    model: str = ""
    api_key_env: str = ""  # the NAME of the variable holding the key ("" = send none)
    dimensions: int = 0  # >0: ask a Matryoshka model for this many dimensions
    query_input_type: str = ""  # sent as `input_type` where the API has one (Cohere, Voyage,
    document_input_type: str = ""  # NVIDIA NIM, LiteLLM): e.g. search_query / search_document
    # Cache identity of the served model (the base_url is not part of it): change it when the
    # endpoint starts serving different weights under the same name.
    fingerprint: str = ""
    max_texts_per_request: int = 256
    max_tokens_per_request: int = 0  # 0 = no limit (estimated with the chunk tokenizer)
    requests_per_minute: int = 0  # 0 = no limit
    tokens_per_minute: int = 0
    concurrency: int = 2
    timeout_s: float = 60.0
    max_retries: int = 5
    price_per_mtok: float = 0.0  # USD per million input tokens


HydeEmbed = StrEnum("HydeEmbed", {v: v for v in EMBEDS}, module=__name__)


@dataclass
class TransformConfig:
    """retrieval.query_transform=hyde|multi_query: the OpenAI-compatible chat endpoint that
    writes the passages or the rewrites (`+retrieval/transform=local`: the local model)."""

    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 4
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0


@dataclass
class HydeConfig:
    # What the dense search embeds: the question and the passage, or the passage alone.
    embed: HydeEmbed = HydeEmbed[HydeSpec.embed]
    system_prompt: str = HydeSpec.system_prompt
    prompt: str = HydeSpec.prompt  # {question}
    max_tokens: int = HydeSpec.max_tokens
    temperature: float = HydeSpec.temperature


@dataclass
class MultiQueryConfig:
    n: int = MultiQuerySpec.n  # rewrites asked for (one call per question)
    system_prompt: str = MultiQuerySpec.system_prompt
    prompt: str = MultiQuerySpec.prompt  # {question}, {n}
    max_tokens: int = MultiQuerySpec.max_tokens
    temperature: float = MultiQuerySpec.temperature


@dataclass
class RetrievalConfig:
    method: Method = Method[AXES["retrieval.method"].names()[0]]
    depth: int = 100
    # bm25s: the same scores as rank_bm25 (tested to 1e-9 on SciFact), ~70x faster per query.
    bm25_backend: Bm25Backend = Bm25Backend["bm25s"]
    bm25_k1: float = BM25_K1  # stated once, beside the index (retrieval/bm25.py)
    bm25_b: float = BM25_B
    bm25_stopwords: str = "english"
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    # Also run the retriever(s) the method does not use, only to show in per_question.csv
    # which one found each answer; never changes the metrics.
    diagnose: bool = True
    # What a hit returns (sweep.retrieval.units); every metric is scored on what is returned.
    unit: RetrievalUnit = RetrievalUnit[AXES["retrieval.unit"].off]
    parent_max_tokens: int = 1024
    window_sentences: int = 3
    # What is searched in place of the question (sweep.retrieval.transform): none, a passage a
    # chat model writes (hyde), or model-written rewrites fused by reciprocal rank (multi_query).
    query_transform: QueryTransform = QueryTransform[AXES["retrieval.query_transform"].off]
    transform: TransformConfig = field(default_factory=TransformConfig)
    hyde: HydeConfig = field(default_factory=HydeConfig)
    multi_query: MultiQueryConfig = field(default_factory=MultiQueryConfig)


@dataclass
class RerankConfig:
    method: RerankMethod = RerankMethod[AXES["rerank.method"].off]
    model: str = "cross-encoder/ms-marco-MiniLM-L6-v2"
    pool: int = 50
    batch_size: int = 32
    max_length: int = 512
    # method=cohere: a Cohere-style /rerank endpoint serving `model` (Cohere, Jina, Voyage, TEI,
    # infinity).
    base_url: str = ""
    api_key_env: str = ""
    timeout_s: float = 60.0
    max_retries: int = 5
    concurrency: int = 2
    price_per_mtok: float = 0.0  # USD per million tokens, when the endpoint reports usage
    price_per_request: float = 0.0  # USD per call (Cohere bills per search)


@dataclass
class IndexConfig:
    """The vector index the dense stage searches (docs/guide/indexes.md). ``exact`` is the numpy
    search and the reference every other kind is measured against (the ANN tax)."""

    # The defaults are IndexSpec's (retrieval/index.py), the one home of the index defaults.
    kind: IndexKind = IndexKind[IndexSpec.kind]
    # hnsw (FAISS IndexHNSWFlat): graph degree, build and search beam widths.
    M: int = IndexSpec.M
    ef_construction: int = IndexSpec.ef_construction
    ef_search: int = IndexSpec.ef_search
    # ivf_flat / ivf_pq: coarse cells, cells visited per query, PQ sub-vectors (bytes/vector).
    nlist: int = IndexSpec.nlist
    nprobe: int = IndexSpec.nprobe
    pq_m: int = IndexSpec.pq_m
    # scalar: the stored vector's component type.
    quantizer: Quantizer = Quantizer[IndexSpec.quantizer]
    # binary: sign bits searched by Hamming distance, then this many times the depth
    # rescored with the float vectors.
    rescore: int = IndexSpec.rescore
    seed: int = IndexSpec.seed  # k-means seed of IVF training
    # chroma: a Chroma server (`make chroma-start`); M, ef_construction, ef_search set its HNSW.
    host: str = IndexSpec.host
    port: int = IndexSpec.port


@dataclass
class AssemblyConfig:
    """What reaches the prompt from the ranking (docs/guide/assembly.md): at the defaults the
    top ``eval.prompt_k`` chunks as ranked, as before the axis existed."""

    order: AssemblyOrder = AssemblyOrder.rank
    budget_tokens: int = 0  # whole chunks, best first, until this many tokens; 0: no budget
    dedup: AssemblyDedup = AssemblyDedup.none


@dataclass
class GenerationConfig:
    method: GenerationMethod = GenerationMethod[AXES["generation.method"].off]
    # Only the first `limit` scorable questions (0 = all): generation is the expensive half.
    limit: int = 0
    # extractive: the context sentences closest to the question, best first, up to:
    max_chars: int = 400
    max_sentences: int = 2
    # openai: any OpenAI-compatible chat-completions endpoint.
    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable holding the key
    system_prompt: str = ""
    prompt: str = "{context}\n\nQuestion: {question}"
    temperature: float = 0.0
    max_tokens: int = 256
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 4
    price_input_per_mtok: float = 0.0  # USD per million tokens, for the cost estimate
    price_output_per_mtok: float = 0.0
    # Keep every answer in cache.dir/answers.sqlite, keyed on the model name, the prompt and
    # the parameters; the endpoint must list `model` at /models (generation=local turns it on).
    cache_answers: bool = False


@dataclass
class JudgeConfig:
    method: JudgeMethod = JudgeMethod[AXES["judge.method"].off]
    base_url: str = "http://127.0.0.1:11434/v1"
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 4
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0


@dataclass
class EvalConfig:
    k: list[int] = field(default_factory=lambda: [1, 3, 5, 10])
    prompt_k: int = 5
    token_budget: int = 1024
    min_overlap: float = 0.5
    # Where span metrics place chunks: exact (their true spans) or chroma (as Chroma's
    # evaluation code does, to reproduce its figures; evaluation/placement.py).
    span_mode: SpanMode = SpanMode.exact
    headline: str = "recall_at_${eval.prompt_k}"
    latency_sample: int = 100  # questions timed one by one, uncached, for p50/p95 latency
    # Split the headline metrics by the kind of content each question's evidence sits in
    # (by_content/<kind>/<metric>: docs/guide/content-kinds.md). Changes no number; off by
    # default so that every recorded run keeps its set of metrics.
    by_content: bool = False


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str = "sqlite:///${cwd:}/mlflow.db"
    experiment: str = "chunk-sweep-${golden.name}"
    # Seconds a statement on a SQLite store waits while another process writes to it
    # (SQLite's busy timeout) before the job says, in one line, that the store is held.
    store_wait_s: float = 60.0


@dataclass
class CacheConfig:
    enabled: bool = True
    # $CHUNK_SWEEP_CACHE_DIR moves it without an override on every command (the test suite
    # points it at a temporary folder so a run leaves the repository as it found it).
    dir: str = "${oc.env:CHUNK_SWEEP_CACHE_DIR,${project_root:}/.cache}"
    # Where the embedding, token-starts, chunk-spans and parse caches keep their rows: a SQLite
    # file per cache in cache.dir (one machine), or one PostgreSQL database every node of a
    # cluster reaches (docs/guide/cluster.md). cache.dir still holds what is never shared
    # (model exports, BM25 index folders).
    backend: str = "sqlite"  # sqlite | postgres
    url: str = ""  # postgres: postgresql://USER@HOST:PORT/DB, never with a password
    password_env: str = ""  # the NAME of the variable holding the password ("" = none sent)
    # Before a multirun fans out, the texts more than one configuration needs are planned and
    # embedded once, by the jobs that claim them (docs/guide/cluster.md). auto: when the
    # launcher runs jobs side by side; on: with any launcher; off: never.
    prewarm: str = "auto"  # auto | on | off


@dataclass
class QuestionsConfig:
    """`sweep questions import|generate`: building the labelling queue (changes no metric)."""

    # Near-duplicate merging: cosine of the questions' vectors (embedding.* model) at or above
    # which two questions are one candidate.
    near_threshold: float = 0.9
    max_variants: int = 5  # other phrasings kept on a candidate
    # generate: passages drawn from the corpus (chunked as chunk.*), questions asked per
    # passage, the draw's seed; the chat endpoint is generation.base_url/model/api_key_env.
    passages: int = 20
    per_passage: int = 2
    seed: int = 0
    generate_prompt: str = QUESTIONS_PROMPT  # fields {passage}, {title}, {n}
    generate_system: str = ""
    temperature: float = 0.7
    max_tokens: int = 200


@dataclass
class SweepConfig:
    # Re-run configurations the store already has as FINISHED (same config_hash); by default
    # they are skipped, so an interrupted sweep resumes where it stopped.
    force: bool = False
    # Write the golden set's audit (audit.json, audit.html: `sweep audit`) into the sweep's
    # folder (a single run's job folder) and log it with the parent run (the run).
    audit: bool = True


@dataclass
class Config:
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    golden: GoldenConfig = field(default_factory=GoldenConfig)
    chunk: ChunkConfig = field(default_factory=ChunkConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    assembly: AssemblyConfig = field(default_factory=AssemblyConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    questions: QuestionsConfig = field(default_factory=QuestionsConfig)


# The structured node of `Config` per set of axis enums (`refresh_axes` may replace them).
_SCHEMA_NODE: dict[tuple[int, ...], DictConfig] = {}


def _schema_node() -> DictConfig:
    key = tuple(id(globals()[name]) for name in _AXIS_ENUMS)
    node = _SCHEMA_NODE.get(key)
    if node is None:
        _SCHEMA_NODE.clear()
        node = _SCHEMA_NODE[key] = OmegaConf.structured(Config)
    return node


def typed_config(plain: object) -> Config:
    """``plain`` (a job's composed config, ``hydra`` left out) merged onto the schema and
    converted to `Config`. The schema's node is built once per process: building it reads
    every dataclass (~20 ms, once per job of a sweep before); `OmegaConf.merge` copies its
    first argument, so the node is never changed."""
    return OmegaConf.to_object(OmegaConf.merge(_schema_node(), plain))  # type: ignore[return-value]


def composed_config(plain: DictConfig) -> Config:
    """`typed_config` of a job's config as Hydra composed it (``hydra`` left out, e.g. by
    ``OmegaConf.masked_copy``): when each section is already the schema's own node type, the
    sections are converted as they are, as the job itself converts its config
    (``OmegaConf.to_object``), instead of being merged onto the schema again (a third of the
    cost: the sweep's up-front check does this for every job). Anything else (a key the
    schema lacks, a section of another type, a schema whose axes were refreshed since):
    `typed_config`, which says what is wrong."""
    schema = _schema_node()
    if all(key in schema and OmegaConf.get_type(plain, key) is OmegaConf.get_type(schema, key)
           for key in plain):
        sections = OmegaConf.to_object(plain)
        return Config(**sections)  # type: ignore[arg-type]
    return typed_config(plain)


def register() -> None:
    """Register the schema and the resolvers used by the YAML files (idempotent)."""
    refresh_axes()
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT), replace=True)
    OmegaConf.register_new_resolver("cwd", os.getcwd, replace=True)
    # The bundled demo (data/demo in a clone, sweep/demo in an installed wheel).
    OmegaConf.register_new_resolver("demo_dir", lambda: str(demo_path()), replace=True)


