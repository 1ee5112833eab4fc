"""Which configuration a sweep hands over: the best, and a cheaper one only when shown equal.

The winner is the best on the headline, ties broken as the table breaks them (fewer context
tokens, lower latency, the configuration's hash: `outputs.report.rank_key`), so the
end-of-sweep ``best:`` line, `sweep compare`, `sweep export` and `sweep rerun --top` name one
configuration. "Not shown different" is not "shown equal": on a small set every configuration
is indistinguishable from the best, and the cheapest of them can be far below it. A cheaper
configuration is therefore *offered* beside the best, with what it saves and what it may cost,
and replaces it (``sweep export --prefer cheaper``) only when an equivalence test holds: the
paired bootstrap interval of its difference with the best lies inside ``±margin``.

Pure over the table's rows (best first) and their verdicts against the best.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep.common.errors import SweepError
from sweep.decide.stats import ALPHA, Verdict
from sweep.outputs.report import rank_number as _num

DEFAULT_MARGIN = 0.02
PREFER = ("best", "cheaper")


@dataclass
class Offer:
    """A configuration cheaper than the best (row ``index``), what it saves and may cost."""

    index: int
    cost: str
    saves: float  # fewer ``cost`` than the best
    cost_best: float
    cost_row: float
    diff: float  # its metric minus the best's, paired over ``n_pairs`` questions
    lo: float
    hi: float
    n_pairs: int
    margin: float
    equivalent: bool  # [lo, hi] inside ±margin

    def needed(self) -> int | None:
        """About how many questions would put the interval inside the margin, at the same
        difference and spread (the interval narrows as 1/sqrt(n)); None when the difference
        itself is at or beyond the margin."""
        room = self.margin - abs(self.diff)
        half = (self.hi - self.lo) / 2
        if room <= 0 or half <= 0:
            return None
        return max(self.n_pairs + 1, math.ceil(self.n_pairs * (half / room) ** 2))


def check_margin(margin: float) -> float:
    if not math.isfinite(margin) or margin <= 0:
        raise SweepError(f"--margin {margin:g}: must be a positive difference on the metric "
                         f"(e.g. {DEFAULT_MARGIN})")
    return margin


def equivalent(lo: float, hi: float, margin: float) -> bool:
    """The equivalence test: the whole interval of the difference within ``±margin``."""
    return -margin <= lo and hi <= margin


def cheaper_offer(rows: Sequence[Mapping[str, Any]], verdicts: Sequence[Verdict | None],
                  cost: str, latency: str, margin: float = DEFAULT_MARGIN) -> Offer | None:
    """The configuration to offer beside the best (``rows[0]``): of those with fewer ``cost``
    and a paired comparison with the best (``verdicts[i - 1]`` for ``rows[i]``), the cheapest
    shown equal within ``margin``; when none is, the cheapest not shown worse (offered, not
    shown equal). None: no cheaper configuration, or none that is not worse."""
    if not rows:
        return None
    best_cost = _num(rows[0].get(cost))
    if not math.isfinite(best_cost):
        return None
    cheaper = []
    for i, v in enumerate(verdicts, start=1):
        c = _num(rows[i].get(cost))
        if v is None or v.diff is None or v.lo is None or v.hi is None or c >= best_cost:
            continue
        cheaper.append((c, _num(rows[i].get(latency)), i, v))
    shown = [x for x in cheaper if equivalent(x[3].lo, x[3].hi, margin)]  # type: ignore[arg-type]
    pool = shown or [x for x in cheaper if x[3].tied]
    if not pool:
        return None
    c, _, i, v = min(pool, key=lambda x: (x[0], x[1], x[2]))
    return Offer(i, cost, best_cost - c, best_cost, c, float(v.diff), float(v.lo),  # type: ignore[arg-type]
                 float(v.hi), v.n_pairs, margin, bool(shown))


def choose(rows: Sequence[Mapping[str, Any]], verdicts: Sequence[Verdict | None], metric: str,
           cost: str, latency: str, *, prefer: str = "best", margin: float = DEFAULT_MARGIN
           ) -> tuple[int, str, Offer | None]:
    """The row to export (its index), the rule that decided, and the cheaper offer."""
    if not rows:
        raise SweepError("no finished configuration to choose from")
    if prefer not in PREFER:
        raise SweepError(f"--prefer {prefer!r}: one of {', '.join(PREFER)}")
    offer = cheaper_offer(rows, verdicts, cost, latency, margin)
    best_rule = (f"best {metric} (the top row of `sweep compare`; ties by fewer {cost}, then "
                 f"lower {latency}, then config hash)")
    if prefer == "best":
        return 0, best_rule, offer
    if offer is not None and offer.equivalent:
        return offer.index, (f"--prefer cheaper: {offer.saves:.0f} fewer {cost} than the best, "
                             f"and shown within ±{margin:g} of it on {metric} "
                             f"({interval(offer)})"), offer
    return 0, f"{best_rule}; --prefer cheaper: {why_not(offer, metric)}", offer


def interval(o: Offer) -> str:
    return (f"diff {o.diff:+.3f}, {100 * (1 - ALPHA):g}% CI [{o.lo:+.3f}, {o.hi:+.3f}], "
            f"paired over {o.n_pairs} questions")


def why_not(offer: Offer | None, metric: str) -> str:
    """Why the cheaper configuration is not exported (the best is kept)."""
    if offer is None:
        return "no cheaper configuration that is not worse than the best; kept the best"
    if offer.equivalent:
        return "shown equal"
    need = offer.needed()
    why = (f"too few questions to show that; about {need} could, at this spread"
           if need is not None else f"its difference alone is beyond ±{offer.margin:g}")
    return (f"the cheaper configuration is not shown within ±{offer.margin:g} of the best on "
            f"{metric} ({interval(offer)}: {why}); kept the best")


def offer_lines(names: Sequence[str], metric: str, offer: Offer | None) -> list[str]:
    """What the end-of-sweep summary, `sweep compare` and `sweep export` say about the cheaper
    configuration offered beside the best (nothing when there is none)."""
    if offer is None:
        return []
    o = offer
    share = f", {o.saves / o.cost_best:.0%} fewer" if o.cost_best else ""
    said = (f"cheaper than the best: {names[o.index]} reads {o.saves:.0f} fewer {o.cost} "
            f"({o.cost_row:.0f} vs {o.cost_best:.0f}{share}); may cost {o.diff:+.3f} {metric} "
            f"({interval(o)}); ")
    if o.equivalent:
        said += (f"shown within ±{o.margin:g} of the best: `sweep export --prefer cheaper` "
                 "exports it")
    else:
        need = o.needed()
        said += (f"not shown within ±{o.margin:g} of the best"
                 + (f" (about {need} questions could show it)" if need is not None else "")
                 + ": `sweep export` keeps the best, even with --prefer cheaper")
    return [said]
