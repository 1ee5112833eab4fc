"""Second-stage reranking: a sentence-transformers CrossEncoder on this machine, or a
cross-encoder behind a Cohere-style ``/rerank`` endpoint (`ServedReranker`, through
`sweep.endpoints`).

No trained cross-encoder ships on PyPI, so on an offline machine ``rerank.model`` must be a
local folder (any CrossEncoder saved with ``save_pretrained``, or a Hugging Face
sequence-classification model with its tokenizer). Where a hub is reachable, a hub id such as
``cross-encoder/ms-marco-MiniLM-L6-v2`` works as is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from sweep.common.errors import SweepError, model_load_error
from sweep.common.hf import quiet_transformers
from sweep.common.registry import Entry, Registry, Traits
from sweep.embedding.served import estimate_tokens
from sweep.endpoints.cost import request_cost
from sweep.endpoints.http import HttpEndpoint, RequestUsage, usage_tokens
from sweep.endpoints.spec import EndpointSpec


@dataclass(frozen=True)
class RerankSpec:
    model: str
    batch_size: int = 32
    max_length: int = 512


class CrossEncoderReranker:
    def __init__(self, spec: RerankSpec) -> None:
        quiet_transformers()
        from sentence_transformers import CrossEncoder

        self.spec = spec
        try:
            self.model: Any = CrossEncoder(spec.model, device="cpu", max_length=spec.max_length)
        except Exception as exc:
            raise model_load_error("rerank.model", spec.model, "cross-encoder", exc,
                                   "offline, rerank.model must be a local CrossEncoder folder "
                                   "(see docs/guide/retrieval.md, 'Reranking')") from None

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float64)
        out = self.model.predict([(query, t) for t in texts], batch_size=self.spec.batch_size,
                                 show_progress_bar=False, convert_to_numpy=True)
        out = np.asarray(out, dtype=np.float64)
        return out if out.ndim == 1 else out[:, -1]  # 2-label heads: the "relevant" logit


# One reranker per spec for the process: a model loads once, a served one keeps its usage.
@cache
def get_reranker(spec: RerankSpec) -> CrossEncoderReranker:
    return CrossEncoderReranker(spec)


# --------------------------------------------------------------------------- served


@dataclass(frozen=True)
class ServedRerankSpec:
    endpoint: EndpointSpec
    model: str
    price_per_mtok: float = 0.0
    price_per_request: float = 0.0


def parse_rerank(data: Any, n: int, url: str) -> np.ndarray:
    """One score per document, in input order, from a Cohere-style answer (``results``;
    Voyage calls it ``data``), each item ``{"index", "relevance_score"}`` (or ``score``)."""
    items = None
    if isinstance(data, dict):
        items = data.get("results", data.get("data"))
    elif isinstance(data, list):  # text-embeddings-inference answers with the bare list
        items = data
    if not isinstance(items, list):
        raise SweepError(f"rerank: {url}: the answer has no 'results' list "
                         "(not a Cohere-style rerank response)")
    if len(items) != n:
        raise SweepError(f"rerank: {url}: {len(items)} scores for {n} documents")
    scores = np.full(n, np.nan)
    for item in items:
        idx = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) \
            else None
        if not isinstance(idx, int) or not 0 <= idx < n or not np.isnan(scores[idx]):
            raise SweepError(f"rerank: {url}: bad or repeated index {idx!r} in the results")
        if not isinstance(score, int | float) or not np.isfinite(score):
            raise SweepError(f"rerank: {url}: a score that is not a finite number: {score!r}")
        scores[idx] = float(score)
    return scores


@dataclass
class ServedReranker:
    """A cross-encoder behind a Cohere-style ``POST {base_url}/rerank``: ``{"model", "query",
    "documents", "top_n"}`` -> ``{"results": [{"index", "relevance_score"}]}``. Scores are not
    cached: every call (the scored pass and the latency sample) is a request, counted in
    ``usage``."""

    spec: ServedRerankSpec
    http: HttpEndpoint = field(init=False)
    metric_prefix = "rerank"  # sweep.endpoints.cost.Metered: rerank_requests, ...
    reports_cache_hits = False

    def __post_init__(self) -> None:
        if not self.spec.model:
            raise SweepError("rerank.model is empty: name the model the endpoint serves")
        self.http = HttpEndpoint(self.spec.endpoint)

    @property
    def usage(self) -> RequestUsage:
        return self.http.usage

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float64)
        # The fields Cohere (v1, v2), Jina, vLLM, LiteLLM and infinity share; top_n = all, so
        # every document gets a score.
        body = {"model": self.spec.model, "query": query, "documents": list(texts),
                "top_n": len(texts)}
        estimate = sum(estimate_tokens([query, *texts]))
        data = self.http.post("rerank", body, estimate)
        scores = parse_rerank(data, len(texts), self.http.url("rerank"))
        reported = usage_tokens(data)
        self.http.count(len(texts), estimate if reported is None else reported, reported is None)
        return scores

    def cost(self, usage: RequestUsage) -> float:
        return request_cost(usage.tokens, usage.requests, self.spec.price_per_mtok,
                            self.spec.price_per_request)


@cache
def get_served_reranker(spec: ServedRerankSpec) -> ServedReranker:
    return ServedReranker(spec)


# The rerank.method axis. `none` is its off value (the rerank section stays out of
# config_hash). `cohere` is a Cohere-style POST /rerank endpoint (Cohere, Jina, Voyage, TEI,
# infinity), served by ServedReranker above: its answers come from outside the machine.
RERANK: Registry[Callable[[Any], Any]] = Registry("rerank.method", [
    Entry("none", doc="no second stage"),
    Entry("cross_encoder", get_reranker, model_keys=("model",),
          doc="a sentence-transformers CrossEncoder (`model`)"),
    Entry("cohere", get_served_reranker,
          traits=Traits(remote=True, costs_money=True, deterministic=False),
          doc="a Cohere-style POST /rerank endpoint"),
], off="none")
