"""First-stage retrieval over one configuration's chunks.

Exact search here: it is the reference an approximate index (`retrieval.index`) is measured
against, so that the ANN tax is reported rather than mixed into the chunking's numbers.
Every ranking is deterministic: equal scores are ordered by document (its id; documents load
sorted by path), then by chunk ordinal as a number, so ``doc#2`` comes before ``doc#10``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

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


# The orders made lately, by their ids (read-only arrays): a job builds its search twice
# (the scored pass, the latency pass) over one chunk list, and twin configurations share it.
_TIES: dict[tuple[str, ...], np.ndarray] = {}
TIES_KEPT = 8


def tiebreak_order(chunk_ids: Sequence[str]) -> np.ndarray:
    """Position of each chunk in (document id, ordinal) order: the secondary sort key for
    equal scores. Computed from the ids, so it does not depend on the order of the input.
    The array is shared with later calls for the same ids, so it is read-only."""
    ids = tuple(chunk_ids)
    ranks = _TIES.get(ids)
    if ranks is None:
        keys = [_doc_and_ordinal(c) for c in ids]
        order = sorted(range(len(keys)), key=keys.__getitem__)
        ranks = np.empty(len(ids), dtype=np.int64)
        ranks[order] = np.arange(len(ids))
        ranks.flags.writeable = False
        if len(_TIES) >= TIES_KEPT:
            del _TIES[next(iter(_TIES))]
        _TIES[ids] = ranks
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


def dense_blocks(query_vecs: np.ndarray, chunk_vecs: np.ndarray, batch: int = 256
                 ) -> Iterator[np.ndarray]:
    """The query-by-chunk score matrix in `dense_search`'s blocks (``batch`` questions each,
    the same products): a BLAS product's last float32 bit can depend on the shape it is given,
    so the batched path (`top_k_rows` on each block) multiplies exactly what it did."""
    for lo in range(0, query_vecs.shape[0], batch):
        yield query_vecs[lo : lo + batch] @ chunk_vecs.T


@dataclass(frozen=True)
class RankedRows:
    """The rankings of consecutive queries in flat arrays: query ``i`` ranked
    ``indices[starts[i]:starts[i + 1]]`` (best first) with those ``scores``. The batched paths
    (`top_k_rows`, `rrf_fuse_rows`) pass these on without a tuple per query in between."""

    indices: np.ndarray  # int64
    scores: np.ndarray
    starts: np.ndarray  # int64, one more than the number of queries

    def __len__(self) -> int:
        return self.starts.shape[0] - 1

    def rankings(self) -> list[Ranking]:
        # One conversion to Python numbers for the whole block, then a slice per query.
        idx, sc = tuple(self.indices.tolist()), tuple(self.scores.tolist())
        at = self.starts.tolist()
        return [Ranking(idx[a:b], sc[a:b]) for a, b in pairwise(at)]

    @staticmethod
    def of(rankings: Sequence[Ranking]) -> RankedRows:
        """Rankings made elsewhere (an approximate index's answers), flattened."""
        sizes = np.fromiter((len(r.indices) for r in rankings), dtype=np.int64,
                            count=len(rankings))
        return RankedRows(
            np.fromiter((i for r in rankings for i in r.indices), dtype=np.int64,
                        count=int(sizes.sum())),
            np.fromiter((s for r in rankings for s in r.scores), dtype=np.float64,
                        count=int(sizes.sum())),
            _starts(sizes))


    @staticmethod
    def concat(parts: Sequence[RankedRows]) -> RankedRows:
        """Blocks of consecutive queries as one block, in order."""
        if len(parts) == 1:
            return parts[0]
        sizes = np.concatenate([np.diff(p.starts) for p in parts])
        return RankedRows(np.concatenate([p.indices for p in parts]),
                          np.concatenate([p.scores for p in parts]), _starts(sizes))


# What a batched step may copy of a block at once (bytes): 69k chunks x 120 rows of float32.
BLOCK_BYTES = 32 * 2**20
# A step of a pass that writes and reads back whole rows several times (BM25's scores, their
# selection): small enough for a core's cache, so the passes after the first read it there
# instead of from memory, and its arrays reuse freed memory instead of faulting in fresh
# pages. 2 MiB: about 50 rows of a 5,000-chunk corpus; ~30% less CPU than 32 MiB steps for
# the BM25 search of a warm COVID-QA sweep (1 and 4 MiB within a few %).
STEP_BYTES = 2 * 2**20


def _starts(sizes: np.ndarray) -> np.ndarray:
    starts = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    return starts


def _rank_rows(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, n_rows: int,
               tiebreak: np.ndarray, depth: int) -> RankedRows:
    """Each row's candidates ranked as `top_k` ranks them, the first ``depth`` kept: by value
    descending, then ``tiebreak`` ascending, i.e. ``np.lexsort((tiebreak[cols], -values,
    rows))``. Entries come grouped by row (``rows`` ascending), each row's in the reference's
    candidate order (columns ascending), which is what lexsort's stability falls back on."""
    ties = tiebreak[cols]
    counts = np.bincount(rows, minlength=n_rows)
    order = _packed_order(rows, values, ties, n_rows)
    if order is None:
        order = np.lexsort((ties, -values, rows))
    at = np.arange(rows.shape[0]) - np.repeat(_starts(counts)[:-1], counts)
    chosen = order[at < depth]  # sorted rows stay grouped, so `at` is each one's place
    return RankedRows(cols[chosen], values[chosen], _starts(np.minimum(counts, depth)))


def _packed_order(rows: np.ndarray, values: np.ndarray, ties: np.ndarray, n_rows: int
                  ) -> np.ndarray | None:
    """`_rank_rows`'s order as one quicksort of packed int64 keys (row, value, tie), about
    four times faster than lexsort's three stable passes; None where that cannot be shown
    equal (then lexsort is the answer).

    The value's part is the value as float32, its bits mapped to an integer in the same order
    (after -0.0 -> +0.0, so equal values get equal keys, as lexsort's comparisons do).
    float32 rounding keeps order but can merge two close float64 values, so: all keys
    distinct (the sorted order is then the only one), and wherever two neighbours of a row
    share a value key their values are equal (so no merged pair was put in tie order). NaN,
    keys too wide to pack (rows x 2^32 x ties past 2^63) or a repeated tie (`tiebreak_order`
    never gives one) fail those checks and take lexsort."""
    if rows.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    if np.isnan(values).any():
        return None
    low = int(ties.min())
    tie_bits = (int(ties.max()) - low).bit_length()
    if (n_rows - 1).bit_length() + 32 + tie_bits > 63:
        return None
    bits = (values.astype(np.float32) + np.float32(0.0)).view(np.uint32).astype(np.int64)
    # Best first: a non-negative float's bits grow with it, so 2^31 - 1 - bits puts the
    # largest first (keys below 2^31); a negative's bits (sign bit set, so >= 2^31) grow as
    # it falls, so they are its key as they are, after every non-negative one.
    value_key = np.where(bits >= 2**31, bits, 2**31 - 1 - bits)
    key = (rows << (32 + tie_bits)) | (value_key << tie_bits) | (ties.astype(np.int64) - low)
    order = np.argsort(key)
    ordered = key[order]
    if np.any(ordered[1:] == ordered[:-1]):
        return None
    if values.dtype != np.float32:
        same = np.flatnonzero((ordered[1:] >> tie_bits) == (ordered[:-1] >> tie_bits))
        if np.any(values[order[same]] != values[order[same + 1]]):
            return None
    return order


def top_k_rows(scores: np.ndarray, tiebreak: np.ndarray, depth: int,
               matched_only: bool = False) -> RankedRows:
    """`top_k` of every row of a (queries x chunks) matrix at once, the same rankings and
    scores row for row: the same threshold (the depth-th best score, ties at the cut all
    candidates), the same order (score descending, then ``tiebreak``). ``matched_only``: only
    scores > 0 are ranked, as `lexical_search` ranks a BM25 row."""
    n_rows, n = scores.shape
    depth = min(depth, n)
    if depth == 0 or n_rows == 0:
        return RankedRows(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=scores.dtype),
                          np.zeros(n_rows + 1, dtype=np.int64))
    # The selection copies its rows (negated, and a mask): a few rows at a time on a big
    # corpus, so that the copies stay near BLOCK_BYTES whatever the block.
    step = max(1, BLOCK_BYTES // (scores.itemsize * n))
    if n_rows > step:
        return RankedRows.concat([top_k_rows(scores[lo : lo + step], tiebreak, depth,
                                             matched_only) for lo in range(0, n_rows, step)])
    if depth < n:
        # A row's depth-th best, then everything at least as good. With matched_only and
        # fewer than depth matches the threshold is <= 0, so all matches are candidates,
        # as in `lexical_search` (which clips depth to the matches). kth = depth - 1 of the
        # negated scores is the same value, and much faster than kth = n - depth on BM25
        # rows, which are mostly zeros.
        negated = -scores
        negated.partition(depth - 1, axis=1)  # in place: one copy of the block, not two
        threshold = -negated[:, depth - 1]
        del negated
        candidate = scores >= threshold[:, None]
        if matched_only:
            # scores >= a positive threshold are positive: only the other rows (fewer matches
            # than depth) need the second test
            low = ~(threshold > 0)
            if low.any():
                candidate[low] &= scores[low] > 0
    else:
        candidate = scores > 0 if matched_only else np.ones(scores.shape, dtype=bool)
    flat = np.flatnonzero(candidate)  # row by row, columns ascending: top_k's candidates
    rows, cols = np.divmod(flat, n)
    return _rank_rows(rows, cols, scores.ravel()[flat], n_rows, tiebreak, depth)


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


def rrf_fuse_rows(lists: Sequence[RankedRows], weights: Sequence[float], k: int,
                  tiebreak: np.ndarray, depth: int) -> RankedRows:
    """`rrf_fuse` of every query of a block at once: query ``i`` fuses ``lists[j]``'s ``i``-th
    rankings, with the same scores bit for bit and the same order. Each (query, chunk) pair's
    sum takes the same terms in the same order as `rrf_fuse`'s (list by list, in list order,
    from 0.0): `np.bincount` adds its weights one by one in input order, as `np.add.at` does."""
    n_rows = len(lists[0])
    n = tiebreak.shape[0]
    keys, parts = [], []
    for ranked, weight in zip(lists, weights, strict=True):
        if len(ranked) != n_rows:
            raise ValueError("rrf_fuse_rows: every list needs one ranking per query")
        sizes = np.diff(ranked.starts)
        row = np.repeat(np.arange(n_rows, dtype=np.int64), sizes)
        rank = np.arange(1, ranked.indices.shape[0] + 1, dtype=np.int64) - np.repeat(
            ranked.starts[:-1], sizes)
        keys.append(row * n + ranked.indices)
        parts.append(weight / (k + rank.astype(np.float64)))
    pair, where = np.unique(np.concatenate(keys), return_inverse=True)  # by query, then chunk
    fused = np.bincount(where, weights=np.concatenate(parts), minlength=pair.shape[0])
    row, chunk = np.divmod(pair, n)
    return _rank_rows(row, chunk, fused, n_rows, tiebreak, depth)


def rerank(ranking: Ranking, scores: Sequence[float], tiebreak: np.ndarray) -> Ranking:
    """Reorder the first ``len(scores)`` entries of ``ranking`` by ``scores`` (higher first,
    ties by ``tiebreak``); entries past the pool keep their first-stage order after them."""
    pool = ranking.indices[: len(scores)]
    order = sorted(range(len(pool)), key=lambda j: (-float(scores[j]), int(tiebreak[pool[j]])))
    head = tuple(pool[j] for j in order)
    head_scores = tuple(float(scores[j]) for j in order)
    return Ranking(head + ranking.indices[len(pool) :],
                   head_scores + ranking.scores[len(pool) :])
