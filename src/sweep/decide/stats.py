"""The statistics of a sweep's table: the paired bootstrap, the verdicts against the best.

Pure functions over plain data (per-question scores as ``{qid: score}`` or pandas frames),
tested with hand-made numbers; where the scores come from is `sweep.decide.runs`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from sweep.common.errors import SweepError
from sweep.decide import multiple
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.evaluation.catalog import lower_is_better

N_RESAMPLES = 10_000
ALPHA = 0.05
SEED = 0


def paired_bootstrap(a: Sequence[float], b: Sequence[float], n: int = N_RESAMPLES,
                     seed: int = SEED) -> tuple[float, float, float, float]:
    """Paired bootstrap of the mean difference ``a - b`` over the same questions.

    Resamples the questions with replacement ``n`` times (fixed ``seed``: same input, same
    numbers). Returns ``(mean_diff, lo, hi, p)``: the observed mean difference, the 95 %
    percentile interval of the resampled means, and a two-sided p-value (twice the smaller
    share of resampled means on either side of zero, at most 1), so that ``p < 0.05`` exactly
    when the interval excludes zero.
    """
    import numpy as np

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"paired samples must have the same length ({x.shape} vs {y.shape})")
    if x.size == 0:
        raise ValueError("paired_bootstrap needs at least one pair")
    if n < 1:
        raise ValueError("n must be >= 1")
    d = x - y
    m = d.size
    rng = np.random.default_rng(seed)
    boots = np.empty(n)
    step = max(1, 4_000_000 // m)  # bounded memory for large golden sets
    for start in range(0, n, step):
        size = min(step, n - start)
        idx = rng.integers(0, m, size=(size, m))
        boots[start : start + size] = d[idx].mean(axis=1)
    boots = np.round(boots, 12)  # exact zeros stay zeros despite float summation
    lo, hi = np.percentile(boots, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    p = min(1.0, 2.0 * min(float((boots <= 0).mean()), float((boots >= 0).mean())))
    return float(np.round(d.mean(), 12)), float(lo), float(hi), p


@dataclass
class Verdict:
    n_pairs: int
    diff: float | None = None  # this configuration minus the best
    lo: float | None = None
    hi: float | None = None
    p: float | None = None
    tied: bool = True
    text: str = ""
    p_adj: float | None = None  # p adjusted for the table's other comparisons (`correction`)
    correction: str = "none"


def format_p(p: float, n: int = N_RESAMPLES, name: str = "p") -> str:
    """``p=0.031``, ``p=0.0004``, or ``p<1e-04`` when no resample crossed zero."""
    if p < 1 / n:
        return f"{name}<{1 / n:.0e}"
    return f"{name}={p:.4f}" if p < 0.001 else f"{name}={p:.3f}"


def decide_verdict(n_pairs: int, diff: float, lo: float, hi: float, p: float, metric: str,
                   n: int = N_RESAMPLES, p_adj: float | None = None,
                   correction: str = "none") -> Verdict:
    """The verdict of one paired comparison with the best: ``worse`` when the (adjusted)
    p-value is below `ALPHA` and the interval lies on the worse side of zero."""
    decisive = p if p_adj is None or correction == "none" else p_adj
    ci = f"diff {diff:+.3f}, 95% CI [{lo:+.3f}, {hi:+.3f}]"
    if decisive is p:
        shown = f"{format_p(p, n)} ({ci})"
    else:
        shown = f"{format_p(decisive, n, f'p_{correction}')} ({format_p(p, n)}; {ci})"
    sign = -1.0 if lower_is_better(metric) else 1.0
    worse_hi = hi if sign > 0 else -lo  # upper end of the (oriented) improvement interval
    better_lo = lo if sign > 0 else -hi
    common = {"p_adj": p_adj, "correction": correction}
    if decisive < ALPHA and worse_hi < 0:
        return Verdict(n_pairs, diff, lo, hi, p, tied=False, text=f"worse, {shown}", **common)
    if decisive < ALPHA and better_lo > 0:
        # Possible when the two were scored on different questions: not worse than the best.
        return Verdict(n_pairs, diff, lo, hi, p, tied=True,
                       text=f"better on shared questions, {shown}", **common)
    return Verdict(n_pairs, diff, lo, hi, p, tied=True, text=f"tied with best, {shown}",
                   **common)


def verdict_against_best(best: Sequence[float], other: Sequence[float], metric: str,
                         n: int = N_RESAMPLES, seed: int = SEED) -> Verdict:
    """Is ``other`` distinguishable from ``best`` (paired scores, same question order), on its
    own (no correction for the table's other comparisons: `table_verdicts`)?"""
    if len(best) == 0:
        return Verdict(0, tied=True, text="n/a (no question scored in both)")
    diff, lo, hi, p = paired_bootstrap(other, best, n=n, seed=seed)
    return decide_verdict(len(best), diff, lo, hi, p, metric, n)


def resampled_means(scores: Any, n: int = N_RESAMPLES, seed: int = SEED) -> Any:
    """``n`` bootstrap resamples of the questions (rows of ``scores``, one column per
    configuration): each resample's mean per configuration, an ``(n, k)`` array.

    The resamples are those `paired_bootstrap` draws for the same number of questions and
    seed, so a column difference ``means[:, j] - means[:, i]`` is that function's resampled
    mean difference of configuration j minus i (the same numbers, every pair at once)."""
    import numpy as np

    s = np.asarray(scores, dtype=float)
    m = s.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((n, s.shape[1]))
    step = max(1, 4_000_000 // m)  # as paired_bootstrap: the same draws, in the same order
    counts = np.empty((min(step, n), m))
    offsets = (np.arange(_COUNT_ROWS) * m)[:, None]
    for start in range(0, n, step):
        size = min(step, n - start)
        # How often each question is drawn in each resample, a few resamples at a time: the
        # draws are the same values as one call for the whole step would give (numpy draws
        # bounded integers from one stream of 32-bit values, a leftover half kept in the
        # generator's state; a test pins it), and the memory they use stays small and
        # reused: a whole step's draws at once were 32 MB of fresh pages per step, whose
        # first touch cost a sweep's end ~0.25 s of system time (and more waiting).
        for r0 in range(0, size, _COUNT_ROWS):
            rows = min(_COUNT_ROWS, size - r0)
            block = rng.integers(0, m, size=(rows, m))
            block += offsets[:rows]
            counts[r0 : r0 + rows] = np.bincount(block.ravel(), minlength=rows * m
                                                 ).reshape(rows, m)
        # One product for every column, of the whole step's counts as before: the same
        # product of the same numbers, so every mean is the same to the bit.
        out[start : start + size] = counts[:size] @ s / m  # (an integer matmul: 5x slower)
    return out


_COUNT_ROWS = 64  # resamples counted at once by `resampled_means`


def _tail_p(boots: Any, observed: float) -> float:
    """Two-sided p of a resampled difference (as `paired_bootstrap`), and where no resample
    crossed zero, the normal tail beyond it instead of 0: a table of many comparisons
    multiplies small p-values, and "fewer than 1 in 10,000" is not 0."""
    p = min(1.0, 2.0 * min(float((boots <= 0).mean()), float((boots >= 0).mean())))
    if p > 0:
        return p
    sd = float(boots.std())
    if sd <= 0:
        return 0.0
    return min(1 / boots.size, 2 * NormalDist().cdf(-abs(observed) / sd))


def pairwise_p(means: Any, observed: Sequence[float]) -> Any:
    """``p[i, j]``: the two-sided bootstrap p of configuration i against j, for every pair, from
    `resampled_means` (``observed``: each configuration's mean on the same questions)."""
    import numpy as np

    k = means.shape[1]
    n = means.shape[0]
    p = np.ones((k, k))
    for i in range(k - 1):
        boots = np.round(means[:, i + 1 :] - means[:, [i]], 12)  # every j > i at once
        row = np.minimum(1.0, 2.0 * np.minimum((boots <= 0).sum(axis=0),
                                               (boots >= 0).sum(axis=0)) / n)
        for off in np.flatnonzero(row == 0):  # no resample crossed zero: the normal tail
            j = i + 1 + int(off)
            row[off] = _tail_p(boots[:, off], observed[j] - observed[i])
        p[i, i + 1 :] = row
        p[i + 1 :, i] = row
    return p


class Resamples:
    """One set of resamples of the questions for a whole table: `resampled_means` over the
    questions every configuration with scores scored (``common``, sorted), so that any linear
    combination of configurations (a pair, an axis value averaged over cells) gets the
    bootstrap `paired_bootstrap` would give it on those questions, without resampling again.

    ``scores[i]``: row i's ``{qid: score}`` or None (left out)."""

    def __init__(self, scores: Sequence[Mapping[str, float] | None], n: int = N_RESAMPLES,
                 seed: int = SEED) -> None:
        import numpy as np

        self.n = n
        self.present = [i for i, sc in enumerate(scores) if sc is not None]
        self.column = {i: c for c, i in enumerate(self.present)}
        self.common = (sorted(set.intersection(*(set(scores[i] or {}) for i in self.present)))
                       if self.present else [])
        self.means: Any = None
        self.observed: Any = None
        if self.common and self.present:
            matrix = np.array([[scores[i][q] for i in self.present]  # type: ignore[index]
                               for q in self.common])
            self.means = resampled_means(matrix, n=n, seed=seed)
            self.observed = matrix.mean(axis=0)

    def covers(self, rows: Sequence[int], qids: Sequence[str]) -> bool:
        """Whether a comparison of ``rows`` on the questions ``qids`` (sorted) is one of these
        resamples' linear combinations."""
        return (self.means is not None and all(r in self.column for r in rows)
                and list(qids) == self.common)

    def combination(self, weights: Mapping[int, float]) -> tuple[float, float, float, float]:
        """``(mean_diff, lo, hi, p)`` of ``sum(w * row)`` as `paired_bootstrap` reports it."""
        import numpy as np

        w = np.zeros(len(self.present))
        for row, weight in weights.items():
            w[self.column[row]] += weight
        boots = np.round(self.means @ w, 12)
        lo, hi = np.percentile(boots, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
        p = min(1.0, 2.0 * min(float((boots <= 0).mean()), float((boots >= 0).mean())))
        return float(np.round(self.observed @ w, 12)), float(lo), float(hi), p


def paired_or_resampled(res: Resamples | None, a: Mapping[str, float], b: Mapping[str, float],
                        ia: int, ib: int, n: int = N_RESAMPLES, seed: int = SEED
                        ) -> tuple[int, tuple[float, float, float, float]] | None:
    """The paired bootstrap of row ``ia`` minus row ``ib`` on the questions both scored (from
    ``res`` when those are its questions); with the number of questions. None: none shared."""
    shared = sorted(q for q in a if q in b)
    if not shared:
        return None
    if res is not None and res.covers([ia, ib], shared):
        return len(shared), res.combination({ia: 1.0, ib: -1.0})
    return len(shared), paired_bootstrap([a[q] for q in shared], [b[q] for q in shared],
                                         n=n, seed=seed)


def table_verdicts(scores: Sequence[Mapping[str, float] | None], metric: str,
                   correction: str = DEFAULT_CORRECTION, n: int = N_RESAMPLES,
                   seed: int = SEED, resamples: Resamples | None = None
                   ) -> list[Verdict | None]:
    """Every configuration of a table against its best, corrected for the table's comparisons.

    ``scores[0]`` is the best configuration's ``{qid: score}`` (questions it scored), then one
    per other row (None: no per-question scores; its verdict is None). Returns the verdicts of
    ``scores[1:]``, in order. ``resamples``: a `Resamples` of these scores made already.

    Each row's difference, interval and p come from the paired bootstrap over the questions it
    and the best both scored (`paired_bootstrap`). The correction treats the table as the
    family of *every pair* of its configurations, not only the comparisons with the best: the
    best is picked from the same data, and among 40 configurations that differ only by noise
    the observed best is the luckiest, so testing the others against it alone says "worse" by
    chance far more often than 5% (docs/statistics.md measures it). The pairs' p-values come
    from one set of resamples of the questions every configuration scored (`Resamples`), are
    adjusted together (`multiple.adjust`), and a row is "worse" only when its pair with the
    best stays below `ALPHA` after adjustment (a table whose configurations share no question
    has no family: every row stays tied).
    """
    import numpy as np

    best = scores[0]
    out: list[Verdict | None] = [None] * (len(scores) - 1)
    if best is None:
        return out
    res = resamples if resamples is not None else Resamples(scores, n=n, seed=seed)
    family_p: dict[int, float] = {}
    if res.means is not None and len(res.present) > 1:
        p = pairwise_p(res.means, np.round(res.observed, 12).tolist())
        k = len(res.present)
        pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
        adjusted = multiple.adjust([float(p[a, b]) for a, b in pairs], correction)
        family_p = {res.present[b]: float(adj) for (a, b), adj in zip(pairs, adjusted, strict=True)
                    if a == 0 and adj is not None}
    for i in range(1, len(scores)):
        mine = scores[i]
        if mine is None:
            continue
        got = paired_or_resampled(res, mine, best, i, 0, n=n, seed=seed)
        if got is None:
            out[i - 1] = Verdict(0, tied=True, text="n/a (no question scored in both)")
            continue
        n_pairs, (diff, lo, hi, p_raw) = got
        p_adj = None if correction == "none" else family_p.get(i, 1.0)
        out[i - 1] = decide_verdict(n_pairs, diff, lo, hi, p_raw, metric, n, p_adj, correction)
    return out


def correction_line(correction: str, n_configs: int, metric: str) -> str:
    """What the verdicts mean, for the header of a table (``n_configs``: the configurations
    with per-question scores, the best included)."""
    how = (f"paired bootstrap vs the best on {metric} ({N_RESAMPLES:,} resamples, seed {SEED}, "
           f"{100 * ALPHA:g}%)")
    if correction == "none":
        return (f"verdicts: {how}, uncorrected: each of the {max(0, n_configs - 1)} comparisons "
                f"with the best on its own ({multiple.GUARANTEE['none']})")
    pairs = n_configs * (n_configs - 1) // 2
    return (f"verdicts: {how}, {multiple.NAMES[correction]}-corrected over all {pairs} pairs of "
            f"the {n_configs} configurations, as the best is picked from the same data "
            f"({multiple.GUARANTEE[correction]})")


def _usable(df: Any, metric: str) -> Any:
    """The ``qid`` and ``metric`` of the questions a per_question table scored (a value for
    ``metric``; ``status == scored`` for chunk-level metrics), one row per qid."""
    import pandas as pd

    if metric not in df.columns:
        raise SweepError(f"per_question.csv has no column {metric!r}")
    out = df[["qid", metric] + (["status"] if "status" in df.columns else [])].copy()
    out[metric] = pd.to_numeric(out[metric], errors="coerce")
    out = out[out[metric].notna()]
    if "status" in out.columns and not metric.startswith("doc_"):
        out = out[out["status"].astype(str) == "scored"]
    out["qid"] = out["qid"].astype(str)
    return out.drop_duplicates("qid")[["qid", metric]]


def question_scores(df: Any, metric: str) -> dict[str, float]:
    """``{qid: score}`` of the questions a per_question table scored on ``metric``."""
    u = _usable(df, metric)
    return dict(zip(u["qid"].tolist(), u[metric].astype(float).tolist(), strict=True))


def paired_scores(a: Any, b: Any, metric: str) -> tuple[list[str], list[float], list[float]]:
    """Pair two per_question tables (pandas) on ``qid``, keeping only the questions scored in
    both (a value for ``metric`` in both; ``status == scored`` for chunk-level metrics)."""
    merged = _usable(a, metric).merge(_usable(b, metric), on="qid", suffixes=("_a", "_b"))
    return (merged["qid"].tolist(), merged[f"{metric}_a"].astype(float).tolist(),
            merged[f"{metric}_b"].astype(float).tolist())
