"""Equal scores are ordered by (document, chunk ordinal as a number), not by the chunk-id
string: doc#2 comes before doc#10 (issue 14, item 20)."""

from __future__ import annotations

import numpy as np

from sweep.retrieval.ranking import rerank, rrf_fuse, tiebreak_order, top_k


def test_ordinals_compare_as_numbers() -> None:
    ids = ["doc#10", "doc#2", "doc#1", "a#11", "a#9"]
    # (a, 9) < (a, 11) < (doc, 1) < (doc, 2) < (doc, 10)
    assert tiebreak_order(ids).tolist() == [4, 3, 2, 1, 0]


def test_equal_scores_rank_in_document_order() -> None:
    ids = [f"doc#{i}" for i in range(12)]
    ranking = top_k(np.zeros(12), tiebreak_order(ids), 4)
    assert [ids[i] for i in ranking.indices] == ["doc#0", "doc#1", "doc#2", "doc#3"]


def test_order_independent_of_input_order() -> None:
    rng = np.random.default_rng(1)
    ids = [f"d{d}#{o}" for d in range(3) for o in range(15)]
    scores = rng.integers(0, 3, size=len(ids)).astype(np.float64)
    expected = sorted(ids, key=lambda c: (-scores[ids.index(c)], c.split("#")[0],
                                          int(c.split("#")[1])))[:20]
    for _ in range(3):
        perm = rng.permutation(len(ids))
        pids = [ids[i] for i in perm]
        got = top_k(scores[perm], tiebreak_order(pids), 20)
        assert [pids[i] for i in got.indices] == expected


def test_fusion_and_rerank_use_the_same_order() -> None:
    ids = ["x#10", "x#2", "x#1"]
    tb = tiebreak_order(ids)
    # each chunk first in one list: equal fused scores
    fused = rrf_fuse([[0], [1], [2]], [1.0, 1.0, 1.0], 60, tb, 3)
    assert [ids[i] for i in fused.indices] == ["x#1", "x#2", "x#10"]
    reranked = rerank(fused, [0.5, 0.5, 0.5], tb)
    assert [ids[i] for i in reranked.indices] == ["x#1", "x#2", "x#10"]


def test_ids_without_an_ordinal_still_sort() -> None:
    assert tiebreak_order(["c", "a", "b#1", "b"]).tolist() == [3, 0, 2, 1]
