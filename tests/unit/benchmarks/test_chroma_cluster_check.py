"""benchmarks/chroma_cluster_check.py: Chroma's cluster grouping, on matrices worked by hand."""

from __future__ import annotations

import sys

import numpy as np

from helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from chroma_cluster_check import chroma_segments, placed


def test_similar_neighbours_group_and_a_stranger_stands_alone() -> None:
    # mean of the upper triangle 0.4: M01 = 0.5, M02 = -0.3, M12 = -0.2 (diagonal zeroed).
    # dp[1] = 2 * 0.5 = 1.0 from the group (0, 1); dp[2] = dp[1] + 0 from (2, 2), since the
    # groups (1, 2) and (0, 2) score -0.4 and 0.0.
    sim = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]])
    assert chroma_segments(sim, 3) == [(0, 1), (2, 2)]


def test_a_zero_gain_start_is_one_group_even_past_the_piece_limit() -> None:
    # Two pieces: the mean is their similarity, so the pair scores exactly 0. dp starts at 0
    # and only a strictly better score moves segmentation[1] off 0, so Chroma's code returns
    # (0, 1), a group of 2 pieces even when at most 1 is allowed.
    sim = np.array([[1.0, 0.3], [0.3, 1.0]])
    assert chroma_segments(sim, 2) == [(0, 1)]
    assert chroma_segments(sim, 1) == [(0, 1)]


def test_placement_drops_one_trailing_full_stop_and_takes_the_first_copy() -> None:
    text = "Same line. Other. Same line. End"
    second = text.index("Same line.", 1)
    assert placed(text, second, second + len("Same line.")) == (0, len("Same line"))
