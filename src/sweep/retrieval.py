"""First-stage retrieval over one configuration's chunks.

Exact search only: an evaluation must not carry ANN noise. Every ranking is deterministic:
equal scores are ordered by chunk id.
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


def tiebreak_order(chunk_ids: Sequence[str]) -> np.ndarray:
    """Position of each chunk id in sorted order: the secondary sort key for equal scores."""
    order = np.argsort(np.asarray(chunk_ids, dtype=object), kind="stable")
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
    return Ranking(tuple(int(i) for i in chosen), tuple(float(s) for s in scores[chosen]))


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
