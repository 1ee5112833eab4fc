"""Structured-config schema (validated by Hydra/OmegaConf before any work starts).

YAML in ``conf/`` holds the values; these dataclasses hold the shape. A wrong key fails with
"Key 'x' not in 'ChunkConfig'", a wrong choice with "Invalid value 'x', expected one of [...]".
Checks that span several keys (overlap < size) live in `check_config`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from sweep.common.errors import SweepError
from sweep.common.paths import PROJECT_ROOT


def conf_dir() -> Path:
    """The ``conf/`` folder, as an absolute path.

    Hydra resolves a relative ``config_path`` against the calling module, which breaks as soon
    as the package is imported from elsewhere; an absolute path does not.
    ``$CHUNK_SWEEP_CONF_DIR`` overrides it (e.g. for a non-editable install).
    """
    path = Path(os.environ.get("CHUNK_SWEEP_CONF_DIR") or PROJECT_ROOT / "conf").resolve()
    if not (path / "config.yaml").is_file():
        raise SweepError(f"config folder not found: {path}",
                         hint="run from a clone of chunk-sweep or set CHUNK_SWEEP_CONF_DIR")
    return path


class Boundary(StrEnum):
    fixed = "fixed"
    sentence = "sentence"
    paragraph = "paragraph"
    heading = "heading"
    recursive = "recursive"


class Header(StrEnum):
    none = "none"
    title = "title"
    path = "path"


class Family(StrEnum):
    sentence_transformers = "sentence_transformers"
    model2vec_distill = "model2vec_distill"
    openai = "openai"  # any OpenAI-compatible /v1/embeddings endpoint (sweep.embedding.served)


class Method(StrEnum):
    dense = "dense"
    bm25 = "bm25"
    hybrid = "hybrid"


class Bm25Backend(StrEnum):
    rank_bm25 = "rank_bm25"
    bm25s = "bm25s"


class RerankMethod(StrEnum):
    none = "none"
    cross_encoder = "cross_encoder"
    cohere = "cohere"  # a Cohere-style POST /rerank endpoint (sweep.embedding.served)


class GenerationMethod(StrEnum):
    none = "none"
    extractive = "extractive"
    openai = "openai"


class JudgeMethod(StrEnum):
    none = "none"
    openai = "openai"


@dataclass
class CorpusConfig:
    name: str = MISSING
    path: str = MISSING
    on_error: str = "raise"  # raise | skip (checked in check_config: `raise` is a keyword)
    extensions: list[str] = field(default_factory=lambda: [".md", ".markdown", ".txt"])


@dataclass
class GoldenConfig:
    name: str = MISSING
    path: str = MISSING


@dataclass
class ChunkConfig:
    boundary: Boundary = Boundary.recursive
    size: int = 256
    overlap: int = 0
    header: Header = Header.none
    tokenizer: str = "minilm"


@dataclass
class EmbeddingConfig:
    name: str = "minilm"
    family: Family = Family.sentence_transformers
    distill_from: str = "minilm"
    pca_dims: int = 256
    batch_size: int = 32
    query_prefix: str = ""
    document_prefix: str = ""
    # Local models (sentence_transformers, model2vec_distill): where they run. auto = cuda, else
    # mps, else cpu.
    device: str = "auto"
    # family=openai: a model behind an OpenAI-compatible endpoint (README, "Models behind an
    # endpoint"). `model` is the name the endpoint serves; `name` stays the label in tables.
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


@dataclass
class RetrievalConfig:
    method: Method = Method.dense
    depth: int = 100
    # bm25s: the same scores as rank_bm25 (tested to 1e-9 on SciFact), ~70x faster per query.
    bm25_backend: Bm25Backend = Bm25Backend.bm25s
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    bm25_stopwords: str = "english"
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    # Also run the retriever(s) the method does not use, only to show in per_question.csv
    # which one found each answer; never changes the metrics.
    diagnose: bool = True


@dataclass
class RerankConfig:
    method: RerankMethod = RerankMethod.none
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
class GenerationConfig:
    method: GenerationMethod = GenerationMethod.none
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


@dataclass
class JudgeConfig:
    method: JudgeMethod = JudgeMethod.none
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
    headline: str = "recall_at_${eval.prompt_k}"
    latency_sample: int = 100  # questions timed one by one, uncached, for p50/p95 latency


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str = "sqlite:///${cwd:}/mlflow.db"
    experiment: str = "chunk-sweep-${golden.name}"


@dataclass
class CacheConfig:
    enabled: bool = True
    dir: str = "${project_root:}/.cache"


@dataclass
class SweepConfig:
    # Re-run configurations the store already has as FINISHED (same config_hash); by default
    # they are skipped, so an interrupted sweep resumes where it stopped.
    force: bool = False


@dataclass
class Config:
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    golden: GoldenConfig = field(default_factory=GoldenConfig)
    chunk: ChunkConfig = field(default_factory=ChunkConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)


def register() -> None:
    """Register the schema and the resolvers used by the YAML files (idempotent)."""
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=Config)
    OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT), replace=True)
    OmegaConf.register_new_resolver("cwd", os.getcwd, replace=True)


