"""Axis effects and Pareto fronts on hand-made tables."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.decide import axes as ax

AXES = ["chunk.boundary", "chunk.size"]


def _rows(table):
    return [{"chunk.boundary": b, "chunk.size": s, "m": v} for (b, s), v in table.items()]


def _scores(values):
    return {f"q{i}": float(v) for i, v in enumerate(values)}


# Ten questions; each configuration's mean is its headline.
TABLE = {("fixed", 128): 0.5, ("fixed", 256): 0.6, ("heading", 128): 0.8, ("heading", 256): 0.7}
PER_Q = {("fixed", 128): [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],
         ("fixed", 256): [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],
         ("heading", 128): [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],
         ("heading", 256): [1, 1, 1, 1, 1, 1, 1, 0, 0, 0]}


def test_axis_effects_by_hand():
    rows = _rows(TABLE)
    scores = [_scores(PER_Q[k]) for k in TABLE]
    effects = {e["axis"]: e for e in ax.axis_effects(rows, AXES, "m", scores, n=2000)}
    b = effects["chunk.boundary"]
    assert b["best"] == "heading" and b["n_cells"] == 2 and b["best_in_cells"] == 2
    values = {v["value"]: v for v in b["values"]}
    assert values["fixed"]["mean"] == pytest.approx(0.55)
    assert values["heading"]["mean"] == pytest.approx(0.75)
    # per question: ((f128 - h128) + (f256 - h256)) / 2 -> q5: (0-1 + 1-1)/2, q6: -1, q7: -0.5
    assert values["fixed"]["diff"] == pytest.approx(-0.2)
    assert values["fixed"]["n_questions"] == 10
    assert values["fixed"]["lo"] <= -0.2 <= values["fixed"]["hi"]
    assert values["heading"]["diff"] == 0 and values["heading"]["p"] is None
    s = effects["chunk.size"]
    # 128 and 256 both average 0.65: the first in order is kept; 128 wins in 1 of 2 cells.
    assert s["best"] == 128 and s["best_in_cells"] == 1
    assert {v["value"]: v["mean"] for v in s["values"]} == pytest.approx({128: 0.65, 256: 0.65})
    assert s["values"][1]["diff"] == pytest.approx(0.0) and s["values"][1]["within_noise"]
    assert s["text"].startswith("chunk.size: best 128 (m 0.650, over 2 combinations of the "
                                "others; best in 1 of 2); 256 +0.000")


def test_axis_effect_within_noise_or_not():
    rng = np.random.default_rng(1)
    n = 200
    base = (rng.random(n) < 0.5).astype(float)
    per_q = {}
    for size in (128, 256):
        per_q[("heading", size)] = np.maximum(base, rng.random(n) < 0.4)  # finds more
        per_q[("fixed", size)] = np.where(rng.random(n) < 0.05, 1 - base, base)
    rows = [{"chunk.boundary": b, "chunk.size": s, "m": float(v.mean())}
            for (b, s), v in per_q.items()]
    scores = [_scores(v) for v in per_q.values()]
    effects = {e["axis"]: e for e in ax.axis_effects(rows, AXES, "m", scores, n=2000)}
    fixed = next(v for v in effects["chunk.boundary"]["values"] if v["value"] == "fixed")
    assert not fixed["within_noise"] and fixed["hi"] < 0 and fixed["p_adj"] < 0.05
    other_size = next(v for v in effects["chunk.size"]["values"]
                      if v["value"] != effects["chunk.size"]["best"])
    assert other_size["within_noise"] and other_size["lo"] <= 0 <= other_size["hi"]
    assert "worse" in effects["chunk.boundary"]["text"]


def test_incomplete_grid_and_means_only():
    rows = _rows(TABLE)[:3]  # (heading, 256) missing: only size=128 has both boundaries
    effects = {e["axis"]: e for e in ax.axis_effects(rows, AXES, "m")}
    assert effects["chunk.boundary"]["n_cells"] == 1
    assert effects["chunk.boundary"]["values"][0]["lo"] is None  # no per-question scores
    assert effects["chunk.size"]["n_cells"] == 1  # only fixed has both sizes
    lonely = [{"chunk.boundary": "fixed", "chunk.size": 128, "m": 0.5},
              {"chunk.boundary": "heading", "chunk.size": 256, "m": 0.6}]
    e = {e["axis"]: e for e in ax.axis_effects(lonely, AXES, "m")}
    assert e["chunk.boundary"]["note"].startswith("no combination of the other axes")
    # A row without the metric (a failed job) is left out; one value left: no entry.
    assert ax.axis_effects([{"a": 1, "m": 0.5}, {"a": 2, "m": None}], ["a"], "m") == []


def test_pareto_front_by_hand():
    rows = [{"c": 100, "m": 0.5}, {"c": 200, "m": 0.7}, {"c": 150, "m": 0.4},
            {"c": 300, "m": 0.7}, {"c": 250, "m": 0.9}, {"c": 100, "m": 0.5},
            {"c": None, "m": 1.0}]
    assert ax.pareto_front(rows, "m", "c") == [0, 1, 4]
    # Lower is better on the metric too (e.g. a miss count): the cheapest lowest.
    assert ax.pareto_front(rows, "m", "c", lower_is_better=True) == [0, 2]
    # Costs within 1% are one cost: a latency 0.01 ms lower buys no place on the front.
    near = [{"c": 2392.630, "m": 0.6}, {"c": 2392.631, "m": 0.9}, {"c": 2392.629, "m": 0.7}]
    assert ax.pareto_front(near, "m", "c") == [1]
    assert ax.pareto_front(near, "m", "c", tolerance=0) == [2, 1]


def test_pareto_steps_are_tested():
    rng = np.random.default_rng(3)
    n = 150
    cheap = (rng.random(n) < 0.5).astype(float)
    same = cheap.copy()
    same[np.flatnonzero(cheap == 0)[:3]] = 1.0  # costs more for 3 questions of 150: noise
    much = np.maximum(cheap, rng.random(n) < 0.5)  # costs more again, clearly better
    vecs = [cheap, same, much]
    rows = [{"tok": t, "m": float(v.mean())} for t, v in zip((100, 200, 400), vecs, strict=True)]
    [front] = ax.pareto_fronts(rows, "m", ["tok", "absent"], [_scores(v) for v in vecs], n=2000)
    assert front["cost"] == "tok" and [p["index"] for p in front["points"]] == [0, 1, 2]
    first, step, jump = front["points"]
    assert first["gain"] is None
    assert step["gain"] == pytest.approx(rows[1]["m"] - rows[0]["m"]) and step["within_noise"]
    assert not jump["within_noise"]
    lines = ax.front_text(front, rows, [], "m")
    assert lines[0] == "Pareto front of m against tok (cheapest first):"
    assert "within noise" in lines[2] and "distinguishable" in lines[3]


def test_shared_resamples_give_what_each_bootstrap_gives_alone():
    from sweep.decide.stats import Resamples

    rng = np.random.default_rng(8)
    per_q = {k: (rng.random(90) < p).astype(float)
             for k, p in zip(TABLE, (0.4, 0.5, 0.6, 0.55), strict=True)}
    rows = [{"chunk.boundary": b, "chunk.size": s, "m": float(v.mean()), "tok": 100.0 * i}
            for i, ((b, s), v) in enumerate(per_q.items())]
    scores = [_scores(v) for v in per_q.values()]
    res = Resamples(scores, n=1000)
    alone = ax.axis_effects(rows, AXES, "m", scores, n=1000)
    shared = ax.axis_effects(rows, AXES, "m", scores, n=1000, resamples=res)
    def flat(effects):
        return [x for e in effects for v in e["values"] if v["p"] is not None
                for x in (v["diff"], v["lo"], v["hi"], v["p"])]

    assert len(flat(alone)) == 8 and flat(alone) == pytest.approx(flat(shared))
    f1 = ax.pareto_fronts(rows, "m", ["tok"], scores, n=1000)
    f2 = ax.pareto_fronts(rows, "m", ["tok"], scores, n=1000, resamples=res)
    steps = [[x for p in f[0]["points"][1:] for x in (p["lo"], p["hi"], p["p"])] for f in (f1, f2)]
    assert steps[0] and steps[0] == pytest.approx(steps[1])
    # A question one configuration did not score: the resamples do not cover that pair.
    del scores[1]["q0"]
    assert not Resamples(scores, n=10).covers([0, 2], sorted(scores[0]))
