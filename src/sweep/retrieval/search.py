"""One configuration's query path: first stage (dense, BM25 or both fused), optional rerank.

`ConfigSearch.run` answers one question and times each stage, so the same code produces the
rankings that are scored and the latencies that are reported. A retriever the method does not
use may still be attached (for the per-question diagnosis); the latency pass builds a search
without it, so its cost never counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.index import VectorIndex
from sweep.retrieval.ranking import (
    Ranking,
    dense_search,
    lexical_search,
    rerank,
    rrf_fuse,
    tiebreak_order,
)
from sweep.retrieval.rerank import CrossEncoderReranker


@dataclass
class SearchResult:
    final: Ranking
    dense: Ranking | None
    bm25: Ranking | None
    times_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class ConfigSearch:
    chunks: Sequence[Chunk]
    method: str  # dense | bm25 | hybrid
    depth: int
    chunk_vecs: np.ndarray | None = None
    bm25: BM25Index | None = None
    rrf_k: int = 60
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    reranker: CrossEncoderReranker | None = None
    pool: int = 50
    # Embeds a question given without its vector; that call is timed as query_embed.
    encode_query: Callable[[str], np.ndarray] | None = None
    # The dense stage searches this index when given (built over ``chunk_vecs``); without
    # one it is the exact numpy search.
    index: VectorIndex | None = None
    tiebreak: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.tiebreak = tiebreak_order([c.chunk_id for c in self.chunks])
        if self.method in ("dense", "hybrid") and self.chunk_vecs is None:
            raise ValueError(f"method {self.method} needs chunk vectors")
        if self.method in ("bm25", "hybrid") and self.bm25 is None:
            raise ValueError(f"method {self.method} needs a BM25 index")

    def run_all(self, questions: Sequence[str], query_vecs: np.ndarray | None
                ) -> list[SearchResult]:
        """Every question of the scored pass. Dense search is one matrix product per block of
        questions rather than one per question (same rankings; stage times are not kept: the
        latency pass measures them with `run`, one question at a time)."""
        if self.chunk_vecs is None or query_vecs is None:
            return [self.run(q) for q in questions]
        dense = self._dense(query_vecs)
        return [self.run(q, dense=d) for q, d in zip(questions, dense, strict=True)]

    def run(self, question: str, query_vec: np.ndarray | None = None,
            dense: Ranking | None = None, query_ms: float | None = None) -> SearchResult:
        """One question. ``query_ms``: the measured cost of embedding ``query_vec`` elsewhere,
        counted as the ``query_embed`` stage and into ``end_to_end`` when the dense stage runs."""
        times: dict[str, float] = {}
        start = time.perf_counter()
        embed_ms = 0.0  # embedding timed outside this call
        bm25 = None
        if self.chunk_vecs is not None and dense is None:
            t = time.perf_counter()
            if query_vec is None:
                if self.encode_query is None:
                    raise ValueError("a dense search needs the query vector or encode_query")
                query_vec = self.encode_query(question)
                times["query_embed"] = _ms(t)
            elif query_ms is not None:
                times["query_embed"] = embed_ms = query_ms
            t = time.perf_counter()
            dense = self._dense(query_vec[None, :])[0]
            times["dense_search"] = _ms(t)
        if self.bm25 is not None:
            t = time.perf_counter()
            bm25 = lexical_search(self.bm25.scores(question), self.tiebreak, self.depth)
            times["bm25_search"] = _ms(t)
        if self.method == "dense":
            final = dense
        elif self.method == "bm25":
            final = bm25
        else:
            t = time.perf_counter()
            final = rrf_fuse([dense.indices, bm25.indices], [self.dense_weight, self.bm25_weight],
                             self.rrf_k, self.tiebreak, self.depth)
            times["fusion"] = _ms(t)
        assert final is not None
        if self.reranker is not None:
            t = time.perf_counter()
            pool = final.indices[: self.pool]
            scores = self.reranker.scores(question, [self.chunks[i].embed_text for i in pool])
            final = rerank(final, scores, self.tiebreak)
            times["rerank"] = _ms(t)
        times["end_to_end"] = _ms(start) + embed_ms
        return SearchResult(final, dense, bm25, times)

    def _dense(self, query_vecs: np.ndarray) -> list[Ranking]:
        assert self.chunk_vecs is not None
        if self.index is not None:
            return self.index.search(query_vecs, self.depth)
        return dense_search(query_vecs, self.chunk_vecs, self.tiebreak, self.depth)


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


def latency_summary(samples: Sequence[dict[str, float]]) -> dict[str, float]:
    """p50 / p95 (ms) of each timed stage over the sampled questions."""
    out: dict[str, float] = {}
    stages = sorted({k for s in samples for k in s})
    for stage in stages:
        values = np.array([s[stage] for s in samples if stage in s])
        if values.size:
            out[f"latency_{stage}_p50_ms"] = float(np.percentile(values, 50))
            out[f"latency_{stage}_p95_ms"] = float(np.percentile(values, 95))
    return out
