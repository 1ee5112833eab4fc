"""Deterministic ranking (`sweep.retrieval.ranking`): tie-breaking, top-k, dense search.

Per-question scoring: tests/unit/evaluation/test_evaluate.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sweep.retrieval.ranking import Ranking, dense_search, tiebreak_order, top_k

# --------------------------------------------------------------------------- tie-breaking


def test_tiebreak_order_is_rank_in_sorted_ids() -> None:
    ids = ["b#1", "a#10", "a#2", "a#1"]
    # (document, ordinal as a number): a#1 < a#2 < a#10 < b#1
    assert tiebreak_order(ids).tolist() == [3, 2, 1, 0]
    assert tiebreak_order([]).tolist() == []


def test_tiebreak_order_is_kept_read_only_and_recomputed_past_its_memo() -> None:
    from sweep.retrieval import ranking

    ids = [f"d{i % 7}#{i}" for i in range(50)]
    first = tiebreak_order(ids)
    assert tiebreak_order(list(ids)) is first  # the same ids: the kept array
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0] = 5
    for j in range(ranking.TIES_KEPT):  # pushed out by others: made again, equal
        tiebreak_order([f"x#{j}"])
    again = tiebreak_order(ids)
    assert again is not first and again.tolist() == first.tolist()
    by_hand = sorted(range(50), key=lambda i: (f"d{i % 7}", i))
    assert [by_hand.index(i) for i in range(50)] == again.tolist()


def test_top_k_ties_broken_by_chunk_id() -> None:
    ids = ["c", "x", "a", "b", "z"]
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1])
    tb = tiebreak_order(ids)
    full = top_k(scores, tb, 10)  # depth beyond n is clipped
    assert full.indices == (1, 2, 3, 0, 4)
    assert full.scores == (0.9, 0.5, 0.5, 0.5, 0.1)
    assert all(isinstance(s, float) for s in full.scores)
    assert all(isinstance(i, int) for i in full.indices)


@pytest.mark.parametrize(("depth", "expected"), [(1, (1,)), (2, (1, 2)), (3, (1, 2, 3)),
                                                 (4, (1, 2, 3, 0)), (5, (1, 2, 3, 0, 4))])
def test_top_k_depth_and_ties_at_the_cut(depth: int, expected: tuple[int, ...]) -> None:
    ids = ["c", "x", "a", "b", "z"]
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1])
    ranking = top_k(scores, tiebreak_order(ids), depth)
    assert ranking.indices == expected
    assert len(ranking.scores) == depth


def test_top_k_all_equal_scores_sorted_by_id() -> None:
    ids = [f"doc#{i}" for i in range(12)]
    ranking = top_k(np.zeros(12), tiebreak_order(ids), 4)
    # document order, then ordinal as a number (not the id string: doc#10 after doc#9)
    assert [ids[i] for i in ranking.indices] == ["doc#0", "doc#1", "doc#2", "doc#3"]


def test_top_k_is_independent_of_input_order() -> None:
    rng = np.random.default_rng(0)
    ids = [f"d{i:03d}" for i in range(200)]
    scores = rng.integers(0, 5, size=200).astype(np.float32)  # many ties
    ranking = top_k(scores, tiebreak_order(ids), 37)
    expected = sorted(range(200), key=lambda i: (-scores[i], ids[i]))[:37]
    assert list(ranking.indices) == expected
    perm = rng.permutation(200)
    shuffled = top_k(scores[perm], tiebreak_order([ids[i] for i in perm]), 37)
    assert [ids[perm[i]] for i in shuffled.indices] == [ids[i] for i in expected]


def test_top_k_empty_and_zero_depth() -> None:
    assert top_k(np.array([]), np.array([], dtype=np.int64), 5) == Ranking((), ())
    assert top_k(np.array([1.0, 2.0]), np.array([0, 1]), 0) == Ranking((), ())


def test_dense_search_on_unit_vectors() -> None:
    s = 1 / math.sqrt(2)
    chunk_vecs = np.array(
        [[1, 0, 0], [0, 1, 0], [s, s, 0], [-1, 0, 0], [0, 1, 0]], dtype=np.float32
    )
    ids = ["e1", "e2b", "diag", "neg", "e2a"]
    queries = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    tb = tiebreak_order(ids)
    rankings = dense_search(queries, chunk_vecs, tb, depth=3)
    assert len(rankings) == 3
    assert [ids[i] for i in rankings[0].indices] == ["e1", "diag", "e2a"]
    assert rankings[0].scores == pytest.approx((1.0, s, 0.0), abs=1e-6)
    # e2a and e2b are the same vector: tie broken by id
    assert [ids[i] for i in rankings[1].indices] == ["e2a", "e2b", "diag"]
    # orthogonal to everything: all zero, order by id
    assert [ids[i] for i in rankings[2].indices] == ["diag", "e1", "e2a"]
    # batching does not change anything
    assert dense_search(queries, chunk_vecs, tb, depth=3, batch=1) == rankings
    assert dense_search(queries, chunk_vecs, tb, depth=3, batch=2) == rankings
    deep = dense_search(queries[:1], chunk_vecs, tb, depth=100)[0]
    assert [ids[i] for i in deep.indices] == ["e1", "diag", "e2a", "e2b", "neg"]
    assert deep.scores[-1] == pytest.approx(-1.0, abs=1e-6)
