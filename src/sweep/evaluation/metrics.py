"""Retrieval metrics: pure functions over ranked ids and relevance sets.

Conventions (the same as trec_eval, ranx and the seed article):

* ``ranked`` is the retrieved list, best first, without duplicates; rank 1 is ``ranked[0]``.
* ``relevant`` is the set of relevant ids resolved for THIS chunking (see `relevance`).
* Every per-question metric is in [0, 1] (except token counts); averages are plain means over
  the questions that can be scored. A question with no relevant ids cannot be scored and is an
  error here, never a silent 0: the caller counts it as an orphan.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

Span = tuple[str, int, int]  # (doc_id, start, end), end exclusive


def _check(relevant: Iterable[str] | Mapping[str, float], k: int | None = None) -> None:
    if not relevant:
        raise ValueError("no relevant ids: the question cannot be scored (an orphan)")
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def recall_at_k(ranked: Sequence[str], relevant: set[str] | frozenset[str], k: int) -> float:
    """|top-k ∩ relevant| / |relevant|.

    >>> recall_at_k(["a", "b", "c"], {"b", "z"}, 2)
    0.5
    """
    _check(relevant, k)
    return len(set(ranked[:k]) & relevant) / len(relevant)


def hit_at_k(ranked: Sequence[str], relevant: set[str] | frozenset[str], k: int) -> float:
    """1.0 when any relevant id is in the top k, else 0.0."""
    _check(relevant, k)
    return 1.0 if any(r in relevant for r in ranked[:k]) else 0.0


def _check_passages(passages: Sequence[set[str] | frozenset[str]], k: int, needs: str) -> None:
    if not passages or not any(passages):
        raise ValueError("no passage has a relevant id: the question cannot be scored (an "
                         "orphan)")
    if needs not in ("all", "any"):
        raise ValueError(f"needs must be 'all' or 'any', got {needs!r}")
    _check_k(k)


def passages_found_at_k(ranked: Sequence[str], passages: Sequence[set[str] | frozenset[str]],
                        k: int, needs: str = "all") -> int:
    """How many of the passages an answer needs have a relevant id in the top k.

    ``passages`` holds, per evidence passage of the question, the ids relevant to it (a
    passage that no chunk of this configuration holds has an empty set and is never found).
    ``needs="all"``: the number of passages with a relevant id in ``ranked[:k]``, from 0 to
    ``len(passages)``. ``needs="any"`` (the passages are alternatives, one makes the answer):
    `hit_at_k` over the union, 0 or 1.

    >>> passages_found_at_k(["a", "x", "c"], [{"a"}, {"b"}, {"c", "d"}], 3)
    2
    """
    _check_passages(passages, k, needs)
    top = set(ranked[:k])
    found = sum(1 for p in passages if p & top)
    return min(found, 1) if needs == "any" else found


def full_recall_at_k(ranked: Sequence[str], passages: Sequence[set[str] | frozenset[str]],
                     k: int, needs: str = "all") -> float:
    """1.0 when the top k holds the whole answer, else 0.0.

    ``needs="all"``: every passage has a relevant id in ``ranked[:k]`` (with one passage this
    is `hit_at_k`); ``needs="any"``: some passage does (`hit_at_k` over the union). Where
    recall@k averages over relevant ids, so that finding two of three passages scores 0.667,
    this asks whether the reader got everything it needs: 0.

    >>> full_recall_at_k(["a", "x", "c"], [{"a"}, {"b"}, {"c", "d"}], 3)
    0.0
    """
    needed = 1 if needs == "any" else len(passages)
    return 1.0 if passages_found_at_k(ranked, passages, k, needs) >= needed else 0.0


Id = TypeVar("Id", bound=Hashable)


def first_relevant_rank(ranked: Sequence[Id], relevant: set[Id] | frozenset[Id]) -> int | None:
    """1-based rank of the first relevant id in ``ranked``, or None when none was retrieved
    (ids are chunk ids, or positions in a chunk list)."""
    for rank, rid in enumerate(ranked, start=1):
        if rid in relevant:
            return rank
    return None


def reciprocal_rank(ranked: Sequence[str], relevant: set[str] | frozenset[str]) -> float:
    """1 / rank of the first relevant id; 0.0 when none is in ``ranked``.

    The list's depth is the cut-off: a relevant id ranked below it counts as not found.
    """
    _check(relevant)
    rank = first_relevant_rank(ranked, relevant)
    return 0.0 if rank is None else 1.0 / rank


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; NaN for no values (so an empty average is never mistaken for 0)."""
    values = list(values)
    return math.fsum(values) / len(values) if values else math.nan


def mrr(reciprocal_ranks: Iterable[float]) -> float:
    """Mean reciprocal rank: the mean of per-question `reciprocal_rank` values."""
    return mean(reciprocal_ranks)


def ndcg_at_k(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float:
    """Normalised DCG with linear gains (trec_eval's ``ndcg_cut``).

    DCG@k = Σ_{i=1..k} gain(ranked[i]) / log2(i + 1); the ideal DCG sorts all positive gains
    in ``gains`` descending. Binary relevance is ``{id: 1.0 for id in relevant}``.
    """
    _check(gains, k)
    dcg = math.fsum(gains.get(rid, 0.0) / math.log2(i + 2) for i, rid in enumerate(ranked[:k]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:k]
    idcg = math.fsum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    if idcg == 0:
        raise ValueError("no positive gain: the question cannot be scored")
    return dcg / idcg


# log2(i + 2), the DCG discount of rank i + 1, for the ranks most rankings are read to; the
# same calls `ndcg_at_k` makes, made once.
_LOG2 = tuple(math.log2(i + 2) for i in range(128))
# The ideal DCG of n relevant ids with binary gains, by n: the `math.fsum` `ndcg_at_k` takes
# of the same terms, kept (a pure function of n).
_IDEAL_DCG: dict[int, float] = {}


def _ideal_dcg(n: int) -> float:
    ideal = _IDEAL_DCG.get(n)
    if ideal is None:
        ideal = _IDEAL_DCG[n] = math.fsum(1.0 / math.log2(i + 2) for i in range(n))
    return ideal


class TopKRanks:
    """`recall_at_k`, `hit_at_k` and `ndcg_at_k` with binary gains (``{id: 1.0 for id in
    relevant}``) of one question for every k at once, from one pass over ``ranked[:depth]``.

    ``found[n]`` is the number of distinct relevant ids in ``ranked[:n]`` and ``gains[i]``
    the DCG term of rank i + 1 (1.0 or 0.0, divided by log2(i + 2)); each metric is then the
    same division, or `math.fsum` of the same terms, as its reference function, so the values
    are equal; a test checks it. k beyond the ranking and beyond ``depth`` as in `TopKSpans`.
    """

    def __init__(self, ranked: Sequence[str], relevant: set[str] | frozenset[str], depth: int
                 ) -> None:
        _check(relevant)
        self.relevant = len(relevant)
        self.depth = depth
        self.complete = depth >= len(ranked)
        top = ranked[:depth]
        logs = _LOG2 if len(top) <= len(_LOG2) else [math.log2(i + 2) for i in range(len(top))]
        seen: set[str] = set()
        found = [0]
        gains: list[float] = []
        for i, rid in enumerate(top):
            if rid in relevant:
                seen.add(rid)  # a repeated id counts once in recall, twice in DCG
                gains.append(1.0 / logs[i])
            else:
                gains.append(0.0)  # 0.0 / log2(i + 2)
            found.append(len(seen))
        self.found = found
        self.gains = gains
        # every k from 1 to this is computed and inside the ranking: its prefix is k long
        self._plain = min(depth, len(gains))

    def _n(self, k: int) -> int:
        if 0 < k <= self._plain:  # the common case, without the checks
            return k
        if k < 1:
            _check_k(k)
        if k > self.depth and not self.complete:
            raise ValueError(f"k={k} is beyond the computed depth {self.depth}")
        return min(k, len(self.gains))

    def recall(self, k: int) -> float:
        """`recall_at_k`."""
        return self.found[self._n(k)] / self.relevant

    def hit(self, k: int) -> float:
        """`hit_at_k`."""
        return 1.0 if self.found[self._n(k)] else 0.0

    def ndcg(self, k: int) -> float:
        """`ndcg_at_k` with a gain of 1.0 for each relevant id."""
        dcg = math.fsum(self.gains[: self._n(k)])
        return dcg / _ideal_dcg(min(k, self.relevant))


class TopKPassages:
    """`passages_found_at_k` and `full_recall_at_k` of one question for every k at once, from
    one pass over ``ranked[:depth]``: the rank at which each passage first has a relevant id.

    A passage is in the top k when that rank is at most k, which is the test the reference
    functions make on ``set(ranked[:k])``; the counts are the same integers. k beyond the
    ranking and beyond ``depth`` as in `TopKSpans`.
    """

    def __init__(self, ranked: Sequence[str], passages: Sequence[set[str] | frozenset[str]],
                 needs: str, depth: int) -> None:
        _check_passages(passages, 1, needs)
        self.any = needs == "any"
        self.needed = 1 if self.any else len(passages)
        self.depth = depth
        self.complete = depth >= len(ranked)
        first: dict[str, int] = {}
        wanted = set().union(*passages)
        for rank, rid in enumerate(ranked[:depth], start=1):
            if rid in wanted and rid not in first:
                first[rid] = rank
        # the first rank of each passage found within depth, in no particular order
        self.first = [min(first[i] for i in p if i in first) for p in passages
                      if not first.keys().isdisjoint(p)]

    def found(self, k: int) -> int:
        """`passages_found_at_k`."""
        _check_k(k)
        if k > self.depth and not self.complete:
            raise ValueError(f"k={k} is beyond the computed depth {self.depth}")
        n = sum(1 for r in self.first if r <= k)
        return min(n, 1) if self.any else n

    def full_recall(self, k: int) -> float:
        """`full_recall_at_k`."""
        return 1.0 if self.found(k) >= self.needed else 0.0


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of character spans, per document, as sorted disjoint spans."""
    out: list[Span] = []
    for doc_id, start, end in sorted(s for s in spans if s[2] > s[1]):
        if out and out[-1][0] == doc_id and start <= out[-1][2]:
            last = out[-1]
            out[-1] = (doc_id, last[1], max(last[2], end))
        else:
            out.append((doc_id, start, end))
    return out


def covered_chars(evidence: Iterable[Span], context: Iterable[Span]) -> tuple[int, int]:
    """(characters of evidence covered by the union of ``context`` spans, evidence characters)."""
    ev = merge_spans(evidence)
    ctx = merge_spans(context)
    total = sum(e - s for _, s, e in ev)
    covered = 0
    for doc_id, s, e in ev:
        for cdoc, cs, ce in ctx:
            if cdoc == doc_id and cs < e and s < ce:
                covered += min(e, ce) - max(s, cs)
    return covered, total


def evidence_recall_at_k(
    ranked_spans: Sequence[Span], evidence: Sequence[Span], k: int
) -> float:
    """Fraction of evidence characters inside the union of the top-k chunk spans.

    Chunking-invariant: it asks whether the answer text reached the prompt, whatever the
    chunk boundaries, so it is the fairest single number across chunk sizes.
    """
    _, covered, total = _top_k_coverage(ranked_spans, evidence, k)
    return covered / total


def _top_k_coverage(ranked_spans: Sequence[Span], evidence: Sequence[Span], k: int
                    ) -> tuple[Sequence[Span], int, int]:
    """``(top-k spans, evidence characters they cover, evidence characters)`` for the span
    metrics; a bad k or an empty evidence cannot be scored and raises."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    top = ranked_spans[:k]
    covered, total = covered_chars(evidence, top)
    if total == 0:
        raise ValueError("empty evidence: the question cannot be scored")
    return top, covered, total


def spans_length(spans: Iterable[Span]) -> int:
    """Summed lengths of ``spans``, NOT merged: two overlapping chunks count twice."""
    return sum(max(0, e - s) for _, s, e in spans)


def span_precision_at_k(ranked_spans: Sequence[Span], evidence: Sequence[Span], k: int
                        ) -> float:
    """Evidence characters in the top-k chunks / characters the top-k chunks hold, summed.

    The numerator is `covered_chars` (the union of the chunks, so evidence read twice counts
    once); the denominator is the plain sum of the k chunk lengths, so overlapping or repeated
    chunks, and chunks of other documents, count in full: it is the cost side of
    `evidence_recall_at_k`, the share of what the prompt carries that is evidence (Chroma's
    "precision", counted in characters as its code does).
    """
    top, covered, _ = _top_k_coverage(ranked_spans, evidence, k)
    read = spans_length(top)
    return covered / read if read else 0.0


def span_iou_at_k(ranked_spans: Sequence[Span], evidence: Sequence[Span], k: int) -> float:
    """covered / (summed top-k chunk lengths + evidence characters no top-k chunk holds).

    With disjoint chunks of the evidence's document this is |E ∩ C| / |E ∪ C|; like
    `span_precision_at_k` it sums the chunk lengths (Chroma's IoU), so it never exceeds that
    precision.
    """
    top, covered, total = _top_k_coverage(ranked_spans, evidence, k)
    return covered / (spans_length(top) + total - covered)


class TopKSpans:
    """The span metrics of one question for every k at once: one pass over the ranked spans.

    ``covered[n]`` is the number of evidence characters inside the union of
    ``ranked_spans[:n]`` and ``read[n]`` the summed (unmerged) lengths of those spans, for
    n = 0..min(depth, len(ranked_spans)); ``total`` is the number of evidence characters.
    They are the integers `covered_chars` and `spans_length` give for each prefix, found
    incrementally: a chunk adds the evidence characters it holds that no better-ranked chunk
    held. Every metric is then the same single division of the same integers as its
    reference function (`evidence_recall_at_k`, `span_precision_at_k`, `span_iou_at_k`,
    `evidence_recall_at_budget`), so the values are equal, not only close; a test checks it.
    A k beyond the ranking reads the whole ranking, as ``ranked_spans[:k]`` does; a k beyond
    ``depth`` (of a longer ranking) was not computed and raises.
    """

    def __init__(self, ranked_spans: Sequence[Span], evidence: Sequence[Span], depth: int
                 ) -> None:
        merged = merge_spans(evidence)
        self.total = sum(e - s for _, s, e in merged)
        if self.total == 0:
            raise ValueError("empty evidence: the question cannot be scored")
        self.depth = depth
        self.complete = depth >= len(ranked_spans)  # every ranked span is in the prefixes
        by_doc: dict[str, list[tuple[int, int]]] = {}
        for doc_id, s, e in merged:
            by_doc.setdefault(doc_id, []).append((s, e))
        seen: dict[str, list[tuple[int, int]]] = {}  # evidence pieces already covered, merged
        covered = read = 0
        self.covered = [0]
        self.read = [0]
        for doc_id, s, e in ranked_spans[:depth]:
            if e > s:
                read += e - s
                for es, ee in by_doc.get(doc_id, ()):
                    a, b = max(s, es), min(e, ee)
                    if a < b:
                        done = seen.setdefault(doc_id, [])
                        covered += b - a - sum(max(0, min(b, y) - max(a, x)) for x, y in done)
                        seen[doc_id] = _merged_pieces([*done, (a, b)])
            self.covered.append(covered)
            self.read.append(read)
        # every k from 1 to this is computed and inside the ranking: its prefix is k long
        self._plain = min(depth, len(self.covered) - 1)

    def _checked_n(self, k: int) -> int:
        """`_n` of a k the metrics read (k >= 1)."""
        if 0 < k <= self._plain:  # the common case, without the checks
            return k
        _check_k(k)
        return self._n(k)

    def _n(self, k: int) -> int:
        """How many ranked spans the top ``k`` holds (k = 0: none, for the budget)."""
        if k > self.depth and not self.complete:
            raise ValueError(f"k={k} is beyond the computed depth {self.depth}")
        return min(k, len(self.covered) - 1)

    def evidence_recall(self, k: int) -> float:
        """`evidence_recall_at_k`."""
        return self.covered[self._checked_n(k)] / self.total

    def span_precision(self, k: int) -> float:
        """`span_precision_at_k`."""
        n = self._checked_n(k)
        return self.covered[n] / self.read[n] if self.read[n] else 0.0

    def span_iou(self, k: int) -> float:
        """`span_iou_at_k`."""
        n = self._checked_n(k)
        return self.covered[n] / (self.read[n] + self.total - self.covered[n])

    def evidence_recall_at_budget(self, ranked_tokens: Sequence[int], budget: int) -> float:
        """`evidence_recall_at_budget` (``depth`` must reach the chunks that fit)."""
        return self.covered[self._n(take_within_budget(ranked_tokens, budget))] / self.total


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def _merged_pieces(pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted disjoint union of the (start, end) pieces of one document."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(pieces):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _touches(a: int, b: int, s: int, e: int, closed: bool) -> bool:
    return (a <= e and s <= b) if closed else (a < e and s < b)


def touching_spans(chunk_spans: Iterable[Span], evidence: Sequence[Span], closed: bool = False
                   ) -> list[Span]:
    """The chunk spans that share a character with some evidence span of their document.

    ``closed=True`` also counts a chunk that only touches one (its end at the evidence start,
    or its start at the evidence end), as Chroma's interval test does.
    """
    return [c for c in chunk_spans
            if any(c[0] == d and _touches(c[1], c[2], s, e, closed) for d, s, e in evidence)]


def precision_omega(chunk_spans: Iterable[Span], evidence: Sequence[Span],
                    closed: bool = False) -> float:
    """Precision with perfect recall: retrieve every chunk that touches the evidence.

    = evidence characters those chunks hold / |union of those chunks and the evidence|; the
    union counts overlapping chunks once and adds evidence no chunk holds (text a chunker
    dropped). It depends on the chunk boundaries only, not on any model: the best precision a
    chunking allows for this question (Chroma's Precision_Ω). ``chunk_spans`` may hold any
    chunks; those that do not touch the evidence are ignored.
    """
    touching = touching_spans(chunk_spans, evidence, closed)
    covered, total = covered_chars(evidence, touching)
    if total == 0:
        raise ValueError("empty evidence: the question cannot be scored")
    union = merge_spans([*touching, *evidence])
    return covered / spans_length(union)


def context_tokens_at_k(ranked_tokens: Sequence[int], k: int) -> int:
    """Tokens the model would read with the top-k chunks in its prompt."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return int(sum(ranked_tokens[:k]))


def take_within_budget(ranked_tokens: Sequence[int], budget: int) -> int:
    """How many top chunks fit, in rank order, into ``budget`` tokens (stops at the first
    chunk that does not fit, as a prompt builder would)."""
    used = 0
    for n, tokens in enumerate(ranked_tokens):
        if used + tokens > budget:
            return n
        used += tokens
    return len(ranked_tokens)


def evidence_recall_at_budget(
    ranked_spans: Sequence[Span], ranked_tokens: Sequence[int], evidence: Sequence[Span],
    budget: int,
) -> float:
    """`evidence_recall_at_k` with k = the number of top chunks that fit in ``budget`` tokens.

    Large chunks cannot win only by covering more text: a budget of 512 tokens holds eight
    64-token chunks or one 512-token chunk.
    """
    n = take_within_budget(ranked_tokens, budget)
    covered, total = covered_chars(evidence, ranked_spans[:n])
    if total == 0:
        raise ValueError("empty evidence: the question cannot be scored")
    return covered / total


def collapse_to_docs(ranked_chunk_docs: Sequence[str]) -> list[str]:
    """Document ranking from a chunk ranking: each document at the rank of its best chunk."""
    return list(dict.fromkeys(ranked_chunk_docs))  # keeps each id's first position
