"""Many comparisons at once: adjusted p-values for a table of tests.

A sweep of 40 configurations runs 39 tests against the best; at 5% each, about two of them
say "worse" by chance alone. The adjustments below turn the table's p-values into ones whose
``< alpha`` verdicts hold for the table as a whole. Pure functions; ``None`` (a row that was
not tested) passes through and does not count as a test.

- ``none``: the p-values as they are (each test at its own level).
- ``holm``: Holm's step-down (1979). Order the m p-values ``p_(1) <= ... <= p_(m)``; the
  adjusted ``p~_(i) = max_{j <= i} min(1, (m - j + 1) * p_(j))``. Rejecting where
  ``p~ < alpha`` keeps the chance of *any* false rejection in the table at most ``alpha``
  (family-wise error), whatever the dependence between the tests; never less powerful than
  Bonferroni (``m * p``).
- ``bh``: Benjamini-Hochberg (1995). ``p~_(i) = min_{j >= i} min(1, m * p_(j) / j)``.
  Rejecting where ``p~ < alpha`` keeps the expected *share* of false rejections among the
  rejections at most ``alpha`` (false discovery rate; shown for independent or positively
  dependent tests, which paired comparisons against one best are). More rejections than Holm.
"""

from __future__ import annotations

from collections.abc import Sequence

CORRECTIONS = ("none", "holm", "bh")
DEFAULT_CORRECTION = "holm"
NAMES = {"none": "uncorrected", "holm": "Holm", "bh": "Benjamini-Hochberg"}
GUARANTEE = {
    "none": "each test at its own 5%: expect about 1 false 'worse' in 20 comparisons",
    "holm": "the chance of any false 'worse' in the table is at most 5%",
    "bh": "the expected share of false 'worse' among the 'worse' verdicts is at most 5%",
}


def adjust(p_values: Sequence[float | None], method: str = DEFAULT_CORRECTION
           ) -> list[float | None]:
    """Adjusted p-values, in the input's order (module docstring for each ``method``)."""
    if method not in CORRECTIONS:
        raise ValueError(f"unknown correction {method!r} (expected one of {', '.join(CORRECTIONS)})")
    for p in p_values:
        if p is not None and not 0 <= p <= 1:
            raise ValueError(f"a p-value must be in [0, 1], got {p}")
    out: list[float | None] = list(p_values)
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    if method == "none" or m == 0:
        return out
    if method == "holm":
        running = 0.0
        for j, (p, i) in enumerate(tested):  # j = 0 for the smallest p
            running = max(running, min(1.0, (m - j) * p))
            out[i] = running
        return out
    running = 1.0
    for j in range(m - 1, -1, -1):
        p, i = tested[j]
        running = min(running, min(1.0, m * p / (j + 1)))
        out[i] = running
    return out


def n_tests(p_values: Sequence[float | None]) -> int:
    return sum(1 for p in p_values if p is not None)
