"""The abstention measure on hand-made scores."""

from __future__ import annotations

import math

import pytest

from sweep.evaluation.abstention import auroc, separation, threshold_keeping


def test_auroc_by_hand() -> None:
    # pairs (p, n): 0.9 beats 0.2, 0.5; 0.5 ties 0.5, beats 0.2; 0.1 loses both -> 3.5 / 6
    assert auroc([0.9, 0.5, 0.1], [0.2, 0.5]) == pytest.approx(3.5 / 6)
    assert auroc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert auroc([0.1], [0.9]) == 0.0
    assert math.isnan(auroc([], [0.1]))


def test_threshold_keeps_95_percent() -> None:
    scores = [float(i) for i in range(1, 21)]  # 20 scores: one may fall below -> t = 2
    assert threshold_keeping(scores) == 2.0
    assert threshold_keeping(scores[:10]) == 1.0  # 10 scores: 5 % of 10 is 0.5 -> none drop
    assert sum(s >= threshold_keeping(scores) for s in scores) / 20 >= 0.95


def test_separation_by_hand() -> None:
    answerable = [float(i) for i in range(1, 21)]
    got = separation(answerable, [0.5, 1.5, 2.5, 30.0])
    # below t = 2: 0.5 and 1.5 -> 2 of 4 caught
    assert got["abstention_caught_at_95"] == 0.5
    assert got["abstention_threshold_at_95"] == 2.0
    assert got["abstention_n"] == 4.0
    assert got["abstention_top1_mean"] == pytest.approx(34.5 / 4)
    assert got["answerable_top1_mean"] == pytest.approx(10.5)
    # 0.5 below all 20; 1.5 below 19; 2.5 below 18; 30 below none -> (20+19+18+0) / 80
    assert got["abstention_auroc"] == pytest.approx(57 / 80)
    assert separation(answerable, []) == {} and separation([], [1.0]) == {}
