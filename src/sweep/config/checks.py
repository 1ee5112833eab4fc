"""Cross-key checks the schema cannot express (overlap < size, depth >= k, ...).

A rule that belongs to a stage (which chunk boundaries exist, which metrics an evaluation
reports) is the stage's own: it is reached through the spec `config.specs` builds, so this
module imports no stage code and the rule is written once.
"""

from __future__ import annotations

from sweep.common.errors import SweepError
from sweep.config.axes import AXES
from sweep.config.schema import Config
from sweep.config.specs import chunk_spec, corpus_limits, eval_spec


def check_config(cfg: Config) -> None:
    """Cross-field checks the schema cannot express; raises a one-line `SweepError`."""
    chunk_spec(cfg).validate()  # the chunker's own rules (allowed boundary, overlap < size)
    from sweep.config.specs import cutting_spec, unit_spec

    unit_spec(cfg).validate()
    cutting = cutting_spec(cfg)  # an embedded boundary's settings (None: a tiling one)
    if cutting is not None:
        cutting.params.validate()
        if cfg.chunk.overlap:
            raise SweepError(f"chunk.overlap={cfg.chunk.overlap}: chunk.boundary="
                             f"{cfg.chunk.boundary.value} takes no overlap (set chunk.overlap=0)")
    if cfg.cache.prewarm not in ("auto", "on", "off"):
        raise SweepError(f"cache.prewarm={cfg.cache.prewarm!r} is not one of auto, on, off")
    for key, value in (("corpus.path", cfg.corpus.path), ("golden.path", cfg.golden.path)):
        # an empty path is the current folder to the file system: a built site, a home folder
        if not str(value or "").strip():
            raise SweepError(f"{key} is empty: set it to a "
                             + ("folder of documents" if key == "corpus.path" else
                                "golden set file") + f" ({key}=PATH)")
    if cfg.corpus.on_error not in ("raise", "skip"):
        raise SweepError(f"corpus.on_error={cfg.corpus.on_error!r} is not one of raise, skip")
    corpus_limits(cfg).validate()
    if not cfg.corpus.max_file_mb >= 0:  # also refuses NaN
        raise SweepError(f"corpus.max_file_mb={cfg.corpus.max_file_mb} must be >= 0 "
                         "(0 = no limit)")
    if not cfg.eval.k or any(k < 1 for k in cfg.eval.k):
        raise SweepError(f"eval.k={list(cfg.eval.k)} must be a non-empty list of integers >= 1")
    if cfg.eval.prompt_k < 1:
        raise SweepError(f"eval.prompt_k={cfg.eval.prompt_k} must be >= 1")
    if cfg.eval.token_budget < 1:
        raise SweepError(f"eval.token_budget={cfg.eval.token_budget} must be >= 1")
    if cfg.assembly.budget_tokens < 0:
        raise SweepError(f"assembly.budget_tokens={cfg.assembly.budget_tokens} must be >= 0 "
                         "(0 = no budget)")
    if not 0 < cfg.eval.min_overlap <= 1:
        raise SweepError(f"eval.min_overlap={cfg.eval.min_overlap} must be in (0, 1]")
    # Name the key that asks for more than the depth gives: the one the user set.
    for name, need in (("largest eval.k", max(cfg.eval.k)), ("eval.prompt_k", cfg.eval.prompt_k)):
        if cfg.retrieval.depth < need:
            raise SweepError(f"retrieval.depth={cfg.retrieval.depth} must be at least the "
                             f"{name} ({need})")
    if cfg.retrieval.rrf_k < 1:
        raise SweepError(f"retrieval.rrf_k={cfg.retrieval.rrf_k} must be >= 1")
    if cfg.retrieval.dense_weight < 0 or cfg.retrieval.bm25_weight < 0:
        raise SweepError("retrieval.dense_weight and retrieval.bm25_weight must be >= 0")
    if cfg.retrieval.bm25_k1 < 0 or not 0 <= cfg.retrieval.bm25_b <= 1:
        raise SweepError("retrieval.bm25_k1 must be >= 0 and retrieval.bm25_b in [0, 1]")
    # The pool only matters when a reranker runs; rerank=none must not constrain the depth.
    if cfg.rerank.method.value != AXES["rerank.method"].off and not 1 <= cfg.rerank.pool <= cfg.retrieval.depth:
        raise SweepError(f"rerank.pool={cfg.rerank.pool} must be between 1 and "
                         f"retrieval.depth={cfg.retrieval.depth}")
    if cfg.eval.latency_sample < 0:
        raise SweepError(f"eval.latency_sample={cfg.eval.latency_sample} must be >= 0")
    names = eval_spec(cfg).metric_names()
    if cfg.eval.headline not in names:
        raise SweepError(f"eval.headline={cfg.eval.headline!r} is not a metric of this run "
                         f"(one of: {', '.join(names)})")
    if cfg.embedding.batch_size < 1:
        raise SweepError(f"embedding.batch_size={cfg.embedding.batch_size} must be >= 1")
    from sweep.config.specs import index_spec

    index_spec(cfg).validate()
    check_generation(cfg)
    check_transform(cfg)
    check_served(cfg)
    check_backend(cfg)


def check_transform(cfg: Config) -> None:
    """retrieval.query_transform: the passage HyDE writes is embedded, so it needs a vector
    search; the prompts must hold what they are filled with."""
    r = cfg.retrieval
    method = r.query_transform.value
    if method == AXES["retrieval.query_transform"].off:
        return
    if method == "hyde" and not AXES["retrieval.method"].has(r.method.value, "needs_embedder"):
        raise SweepError(f"retrieval.query_transform=hyde embeds a passage for the dense search: "
                         f"retrieval.method={r.method.value} has none (use dense or hybrid)")
    if not r.transform.model:
        raise SweepError(f"retrieval.query_transform={method}: retrieval.transform.model is "
                         "empty (+retrieval/transform=local: the model of make llm-server)")
    spec = r.hyde if method == "hyde" else r.multi_query
    if "{question}" not in spec.prompt:
        raise SweepError(f"retrieval.{method}.prompt must contain {{question}}")
    if spec.max_tokens < 1:
        raise SweepError(f"retrieval.{method}.max_tokens={spec.max_tokens} must be >= 1")
    if method == "multi_query" and r.multi_query.n < 1:
        raise SweepError(f"retrieval.multi_query.n={r.multi_query.n} must be >= 1")
    t = r.transform
    for name, bad in (("concurrency", t.concurrency < 1), ("timeout_s", t.timeout_s <= 0),
                      ("max_retries", t.max_retries < 0)):
        if bad:
            raise SweepError(f"retrieval.transform.{name}={getattr(t, name)} is out of range "
                             "(concurrency >= 1, timeout_s > 0, max_retries >= 0)")


def check_backend(cfg: Config) -> None:
    """embedding.backend and embedding.precision (`EmbeddingSpec.check_backend`)."""
    from sweep.config.specs import embedding_spec

    embedding_spec(cfg).check_backend()
    embedding_spec(cfg).check_long_text()


def check_served(cfg: Config) -> None:
    """Settings of models behind an endpoint (a remote embedding family or reranker)."""
    e, r = cfg.embedding, cfg.rerank
    device = e.device
    if device not in ("auto", "cpu", "cuda", "mps") and not device.startswith("cuda:"):
        raise SweepError(f"embedding.device={device!r} is not one of auto, cpu, cuda, cuda:N, mps")
    sections = []
    if AXES["embedding.family"].has(e.family.value, "remote"):
        sections.append(("embedding", e))
        if not e.model:
            raise SweepError("embedding.model is empty: name the model the endpoint serves "
                             "(embedding.name is only the label)")
        for name, value in (("max_texts_per_request", e.max_texts_per_request),):
            if value < 1:
                raise SweepError(f"embedding.{name}={value} must be >= 1")
        for name, value in (("dimensions", e.dimensions),
                            ("max_tokens_per_request", e.max_tokens_per_request),
                            ("requests_per_minute", e.requests_per_minute),
                            ("tokens_per_minute", e.tokens_per_minute),
                            ("price_per_mtok", e.price_per_mtok)):
            if value < 0:
                raise SweepError(f"embedding.{name}={value} must be >= 0 (0 = off)")
    if AXES["rerank.method"].has(r.method.value, "remote"):
        sections.append(("rerank", r))
        if not r.model:
            raise SweepError("rerank.model is empty: name the model the endpoint serves")
        if r.price_per_mtok < 0 or r.price_per_request < 0:
            raise SweepError("rerank.price_per_mtok and rerank.price_per_request must be >= 0")
    for section, c in sections:
        if not c.base_url.startswith(("http://", "https://")):
            raise SweepError(f"{section}.base_url={c.base_url!r} is not an http(s) URL",
                             hint="e.g. http://127.0.0.1:7997/v1 (make model-server)")
        if c.concurrency < 1:
            raise SweepError(f"{section}.concurrency={c.concurrency} must be >= 1")
        if c.timeout_s <= 0:
            raise SweepError(f"{section}.timeout_s={c.timeout_s} must be > 0")
        if c.max_retries < 0:
            raise SweepError(f"{section}.max_retries={c.max_retries} must be >= 0")


def check_generation(cfg: Config) -> None:
    g, j = cfg.generation, cfg.judge
    if g.method.value == AXES["generation.method"].off:
        return
    if g.limit < 0:
        raise SweepError(f"generation.limit={g.limit} must be >= 0 (0 = every question)")
    if g.max_chars < 1 or g.max_sentences < 1:
        raise SweepError("generation.max_chars and generation.max_sentences must be >= 1")
    for name, value in (("generation.max_tokens", g.max_tokens),
                        ("generation.concurrency", g.concurrency),
                        ("judge.concurrency", j.concurrency)):
        if value < 1:
            raise SweepError(f"{name}={value} must be >= 1")
    for name, value in (("generation.timeout_s", g.timeout_s), ("judge.timeout_s", j.timeout_s)):
        if value <= 0:
            raise SweepError(f"{name}={value} must be > 0")
    if g.max_retries < 0 or j.max_retries < 0:
        raise SweepError("generation.max_retries and judge.max_retries must be >= 0")
    if AXES["generation.method"].has(g.method.value, "remote"):  # a prompted chat model
        missing = [p for p in ("{context}", "{question}") if p not in g.prompt]
        if missing:
            raise SweepError(f"generation.prompt must contain {' and '.join(missing)}")

