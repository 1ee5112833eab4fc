"""Config -> plain specs: the one place where a stage's settings are read off a `Config`."""

from __future__ import annotations

from sweep.config.schema import Config
from sweep.embedding.models import EmbeddingSpec
from sweep.embedding.served import EndpointSpec, ServedRerankSpec, ServedSpec


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
                         e.query_prefix, e.document_prefix, e.device, served)


def served_rerank_spec(cfg: Config) -> ServedRerankSpec:
    r = cfg.rerank
    return ServedRerankSpec(EndpointSpec("rerank", r.base_url, r.api_key_env, r.timeout_s,
                                         r.max_retries, r.concurrency),
                            r.model, r.price_per_mtok, r.price_per_request)
