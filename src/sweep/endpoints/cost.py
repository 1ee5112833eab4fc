"""Every cost formula of a call to an endpoint, and the per-configuration usage metrics.

Prices are per million tokens (and, for rerank, per request); a formula keeps the order of
operations it always had, so a cost metric is the same float before and after a refactoring.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from sweep.endpoints.chat import ChatUsage
from sweep.endpoints.http import RequestUsage


def per_mtok(tokens: float, price_per_mtok: float) -> float:
    """Dollars for ``tokens`` at ``price_per_mtok`` per million."""
    return tokens * price_per_mtok / 1e6


def request_cost(tokens: float, requests: float, price_per_mtok: float,
                 price_per_request: float) -> float:
    """Tokens and requests (a rerank endpoint prices either or both)."""
    return per_mtok(tokens, price_per_mtok) + requests * price_per_request


def chat_cost(prompt_tokens: float, completion_tokens: float, price_in_per_mtok: float,
              price_out_per_mtok: float) -> float:
    """Input and output tokens at their two prices."""
    return (prompt_tokens * price_in_per_mtok + completion_tokens * price_out_per_mtok) / 1e6


def chat_cost_usd(usage: ChatUsage, price_in_per_mtok: float, price_out_per_mtok: float
                  ) -> float | None:
    """Estimated cost from reported token counts; None when the endpoint reported no usage or
    no price is configured."""
    if not usage.reported or (price_in_per_mtok <= 0 and price_out_per_mtok <= 0):
        return None
    return chat_cost(usage.prompt_tokens, usage.completion_tokens, price_in_per_mtok,
                     price_out_per_mtok)


def chat_usage_metrics(prefix: str, usage: ChatUsage, price_in_per_mtok: float,
                       price_out_per_mtok: float) -> dict[str, float]:
    """``{prefix}_prompt_tokens`` and ``_completion_tokens`` when the endpoint reported usage,
    ``{prefix}_cost_usd`` when a price is configured too: a configuration's metrics for one
    chat-backed step (contextual headers, query transforms)."""
    out: dict[str, float] = {}
    if usage.reported:
        out[f"{prefix}_prompt_tokens"] = float(usage.prompt_tokens)
        out[f"{prefix}_completion_tokens"] = float(usage.completion_tokens)
    cost = chat_cost_usd(usage, price_in_per_mtok, price_out_per_mtok)
    if cost is not None:
        out[f"{prefix}_cost_usd"] = cost
    return out


# --------------------------------------------------------------------------- metrics


@runtime_checkable
class Metered(Protocol):
    """A served model whose requests a configuration's metrics count (the served embedder,
    the served reranker): ``{metric_prefix}_requests`` etc."""

    metric_prefix: str
    reports_cache_hits: bool  # adds ``{metric_prefix}_cache_hits`` (texts the cache answered)

    @property
    def usage(self) -> RequestUsage: ...

    def cost(self, usage: RequestUsage) -> float: ...


def usage_metrics(prefix: str, usage: RequestUsage, cost: float) -> dict[str, float]:
    """Per-configuration metrics of what was sent (``{prefix}_tokens`` etc.)."""
    return {f"{prefix}_requests": float(usage.requests),
            f"{prefix}_retries": float(usage.retries),
            f"{prefix}_texts_sent": float(usage.texts),
            f"{prefix}_tokens": float(usage.tokens),
            f"{prefix}_tokens_counted": float(usage.tokens_counted),
            f"{prefix}_cost_usd": float(cost)}


def served_usage_before(part: Any) -> dict[str, RequestUsage]:
    """A snapshot of a served model's usage (empty for a local one)."""
    if isinstance(part, Metered):
        return {part.metric_prefix: part.usage.copy()}
    return {}


def served_usage_metrics(before: dict[str, RequestUsage], *parts: Any) -> dict[str, float]:
    """What one configuration sent to its endpoints since ``before``: per endpoint requests,
    retries, texts, tokens, dollars; ``n_requests`` and ``served_cost_usd`` over all of them.
    Empty when nothing is served."""
    out: dict[str, float] = {}
    total_requests, total_cost = 0, 0.0
    for part in parts:
        if not isinstance(part, Metered) or part.metric_prefix not in before:
            continue
        u = part.usage.minus(before[part.metric_prefix])
        cost = part.cost(u)
        out.update(usage_metrics(part.metric_prefix, u, cost))
        if part.reports_cache_hits:
            out[f"{part.metric_prefix}_cache_hits"] = float(u.cached)
        total_requests, total_cost = total_requests + u.requests, total_cost + cost
    if out:
        out["n_requests"] = float(total_requests)
        out["served_cost_usd"] = total_cost
    return out
