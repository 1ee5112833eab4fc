"""Can this configuration tell an unanswerable question from an answerable one?

An abstention (`sweep.data.abstentions`) has no evidence, so recall means nothing for it. What
a deployed assistant needs instead is a signal to say "I don't know": the simplest is the
retriever's own confidence, the score of its top chunk. This module compares the top-1 scores
of the answerable questions (the scored golden items) with those of the abstentions:

* ``abstention_auroc``: the probability that a random answerable question's top-1 score is
  higher than a random abstention's (ties count half; the Mann-Whitney U statistic over
  ``n_answerable * n_abstention``). 1.0: some threshold separates them perfectly; 0.5: the
  score says nothing; below 0.5: unanswerable questions look *more* confident.
* ``abstention_caught_at_95``: the share of abstentions whose top-1 score is below the
  threshold that keeps 95 % of the answerable questions at or above it
  (``abstention_threshold_at_95``): what a "don't know" cut-off would catch while costing 5 %
  of the answerable questions.

Scores are only comparable across questions when they are on a fixed scale: cosine similarity
(dense) and cross-encoder scores are; BM25 scores grow with the query's length and rarity, and
RRF (hybrid) scores depend only on ranks, so the figures for those methods say little.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

KEEP = 0.95


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(a random positive > a random negative) + 0.5 P(tie); NaN without both."""
    if not positive or not negative:
        return math.nan
    neg = sorted(negative)
    wins = 0.0
    for p in positive:
        below = bisect.bisect_left(neg, p)
        ties = bisect.bisect_right(neg, p) - below
        wins += below + 0.5 * ties
    return wins / (len(positive) * len(negative))


def threshold_keeping(scores: Sequence[float], keep: float = KEEP) -> float:
    """The highest threshold ``t`` with at least ``keep`` of ``scores`` at or above it."""
    ordered = sorted(scores)
    drop = math.floor((1 - keep) * len(ordered) + 1e-9)  # how many may fall below
    return ordered[min(drop, len(ordered) - 1)]


def separation(answerable: Sequence[float], abstention: Sequence[float]) -> dict[str, float]:
    """The metrics above (none when there is no abstention or no answerable question)."""
    if not abstention or not answerable:
        return {}
    t = threshold_keeping(answerable)
    return {
        "abstention_n": float(len(abstention)),
        "abstention_top1_mean": math.fsum(abstention) / len(abstention),
        "answerable_top1_mean": math.fsum(answerable) / len(answerable),
        "abstention_auroc": auroc(answerable, abstention),
        "abstention_threshold_at_95": t,
        "abstention_caught_at_95": sum(1 for s in abstention if s < t) / len(abstention),
    }
