"""What each swept axis did, and which configurations are worth their cost.

Pure functions over plain rows (one per configuration: its axis values and metrics) and,
where there are any, each configuration's per-question scores ``{qid: score}``.

**Axis effects.** For an axis A (``chunk.boundary``), the other axes' values form *cells*
(``size=256, header=path``). Only the cells run with every value of A count, so that each value
is averaged over the same settings of the others (a grid gives every cell; an optimising sweep
or failed jobs may give few). For each value v:

- ``mean``: the headline averaged over those cells;
- against the axis's best value b (highest mean, lowest for a lower-is-better metric): per
  question, the score under v minus that under b, averaged over the cells, on the questions
  every one of those configurations scored; the paired bootstrap of that mean gives ``diff``,
  its 95% interval and p, adjusted over every (axis, value) comparison of the sweep with the
  table's correction. ``within_noise``: the adjusted p is not below 5%;
- ``best_in_cells``: in how many cells b is also the best value (ties count): does the choice of
  boundary hold whatever the size?

**Pareto front.** For a cost (context tokens, p95 latency, dollars), the configurations no other
configuration beats on the headline without costing more, cheapest first. Each step up the
front is tested against the step before it (paired bootstrap, same correction): a step
``within noise`` buys nothing this set can see.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sweep.decide import multiple
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.decide.stats import (
    ALPHA,
    N_RESAMPLES,
    SEED,
    Resamples,
    paired_bootstrap,
    paired_or_resampled,
)
from sweep.outputs.report import format_value

Scores = Mapping[str, float]


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _order(values: Sequence[Any]) -> list[Any]:
    """Numbers by value, then the rest by name: 128 before 1024, fixed before heading."""
    def key(v: Any) -> tuple[int, float, str]:
        f = _finite(v) if not isinstance(v, bool) else None
        return (0, f, "") if f is not None else (1, 0.0, str(v))
    return sorted(set(values), key=key)


def _label(value: Any) -> str:
    return format_value(value) if isinstance(value, float) else str(value)


def axis_effects(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], metric: str,
                 scores: Sequence[Scores | None] | None = None, *,
                 lower_is_better: bool = False, correction: str = DEFAULT_CORRECTION,
                 n: int = N_RESAMPLES, seed: int = SEED, resamples: Resamples | None = None
                 ) -> list[dict[str, Any]]:
    """One entry per axis of ``axes`` with two values or more (module docstring).

    ``rows[i]`` holds the value of each axis and ``rows[i][metric]``; ``scores[i]`` is
    configuration i's per-question scores (None, or no ``scores``: means only, no interval).
    Rows without a finite ``metric`` are left out. Each entry: ``axis``, ``others``, ``best``, ``n_cells``,
    ``best_in_cells``, ``values`` (per value: ``value``, ``mean``, ``diff``, ``lo``, ``hi``,
    ``p``, ``p_adj``, ``within_noise``, ``n_questions``), ``note`` (why nothing was computed)
    and ``text`` (one line). ``resamples``: a `table.Resamples` of ``scores``, reused."""
    sign = -1.0 if lower_is_better else 1.0
    usable = [i for i, r in enumerate(rows) if _finite(r.get(metric)) is not None]
    out: list[dict[str, Any]] = []
    tests: list[tuple[dict[str, Any], float]] = []  # (value entry, raw p) for the correction
    for axis in axes:
        values = _order([rows[i].get(axis) for i in usable])
        if len(values) < 2:
            continue
        others = [a for a in axes if a != axis]
        cells: dict[tuple[str, ...], dict[Any, int]] = {}
        for i in usable:
            cell = tuple(str(rows[i].get(a)) for a in others)
            cells.setdefault(cell, {}).setdefault(rows[i].get(axis), i)  # first = best ranked
        complete = [c for c, by in cells.items() if len(by) == len(values)]
        entry: dict[str, Any] = {"axis": axis, "others": others, "best": None,
                                 "n_cells": len(complete), "best_in_cells": None,
                                 "values": [], "note": None}
        out.append(entry)
        if not complete:
            entry["note"] = ("no combination of the other axes was run with every value of "
                             f"{axis}")
            entry["text"] = f"{axis}: {entry['note']}"
            continue
        mean = {v: sum(float(rows[cells[c][v]][metric]) for c in complete) / len(complete)
                for v in values}
        best = max(values, key=lambda v: (sign * mean[v], -values.index(v)))
        entry["best"] = best
        entry["best_in_cells"] = sum(
            1 for c in complete
            if sign * float(rows[cells[c][best]][metric])
            >= max(sign * float(rows[cells[c][v]][metric]) for v in values) - 1e-12)
        for v in values:
            item: dict[str, Any] = {"value": v, "mean": mean[v], "diff": mean[v] - mean[best],
                                    "lo": None, "hi": None, "p": None, "p_adj": None,
                                    "within_noise": None, "n_questions": None}
            entry["values"].append(item)
            if v == best or scores is None:
                continue
            involved = [cells[c][x] for c in complete for x in (v, best)]
            if any(scores[i] is None for i in involved):
                continue
            qids = sorted(set.intersection(*(set(scores[i] or {}) for i in involved)))
            if not qids:
                continue
            if resamples is not None and resamples.covers(involved, qids):
                weights: dict[int, float] = {}
                for c in complete:
                    for x, w in ((v, 1.0), (best, -1.0)):
                        weights[cells[c][x]] = weights.get(cells[c][x], 0.0) + w / len(complete)
                diff, lo, hi, p = resamples.combination(weights)
            else:
                per_q = [sum(scores[cells[c][v]][q] - scores[cells[c][best]][q]  # type: ignore[index]
                             for c in complete) / len(complete) for q in qids]
                diff, lo, hi, p = paired_bootstrap(per_q, [0.0] * len(per_q), n=n, seed=seed)
            item.update(diff=diff, lo=lo, hi=hi, p=p, n_questions=len(qids))
            tests.append((item, p))
    for (item, _), p_adj in zip(tests, multiple.adjust([p for _, p in tests], correction),
                                strict=True):
        item["p_adj"] = p_adj
        item["within_noise"] = not (p_adj is not None and p_adj < ALPHA)
    for entry in out:
        if entry["note"] is None:
            entry["text"] = effect_text(entry, metric)
    return out


def effect_text(entry: Mapping[str, Any], metric: str) -> str:
    """``chunk.boundary: best heading (0.871, over 4 combinations of the others; best in 3 of
    4); fixed -0.052 [-0.090, -0.013] worse, sentence -0.010 [-0.041, +0.020] within noise``"""
    best = entry["best"]
    parts = []
    for item in entry["values"]:
        if item["value"] == best:
            continue
        text = f"{_label(item['value'])} {item['diff']:+.3f}"
        if item["lo"] is not None:
            text += f" [{item['lo']:+.3f}, {item['hi']:+.3f}]"
            text += " within noise" if item["within_noise"] else " worse"
        parts.append(text)
    mean = next(i["mean"] for i in entry["values"] if i["value"] == best)
    cells = entry["n_cells"]
    where = ("" if not entry["others"]
             else f", over {cells} combination{'s' if cells != 1 else ''} of the others; "
             f"best in {entry['best_in_cells']} of {cells}")
    return (f"{entry['axis']}: best {_label(best)} ({metric} {mean:.3f}{where}); "
            + ", ".join(parts))


# Costs closer than this (relative) count as equal: a p95 latency that differs by 0.01 ms, or
# two context-token means a token apart, is no cheaper.
COST_TOLERANCE = 0.01


def pareto_front(rows: Sequence[Mapping[str, Any]], metric: str, cost: str, *,
                 lower_is_better: bool = False, tolerance: float = COST_TOLERANCE) -> list[int]:
    """Indices of the configurations on the front of ``metric`` against ``cost`` (lower cost
    is better), cheapest first: none is matched or beaten on ``metric`` by another that costs
    no more (costs within ``tolerance`` of each other, relative, count as equal; of several
    equal in both, the first). Rows missing either value are left out."""
    sign = -1.0 if lower_is_better else 1.0
    points = [(c, sign * m, i) for i, r in enumerate(rows)
              if (c := _finite(r.get(cost))) is not None
              and (m := _finite(r.get(metric))) is not None]

    def dominated(p: tuple[float, float, int]) -> bool:
        c, v, i = p
        return any(c2 <= c + tolerance * abs(c) + 1e-12
                   and (v2 > v + 1e-12 or (abs(v2 - v) <= 1e-12 and (c2, j) < (c, i)))
                   for c2, v2, j in points if j != i)

    return [i for c, _, i in sorted(p for p in points if not dominated(p))]


def pareto_fronts(rows: Sequence[Mapping[str, Any]], metric: str, costs: Sequence[str],
                  scores: Sequence[Scores | None] | None = None, *,
                  lower_is_better: bool = False, correction: str = DEFAULT_CORRECTION,
                  n: int = N_RESAMPLES, seed: int = SEED, resamples: Resamples | None = None
                  ) -> list[dict[str, Any]]:
    """The front against each cost that some row reports: ``{"cost", "points": [{"index",
    "cost", "value", "gain", "lo", "hi", "p", "p_adj", "within_noise"}]}``, where ``gain`` is
    the step over the cheaper point before it (tested on the questions both scored).
    ``resamples``: a `table.Resamples` of ``scores``, reused."""
    out: list[dict[str, Any]] = []
    tests: list[tuple[dict[str, Any], float]] = []
    sign = -1.0 if lower_is_better else 1.0
    for cost in costs:
        front = pareto_front(rows, metric, cost, lower_is_better=lower_is_better)
        if not front:
            continue
        points = []
        for k, i in enumerate(front):
            point: dict[str, Any] = {"index": i, "cost": float(rows[i][cost]),
                                     "value": float(rows[i][metric]), "gain": None, "lo": None,
                                     "hi": None, "p": None, "p_adj": None, "within_noise": None}
            points.append(point)
            if k == 0:
                continue
            prev = front[k - 1]
            point["gain"] = sign * (point["value"] - float(rows[prev][metric]))
            if scores is None or scores[i] is None or scores[prev] is None:
                continue
            got = paired_or_resampled(resamples, scores[i], scores[prev], i, prev, n=n, seed=seed)
            if got is None:
                continue
            _, (_, lo, hi, p) = got
            point.update(lo=lo, hi=hi, p=p)
            tests.append((point, p))
        out.append({"cost": cost, "points": points})
    for (point, _), p_adj in zip(tests, multiple.adjust([p for _, p in tests], correction),
                                 strict=True):
        point["p_adj"] = p_adj
        point["within_noise"] = not (p_adj is not None and p_adj < ALPHA)
    return out


def front_text(front: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
               axes: Sequence[str], metric: str) -> list[str]:
    """Lines for one front: each point's cost, headline and settings, and whether its step up
    from the cheaper point is within noise."""
    lines = [f"Pareto front of {metric} against {front['cost']} (cheapest first):"]
    for pt in front["points"]:
        r = rows[pt["index"]]
        what = ", ".join(f"{a.split('.')[-1]}={_label(r.get(a))}" for a in axes) or "config"
        line = f"  {format_value(pt['cost'])}  {metric}={pt['value']:.3f}  {what}"
        if pt["gain"] is not None:
            line += f"  (+{pt['gain']:.3f}"
            if pt["within_noise"] is not None:
                line += ", within noise" if pt["within_noise"] else ", distinguishable"
            line += ")"
        lines.append(line)
    return lines
