"""Contextual chunk headers (``chunk.header=contextual``): a chat model writes, for each chunk,
a short context that situates it in its document (Anthropic's "contextual retrieval" idea).

The context is prepended to the chunk's ``embed_text`` (what is embedded and indexed by BM25),
never to its span, so relevance is unchanged. Each context is cached on disk by (model, prompt
version, document hash, chunk span, hash of the text shown): a re-run, and every configuration
that shares a chunk, pays once. Contexts are written to the cache only after every call of the
run has succeeded, so a failing endpoint leaves no partial entries.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sweep.chunking.chunkers import Chunk, TokenizedDoc
from sweep.common.errors import SweepError
from sweep.common.paths import resolve_user_path
from sweep.common.sqlite import open_db, parts_key
from sweep.data.corpus import Document
from sweep.endpoints.chat import ChatClient, ChatUsage
from sweep.endpoints.cost import chat_cost, chat_usage_metrics
from sweep.retrieval.units import parent_span

log = logging.getLogger(__name__)

# Changing the prompt changes every context: bump the version with it (it is in the cache key).
PROMPT_VERSION = "contextual-v1"
PROMPT = (
    "Here is a document:\n<document>\n{document}\n</document>\n\n"
    "Here is a passage from it:\n<passage>\n{chunk}\n</passage>\n\n"
    "In one to three sentences, say where this passage sits in the document and what it is "
    "about, so that a search for it would find it. Reply with those sentences only."
)


@dataclass(frozen=True)
class ContextSpec:
    max_doc_tokens: int = 8000  # show the section around the chunk when the document is longer
    max_tokens: int = 150  # the context's length limit (completion tokens)
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    dry_run: bool = False


class ContextCache:
    """Contexts already paid for; same SQLite/WAL arrangement as the judge cache."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, "CREATE TABLE IF NOT EXISTS contexts (key BLOB PRIMARY "
                           "KEY, context TEXT NOT NULL) WITHOUT ROWID", "context cache")

    def get(self, key: bytes) -> str | None:
        row = self._db.execute("SELECT context FROM contexts WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put_many(self, items: Sequence[tuple[bytes, str]]) -> None:
        self._db.execute("BEGIN")  # one transaction: all or nothing
        try:
            self._db.executemany("INSERT OR REPLACE INTO contexts VALUES (?, ?)", items)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def get_context_cache(folder: str | Path) -> ContextCache:
    return ContextCache(resolve_user_path(Path(folder) / "contexts.sqlite", "cache.dir"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def source_text(d: TokenizedDoc, chunk: Chunk, max_doc_tokens: int) -> str:
    """What the model is shown around the chunk: the document, or when it holds more than
    ``max_doc_tokens`` tokens the section run around the chunk cut to that many."""
    if d.count(0, len(d.text)) <= max_doc_tokens:
        return d.text
    a, b = parent_span(d, (chunk.start, chunk.end), max_doc_tokens)
    return d.text[a:b]


@dataclass
class ContextPlan:
    """The calls a run needs: one per chunk whose context is not cached."""

    keys: list[bytes]
    messages: dict[bytes, list[dict[str, str]]]  # the uncached ones, by key
    cached: dict[bytes, str]
    input_chars: int

    def estimate(self, spec: ContextSpec) -> dict[str, float]:
        # ~4 characters per token for English text: an estimate, stated as such.
        tokens_in = self.input_chars / 4
        tokens_out = len(self.messages) * spec.max_tokens
        cost = chat_cost(tokens_in, tokens_out, spec.price_input_per_mtok,
                         spec.price_output_per_mtok)
        return {"calls": float(len(self.messages)), "input_tokens_est": tokens_in,
                "output_tokens_max": float(tokens_out), "cost_usd_est": cost}


def plan_contexts(chunks: Sequence[Chunk], docs: Sequence[Document],
                  starts: Sequence[np.ndarray], model: str, spec: ContextSpec,
                  cache: ContextCache | None) -> ContextPlan:
    by_id = {doc.doc_id: TokenizedDoc(doc, s) for doc, s in zip(docs, starts, strict=True)}
    doc_hash = {doc.doc_id: _sha(doc.text) for doc in docs}
    keys: list[bytes] = []
    messages: dict[bytes, list[dict[str, str]]] = {}
    cached: dict[bytes, str] = {}
    chars = 0
    for c in chunks:
        source = source_text(by_id[c.doc_id], c, spec.max_doc_tokens)
        key = parts_key([model, PROMPT_VERSION, doc_hash[c.doc_id], f"{c.start}:{c.end}",
                         _sha(source)])
        keys.append(key)
        if key in cached or key in messages:
            continue
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            cached[key] = hit
            continue
        prompt = PROMPT.format(document=source, chunk=c.text)
        messages[key] = [{"role": "user", "content": prompt}]
        chars += len(prompt)
    return ContextPlan(keys, messages, cached, chars)


@dataclass
class ContextOutcome:
    chunks: list[Chunk]
    metrics: dict[str, float]


def add_contexts(chunks: Sequence[Chunk], docs: Sequence[Document],
                 starts: Sequence[np.ndarray], client: ChatClient, spec: ContextSpec,
                 cache: ContextCache | None, *, progress: bool = True) -> ContextOutcome:
    """The chunks with a model-written context before their ``embed_text``, and the calls,
    tokens and cost this run paid (cache hits cost nothing)."""
    plan = plan_contexts(chunks, docs, starts, client.model, spec, cache)
    estimate = plan.estimate(spec)
    log.info("contextual headers: %d chunks, %d cached, %d calls to make (~%.0f input tokens, "
             "at most %.0f output tokens, ~$%.4f)", len(chunks), len(plan.cached),
             estimate["calls"], estimate["input_tokens_est"], estimate["output_tokens_max"],
             estimate["cost_usd_est"])
    if spec.dry_run:
        raise SweepError(f"chunk.context.dry_run: {int(estimate['calls'])} calls, "
                         f"~{estimate['input_tokens_est']:.0f} input tokens, at most "
                         f"{estimate['output_tokens_max']:.0f} output tokens, "
                         f"~${estimate['cost_usd_est']:.4f}; set chunk.context.dry_run=false "
                         "to spend")
    todo = list(plan.messages)
    usage = ChatUsage()
    fresh: dict[bytes, str] = {}
    if todo:
        answers = client.complete_all([plan.messages[k] for k in todo], 0.0, spec.max_tokens,
                                      progress, "contexts")
        for key, answer in zip(todo, answers, strict=True):
            text = " ".join(answer.text.split())
            if not text:
                raise SweepError(f"chunk.context: {client.ep.base_url} returned an empty "
                                 "context")
            fresh[key] = text
            usage.add(answer)
        if cache is not None:  # only once every call has succeeded
            cache.put_many(list(fresh.items()))
    contexts = {**plan.cached, **fresh}
    out = [replace(c, embed_text=f"{contexts[k]}\n\n{c.embed_text}")
           for c, k in zip(chunks, plan.keys, strict=True)]
    metrics = {"context_calls": float(usage.calls), "context_cache_hits": float(len(plan.cached))}
    metrics.update(chat_usage_metrics("context", usage, spec.price_input_per_mtok,
                                      spec.price_output_per_mtok))
    return ContextOutcome(out, metrics)
