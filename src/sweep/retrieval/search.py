"""One configuration's query path: first stage (dense, BM25 or both fused), optional rerank.

`ConfigSearch.run` answers one question and times each stage, so the same code produces the
rankings that are scored and the latencies that are reported. A retriever the method does not
use may still be attached (for the per-question diagnosis); the latency pass builds a search
without it, so its cost never counts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.common.registry import Entry, Registry, Traits
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.index import VectorIndex
from sweep.retrieval.ranking import (
    STEP_BYTES,
    RankedRows,
    Ranking,
    dense_blocks,
    dense_search,
    lexical_search,
    rerank,
    rrf_fuse,
    rrf_fuse_rows,
    tiebreak_order,
    top_k_rows,
)
from sweep.retrieval.rerank import CrossEncoderReranker


@dataclass(frozen=True)
class Retrievers:
    """What a retrieval method runs first: the vector search, BM25, or both (then fused by
    reciprocal rank)."""

    dense: bool
    bm25: bool


# The retrieval.method axis. Its settings (depth, bm25_*, rrf_k, the weights) are read by
# every method or kept for the diagnosis, so they all enter config_hash whatever the method.
METHOD: Registry[Retrievers] = Registry("retrieval.method", [
    Entry("dense", Retrievers(dense=True, bm25=False), traits=Traits(needs_embedder=True),
          doc="vector search"),
    Entry("bm25", Retrievers(dense=False, bm25=True), doc="BM25"),
    Entry("hybrid", Retrievers(dense=True, bm25=True), traits=Traits(needs_embedder=True),
          doc="both, fused by reciprocal rank"),
])


def uses_dense(method: str) -> bool:
    """Whether ``method`` searches vectors (needs the embedding model)."""
    return METHOD.impl(method).dense


def uses_bm25(method: str) -> bool:
    """Whether ``method`` searches BM25 (needs the BM25 index and its stop words)."""
    return METHOD.impl(method).bm25


# Questions per block of `run_all`: the exact search's product block (`dense_search`'s
# default), so that every dense path multiplies the same shapes.
DENSE_BATCH = 256


@dataclass
class SearchResult:
    final: Ranking
    dense: Ranking | None
    bm25: Ranking | None
    times_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class ConfigSearch:
    chunks: Sequence[Chunk]
    method: str  # an entry of `METHOD`
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
        self.retrievers = METHOD.impl(self.method)
        if self.retrievers.dense and self.chunk_vecs is None:
            raise ValueError(f"method {self.method} needs chunk vectors")
        if self.retrievers.bm25 and self.bm25 is None:
            raise ValueError(f"method {self.method} needs a BM25 index")

    def run_all(self, questions: Sequence[str], query_vecs: np.ndarray | None
                ) -> list[SearchResult]:
        """Every question of the scored pass, a block of questions at a time: the dense
        product, the top-k of every row and the fusion are one numpy pass per block
        (`top_k_rows`, `rrf_fuse_rows`), equal ranking for ranking and score for score to
        `run`'s per-question path (tests/unit/retrieval/test_batched_search.py). Stage times
        are not kept: the latency pass measures them with `run`, one question at a time."""
        if self.chunk_vecs is not None and query_vecs is None:
            return [self.run(q) for q in questions]  # each question embedded, as in `run`
        starts = range(0, len(questions), DENSE_BATCH)
        # Every dense block before any BM25 work, as before: OpenBLAS's threads spin for a
        # while after each product, and BM25 scoring between products paid for that spin
        # (CPU time) six times over on COVID-QA instead of once.
        dense: list[RankedRows | None] = [None] * len(starts)
        if self.chunk_vecs is not None:
            assert query_vecs is not None
            dense = list(self._dense_blocks(query_vecs))
        out: list[SearchResult] = []
        for lo, block in zip(starts, dense, strict=True):
            out.extend(self._run_block(questions[lo : lo + DENSE_BATCH], block))
        return out

    def _dense_blocks(self, query_vecs: np.ndarray) -> Iterator[RankedRows]:
        """The dense rankings, ``DENSE_BATCH`` questions a block: the exact search's own
        blocks (`dense_blocks`), or an index's answers (asked once, as before) flattened."""
        assert self.chunk_vecs is not None
        if self.index is not None:
            found = self.index.search(query_vecs, self.depth)
            for lo in range(0, len(found), DENSE_BATCH):
                yield RankedRows.of(found[lo : lo + DENSE_BATCH])
            return
        for scores in dense_blocks(query_vecs, self.chunk_vecs, DENSE_BATCH):
            yield top_k_rows(scores, self.tiebreak, self.depth)

    def _run_block(self, questions: Sequence[str], dense_rows: RankedRows | None
                   ) -> list[SearchResult]:
        dense = dense_rows.rankings() if dense_rows is not None else None
        bm25_rows = self._bm25_rows(questions) if self.bm25 is not None else None
        bm25 = bm25_rows.rankings() if bm25_rows is not None else None
        if not self.retrievers.bm25:
            final = dense
        elif not self.retrievers.dense:
            final = bm25
        else:
            assert dense_rows is not None and bm25_rows is not None
            final = rrf_fuse_rows([dense_rows, bm25_rows], [self.dense_weight,
                                                            self.bm25_weight],
                                  self.rrf_k, self.tiebreak, self.depth).rankings()
        assert final is not None
        out = []
        for j, question in enumerate(questions):
            ranking = final[j]
            if self.reranker is not None:
                ranking = self._rerank(question, ranking)
            out.append(SearchResult(ranking, dense[j] if dense is not None else None,
                                    bm25[j] if bm25 is not None else None))
        return out

    def _bm25_rows(self, questions: Sequence[str]) -> RankedRows:
        """BM25's rankings of a block, as `lexical_search` ranks each score vector. Scored
        and ranked a few rows at a time (`BM25Index.scores_many`: the same rows as `scores`;
        each row ranked alone): a (rows x chunks) float64 matrix of ~`STEP_BYTES`."""
        assert self.bm25 is not None
        n = len(self.chunks)
        rows = max(1, STEP_BYTES // (8 * max(n, 1)))
        parts = []
        for lo in range(0, len(questions), rows):
            scores = self.bm25.scores_many(questions[lo : lo + rows])
            parts.append(top_k_rows(scores, self.tiebreak, self.depth, matched_only=True))
        return RankedRows.concat(parts)

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
        if not self.retrievers.bm25:
            final = dense
        elif not self.retrievers.dense:
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
        # What the configuration's own retrieval costs: one model embeds every query, and its
        # share can hide every difference of the end-to-end figure.
        times["retrieval"] = times["end_to_end"] - times.get("query_embed", 0.0)
        return SearchResult(final, dense, bm25, times)

    def _rerank(self, question: str, ranking: Ranking) -> Ranking:
        """`run`'s rerank stage, untimed."""
        assert self.reranker is not None
        pool = ranking.indices[: self.pool]
        scores = self.reranker.scores(question, [self.chunks[i].embed_text for i in pool])
        return rerank(ranking, scores, self.tiebreak)

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
