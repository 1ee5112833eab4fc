"""First-stage retrieval over one configuration's chunks.

Exact search here: it is the reference an approximate index (`retrieval.index`) is measured
against, so that the ANN tax is reported rather than mixed into the chunking's numbers.
Every ranking is deterministic: equal scores are ordered by document (its id; documents load
sorted by path), then by chunk ordinal as a number, so ``doc#2`` comes before ``doc#10``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranking:
    """One query's result: chunk indices (into the config's chunk list), best first."""

    indices: tuple[int, ...]
    scores: tuple[float, ...]


def _doc_and_ordinal(chunk_id: str) -> tuple[str, int]:
    doc, sep, ordinal = chunk_id.rpartition("#")
    if sep and ordinal.isdigit():
        return doc, int(ordinal)
    return chunk_id, -1  # not a `doc#ordinal` id: by the id alone


def tiebreak_order(chunk_ids: Sequence[str]) -> np.ndarray:
    """Position of each chunk in (document id, ordinal) order: the secondary sort key for
    equal scores. Computed from the ids, so it does not depend on the order of the input."""
    keys = [_doc_and_ordinal(c) for c in chunk_ids]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    ranks = np.empty(len(chunk_ids), dtype=np.int64)
    ranks[order] = np.arange(len(chunk_ids))
    return ranks


def top_k(scores: np.ndarray, tiebreak: np.ndarray, depth: int) -> Ranking:
    """The ``depth`` best of ``scores`` (higher is better), ties by ``tiebreak`` ascending."""
    n = scores.shape[0]
    depth = min(depth, n)
    if depth == 0:
        return Ranking((), ())
    if depth < n:
        # Everything at least as good as the depth-th score, so ties at the cut are all seen.
        threshold = np.partition(scores, n - depth)[n - depth]
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(n)
    order = np.lexsort((tiebreak[candidates], -scores[candidates]))[:depth]
    chosen = candidates[order]
    return Ranking(tuple(chosen.tolist()), tuple(scores[chosen].tolist()))


def dense_search(
    query_vecs: np.ndarray,
    chunk_vecs: np.ndarray,
    tiebreak: np.ndarray,
    depth: int,
    batch: int = 256,
) -> list[Ranking]:
    """Exact cosine search (vectors are L2-normalised, so cosine = dot product)."""
    out: list[Ranking] = []
    for lo in range(0, query_vecs.shape[0], batch):
        block = query_vecs[lo : lo + batch] @ chunk_vecs.T
        out.extend(top_k(row, tiebreak, depth) for row in block)
    return out


def lexical_search(scores: np.ndarray, tiebreak: np.ndarray, depth: int) -> Ranking:
    """Top of a BM25 score vector; chunks with score 0 share no word with the query and are
    not retrieved (a lexical retriever that matched nothing returns nothing)."""
    # Ranked among the matches only: with fewer than ``depth`` of them, a top-k over all
    # scores would sort every zero-score chunk just to drop it.
    matched = np.flatnonzero(scores > 0)
    ranking = top_k(scores[matched], tiebreak[matched], depth)
    chosen = matched[np.asarray(ranking.indices, dtype=np.int64)]
    return Ranking(tuple(chosen.tolist()), ranking.scores)


def rrf_fuse(lists: Sequence[Sequence[int]], weights: Sequence[float], k: int,
             tiebreak: np.ndarray, depth: int) -> Ranking:
    """Reciprocal rank fusion: ``score(d) = Σ_i w_i / (k + rank_i(d))`` over the lists that
    contain ``d`` (ranks from 1). Fused on rank, never on score, so a dense cosine and a BM25
    score need not be comparable."""
    if not any(len(ranked) for ranked in lists):
        return Ranking((), ())
    idx = np.concatenate([np.asarray(ranked, dtype=np.int64) for ranked in lists])
    parts = [weight / (k + np.arange(1, len(ranked) + 1, dtype=np.float64))
             for ranked, weight in zip(lists, weights, strict=True)]
    chunk, where = np.unique(idx, return_inverse=True)
    fused = np.zeros(chunk.shape[0], dtype=np.float64)
    np.add.at(fused, where, np.concatenate(parts))  # in list order, as a running sum would
    order = np.lexsort((tiebreak[chunk], -fused))[:depth]
    return Ranking(tuple(chunk[order].tolist()), tuple(fused[order].tolist()))


def rerank(ranking: Ranking, scores: Sequence[float], tiebreak: np.ndarray) -> Ranking:
    """Reorder the first ``len(scores)`` entries of ``ranking`` by ``scores`` (higher first,
    ties by ``tiebreak``); entries past the pool keep their first-stage order after them."""
    pool = ranking.indices[: len(scores)]
    order = sorted(range(len(pool)), key=lambda j: (-float(scores[j]), int(tiebreak[pool[j]])))
    head = tuple(pool[j] for j in order)
    head_scores = tuple(float(scores[j]) for j in order)
    return Ranking(head + ranking.indices[len(pool) :],
                   head_scores + ranking.scores[len(pool) :])
