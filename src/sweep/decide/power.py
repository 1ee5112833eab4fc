"""How big a difference a golden set can decide, and how many questions a smaller one needs.

Pure functions over the paired per-question differences a sweep measured (configuration A
minus configuration B, one value per question scored in both). No textbook variance: the
spread is the one the two configurations showed on these questions.

The sweep decides with a paired bootstrap of the mean difference (`sweep.decide.stats`), which
for the sizes of golden sets (tens to thousands of questions) behaves as the two-sided Wald test
of the mean: reject "no difference" when ``|mean(d)| > z_{1-alpha/2} * sd(d) / sqrt(n)``. The
formulas below are that test's power, in the normal approximation:

- **Graded differences** (any values): with ``s`` the sample standard deviation of the
  differences, a true mean difference ``delta`` is detected with probability ``power`` when
  ``delta = (z_{1-alpha/2} + z_{power}) * s / sqrt(n)``: the *minimum detectable difference*
  (MDE). Detecting ``delta`` needs ``n = ((z_{1-alpha/2} + z_{power}) * s / delta)**2``.
- **Discordant pairs** (every difference is -1, 0 or +1: a binary headline such as hit@k, or
  recall@k with one relevant passage): what decides is the share ``psi`` of questions on which
  the two disagree. A true difference ``delta`` (at most ``psi``) gives differences of variance
  ``psi - delta**2``, so ``delta * sqrt(n) = k * sqrt(psi - delta**2)`` with
  ``k = z_{1-alpha/2} + z_{power}``, hence ``MDE = k * sqrt(psi) / sqrt(n + k**2)`` and
  ``n = k**2 * (psi - delta**2) / delta**2``. (McNemar's score test, Connor's formula, puts
  ``psi`` rather than ``psi - delta**2`` under the null: a few percent more questions.)

Both hold the measured spread (``s`` or ``psi``) fixed as ``n`` grows: the questions to come are
assumed to be like those in the set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

ALPHA = 0.05
POWER = 0.8
# The difference the end-of-sweep summary and `sweep compare` size the set for when none is
# named (--detect): two points of a rate.
DEFAULT_DETECT = 0.02
# Fewer discordant questions than this and psi is itself a guess: the figures say so.
FEW_DISCORDANT = 10
_EPS = 1e-12


def _z(q: float) -> float:
    # The standard library's quantile (scipy.stats would add ~1 s of import to a sweep's end).
    return NormalDist().inv_cdf(q)


def _k(alpha: float, power: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    return _z(1 - alpha / 2) + _z(power)


def is_discordant(diffs: Sequence[float]) -> bool:
    """True when every difference is -1, 0 or +1 (paired binary outcomes)."""
    return all(abs(d) < _EPS or abs(abs(d) - 1) < _EPS for d in diffs)


def mde_sd(sd: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Minimum detectable mean difference of graded paired differences of standard deviation
    ``sd`` at ``n`` questions: ``(z_{1-alpha/2} + z_power) * sd / sqrt(n)``."""
    if n < 1:
        raise ValueError("n must be >= 1")
    return _k(alpha, power) * sd / math.sqrt(n)


def n_for_sd(sd: float, delta: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Questions needed to detect a mean difference ``delta`` with differences of standard
    deviation ``sd``: ``ceil(((z_{1-alpha/2} + z_power) * sd / delta)**2)``, at least 2."""
    if delta <= 0:
        raise ValueError(f"the difference to detect must be > 0, got {delta}")
    return max(2, math.ceil((_k(alpha, power) * sd / delta) ** 2 - 1e-9))


def mde_discordant(psi: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """Minimum detectable difference of paired binary outcomes that disagree on a share
    ``psi`` of the questions, at ``n`` questions: ``k * sqrt(psi) / sqrt(n + k**2)``."""
    if n < 1:
        raise ValueError("n must be >= 1")
    if not 0 <= psi <= 1:
        raise ValueError(f"the discordant share must be in [0, 1], got {psi}")
    k = _k(alpha, power)
    return k * math.sqrt(psi) / math.sqrt(n + k * k)


def n_for_discordant(psi: float, delta: float, alpha: float = ALPHA, power: float = POWER
                     ) -> int | None:
    """Questions needed to detect a difference ``delta`` between paired binary outcomes that
    disagree on a share ``psi``: ``ceil(k**2 * (psi - delta**2) / delta**2)``, at least 2.
    None when ``delta > psi``: two configurations that disagree on a share ``psi`` of the
    questions cannot differ by more than ``psi``."""
    if delta <= 0:
        raise ValueError(f"the difference to detect must be > 0, got {delta}")
    if delta > psi + _EPS:
        return None
    k = _k(alpha, power)
    return max(2, math.ceil(k * k * max(0.0, psi - delta * delta) / (delta * delta) - 1e-9))


def round_count(n: int) -> str:
    """``1,100`` for 1,083: two significant figures, for an estimate (exact below 100)."""
    if n < 100:
        return f"{n:,}"
    digits = len(str(n)) - 2
    return f"{round(n, -digits):,}"


def _amount(delta: float, points: bool) -> str:
    if points:
        value = 100 * delta
        return f"{value:.1f} points" if value < 10 else f"{value:.0f} points"
    return f"{delta:.3g}"


def power_summary(diffs: Sequence[float], alpha: float = ALPHA, power: float = POWER,
                  detect: float | None = None) -> dict[str, Any]:
    """What a golden set of ``len(diffs)`` questions can decide, from one pair's differences.

    ``diffs``: per question, the headline of one configuration minus that of another (the
    questions scored in both). ``alpha``: two-sided level of the paired test; ``power``: the
    chance of detecting the difference; ``detect``: a difference to size the set for (None:
    no ``n_needed``).

    Returns a plain dict:

    - ``n``: the number of paired questions; ``mean_diff``; ``sd`` (sample SD, ddof 1);
    - ``kind``: ``"discordant"`` (all differences in {-1, 0, +1}; ``n_discordant`` and
      ``discordant_share`` psi are set) or ``"sd"``;
    - ``mde``: the minimum detectable difference at ``n`` (module docstring), or None when
      the pair shows no variation to size it from (``reason`` says why);
    - ``detect`` and ``n_needed``: the questions needed for ``detect`` (None when not asked,
      not computable, or, for discordant pairs, larger than psi);
    - ``points``: True when the differences are of rates in [0, 1], where "9 points" reads
      better than 0.09; ``rough``: True when fewer than `FEW_DISCORDANT` questions differ;
    - ``alpha``, ``power``, and ``text``: one sentence, e.g. "this set (50 questions) can tell
      apart differences of 9.8 points or more; 2.0 points needs ~1,100 questions".
    """
    values = [float(d) for d in diffs]
    if any(not math.isfinite(d) for d in values):
        raise ValueError("paired differences must be finite")
    if detect is not None and not detect > 0:
        raise ValueError(f"the difference to detect must be > 0, got {detect}")
    _k(alpha, power)  # validates
    n = len(values)
    mean = sum(values) / n if n else 0.0
    sd = math.sqrt(sum((d - mean) ** 2 for d in values) / (n - 1)) if n > 1 else 0.0
    n_disc = sum(1 for d in values if abs(d) > _EPS)
    discordant = n > 0 and is_discordant(values)
    out: dict[str, Any] = {
        "n": n, "mean_diff": mean, "sd": sd, "kind": "discordant" if discordant else "sd",
        "n_discordant": n_disc if discordant else None,
        "discordant_share": n_disc / n if discordant and n else None,
        "alpha": alpha, "power": power, "mde": None, "detect": detect, "n_needed": None,
        "points": all(abs(d) <= 1 + _EPS for d in values), "rough": False, "reason": None,
    }
    if n < 2:
        out["reason"] = f"{n} paired question(s): too few to size anything from"
    elif n_disc == 0:
        out["reason"] = ("the two configurations score every question the same: no paired "
                         "variation to size the set from")
    elif discordant:
        psi = n_disc / n
        out["mde"] = mde_discordant(psi, n, alpha, power)
        out["rough"] = n_disc < FEW_DISCORDANT
        if detect is not None:
            out["n_needed"] = n_for_discordant(psi, detect, alpha, power)
    elif sd <= _EPS:
        out["reason"] = ("every question differs by the same amount: no spread to size the "
                         "set from")
    else:
        out["mde"] = mde_sd(sd, n, alpha, power)
        if detect is not None:
            out["n_needed"] = n_for_sd(sd, detect, alpha, power)
    out["text"] = power_text(out)
    return out


def power_text(s: dict[str, Any]) -> str:
    """The sentence of a `power_summary`."""
    if s["mde"] is None:
        return f"power: not estimated ({s['reason']})"
    pts = s["points"]
    text = (f"this set ({s['n']:,} questions) can tell apart differences of "
            f"{_amount(s['mde'], pts)} or more (paired, {100 * s['power']:.0f}% power, "
            f"{100 * s['alpha']:g}% two-sided)")
    if s["detect"] is not None:
        if s["n_needed"] is None:
            text += (f"; {_amount(s['detect'], pts)} is more than the two disagree on "
                     "(no set size would show it)")
        else:
            text += f"; {_amount(s['detect'], pts)} needs ~{round_count(s['n_needed'])} questions"
    if s["kind"] == "discordant":
        text += (f" [{s['n_discordant']} of {s['n']} questions differ"
                 + ("; few: a rough figure]" if s["rough"] else "]"))
    return text
