"""Hand-computed values for the pure metric functions in `sweep.evaluation.metrics`."""

from __future__ import annotations

import math

import pytest

from sweep.evaluation import metrics as m

SEED_RANKED = ["policy-shipping#1", "policy-refunds#3", "terms#7", "policy-refunds#4", "faq#2"]
SEED_RELEVANT = {"policy-refunds#3"}


# --------------------------------------------------------------------------- the seed example


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (2, 1.0), (3, 1.0), (5, 1.0), (50, 1.0)])
def test_seed_recall_at_k(k: int, expected: float) -> None:
    assert m.recall_at_k(SEED_RANKED, SEED_RELEVANT, k) == expected


def test_seed_reciprocal_rank_and_first_rank() -> None:
    assert m.reciprocal_rank(SEED_RANKED, SEED_RELEVANT) == 0.5
    assert m.first_relevant_rank(SEED_RANKED, SEED_RELEVANT) == 2


@pytest.mark.parametrize(("k", "expected"), [(1, 0), (2, 1), (3, 1), (5, 1)])
def test_seed_hit_at_k(k: int, expected: int) -> None:
    assert m.hit_at_k(SEED_RANKED, SEED_RELEVANT, k) == expected


def test_seed_mrr_over_three_questions() -> None:
    rrs = [
        m.reciprocal_rank(["a", "b"], {"a"}),  # 1.0
        m.reciprocal_rank(["a", "b"], {"b"}),  # 0.5
        m.reciprocal_rank(["a", "b"], {"z"}),  # 0.0: not retrieved
    ]
    assert rrs == [1.0, 0.5, 0.0]
    assert m.mrr(rrs) == 0.5


def test_reciprocal_rank_depth_is_the_cutoff() -> None:
    assert m.reciprocal_rank(["a", "b", "c"], {"c"}) == pytest.approx(1 / 3, abs=1e-15)
    assert m.reciprocal_rank(["a", "b"], {"c"}) == 0.0
    assert m.first_relevant_rank(["a", "b"], {"c"}) is None
    assert m.reciprocal_rank([], {"c"}) == 0.0


# --------------------------------------------------------------------------- recall / hit


def test_recall_two_relevant_one_in_top_k() -> None:
    ranked = ["a", "b", "c", "d"]
    assert m.recall_at_k(ranked, {"b", "d"}, 2) == 0.5
    assert m.recall_at_k(ranked, {"b", "d"}, 4) == 1.0
    assert m.recall_at_k(ranked, {"b", "z"}, 4) == 0.5  # z is never retrieved
    assert m.recall_at_k(ranked, frozenset({"a", "b", "c"}), 1) == pytest.approx(1 / 3)


def test_recall_k_larger_than_ranking() -> None:
    assert m.recall_at_k(["a"], {"a", "b"}, 10) == 0.5
    assert m.hit_at_k(["a"], {"a", "b"}, 10) == 1.0
    assert m.hit_at_k([], {"a"}, 10) == 0.0


@pytest.mark.parametrize(
    "fn",
    [
        lambda rel: m.recall_at_k(["a"], rel, 1),
        lambda rel: m.hit_at_k(["a"], rel, 1),
        lambda rel: m.reciprocal_rank(["a"], rel),
        lambda rel: m.ndcg_at_k(["a"], dict.fromkeys(rel, 1.0), 1),
    ],
    ids=["recall", "hit", "rr", "ndcg"],
)
def test_empty_relevant_set_raises(fn) -> None:
    with pytest.raises(ValueError):
        fn(set())


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_raises(k: int) -> None:
    with pytest.raises(ValueError):
        m.recall_at_k(["a"], {"a"}, k)
    with pytest.raises(ValueError):
        m.hit_at_k(["a"], {"a"}, k)
    with pytest.raises(ValueError):
        m.ndcg_at_k(["a"], {"a": 1.0}, k)
    with pytest.raises(ValueError):
        m.evidence_recall_at_k([("d", 0, 5)], [("d", 0, 5)], k)
    with pytest.raises(ValueError):
        m.context_tokens_at_k([3, 4], k)


def test_mean_of_nothing_is_nan() -> None:
    assert math.isnan(m.mean([]))
    assert math.isnan(m.mrr([]))
    assert math.isnan(m.mean(iter(())))


def test_mean_values() -> None:
    assert m.mean([1.0, 0.0, 0.5]) == 0.5
    assert m.mean(iter([0.1] * 10)) == pytest.approx(0.1, abs=1e-15)


# --------------------------------------------------------------------------- nDCG


def test_ndcg_binary_hand_computed() -> None:
    # ranked [a, b, c], relevant {b, c}, k=3
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3)
    got = m.ndcg_at_k(["a", "b", "c"], {"b": 1.0, "c": 1.0}, 3)
    assert got == pytest.approx(dcg / idcg, abs=1e-12)
    assert got == pytest.approx(0.6934264036172708, abs=1e-12)


def test_ndcg_binary_cut_at_k() -> None:
    # k=2: DCG = 1/log2(3); IDCG over the two best possible positions = 1 + 1/log2(3)
    got = m.ndcg_at_k(["a", "b", "c"], {"b": 1.0, "c": 1.0}, 2)
    assert got == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)), abs=1e-12)
    # k=1: the only slot holds a non-relevant id
    assert m.ndcg_at_k(["a", "b", "c"], {"b": 1.0, "c": 1.0}, 1) == 0.0


def test_ndcg_perfect_and_relevant_not_retrieved() -> None:
    assert m.ndcg_at_k(["b", "c", "a"], {"b": 1.0, "c": 1.0}, 3) == pytest.approx(1.0, abs=1e-12)
    # a relevant id that is never retrieved still counts in the ideal DCG
    got = m.ndcg_at_k(["b", "x"], {"b": 1.0, "z": 1.0}, 2)
    assert got == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-12)


def test_ndcg_graded_gains_linear() -> None:
    gains = {"a": 3.0, "b": 2.0, "c": 1.0, "n": 0.0}
    ranked = ["c", "n", "a", "b"]
    dcg = 1 / math.log2(2) + 0 / math.log2(3) + 3 / math.log2(4) + 2 / math.log2(5)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert m.ndcg_at_k(ranked, gains, 4) == pytest.approx(dcg / idcg, abs=1e-12)
    # k=2: ideal keeps only the two largest gains
    dcg2 = 1.0
    idcg2 = 3 + 2 / math.log2(3)
    assert m.ndcg_at_k(ranked, gains, 2) == pytest.approx(dcg2 / idcg2, abs=1e-12)


def test_ndcg_all_zero_gains_raises() -> None:
    with pytest.raises(ValueError):
        m.ndcg_at_k(["a"], {"a": 0.0}, 3)


# --------------------------------------------------------------------------- spans


def test_merge_spans() -> None:
    spans = [("d", 5, 10), ("d", 0, 3), ("d", 8, 12), ("e", 0, 2), ("d", 12, 14), ("d", 4, 4)]
    # overlapping and touching spans merge per document; empty spans vanish
    assert m.merge_spans(spans) == [("d", 0, 3), ("d", 5, 14), ("e", 0, 2)]
    assert m.merge_spans([]) == []
    assert m.merge_spans([("a", 0, 10), ("a", 2, 3)]) == [("a", 0, 10)]
    # the same offsets in two documents never merge
    assert m.merge_spans([("a", 0, 5), ("b", 3, 8)]) == [("a", 0, 5), ("b", 3, 8)]


def test_evidence_recall_partial_coverage_is_exact_fraction() -> None:
    evidence = [("d", 10, 20)]  # 10 characters
    ranked = [("d", 0, 13), ("d", 50, 60), ("d", 18, 30)]
    assert m.evidence_recall_at_k(ranked, evidence, 1) == pytest.approx(0.3, abs=1e-15)
    assert m.evidence_recall_at_k(ranked, evidence, 2) == pytest.approx(0.3, abs=1e-15)
    # 10..13 and 18..20 covered
    assert m.evidence_recall_at_k(ranked, evidence, 3) == pytest.approx(0.5, abs=1e-15)


def test_evidence_recall_overlapping_context_counted_once() -> None:
    evidence = [("d", 0, 10)]
    ranked = [("d", 0, 6), ("d", 2, 6), ("d", 4, 8)]  # union covers 0..8
    assert m.evidence_recall_at_k(ranked, evidence, 3) == pytest.approx(0.8, abs=1e-15)
    # overlapping evidence spans are counted once too (union 0..10 -> 10 chars)
    evidence2 = [("d", 0, 6), ("d", 4, 10)]
    assert m.evidence_recall_at_k(ranked, evidence2, 3) == pytest.approx(0.8, abs=1e-15)


def test_evidence_recall_two_documents() -> None:
    evidence = [("a", 0, 4), ("b", 10, 16)]  # 4 + 6 = 10 characters
    ranked = [("b", 0, 13), ("c", 0, 100), ("a", 0, 100)]
    assert m.evidence_recall_at_k(ranked, evidence, 1) == pytest.approx(0.3, abs=1e-15)
    assert m.evidence_recall_at_k(ranked, evidence, 2) == pytest.approx(0.3, abs=1e-15)
    assert m.evidence_recall_at_k(ranked, evidence, 3) == pytest.approx(0.7, abs=1e-15)
    # same offsets in the wrong document cover nothing
    assert m.evidence_recall_at_k([("c", 0, 100)], evidence, 1) == 0.0


def test_covered_chars() -> None:
    assert m.covered_chars([("d", 0, 10)], [("d", 5, 7), ("d", 6, 9)]) == (4, 10)
    assert m.covered_chars([("d", 0, 10)], []) == (0, 10)


def test_evidence_recall_empty_evidence_raises() -> None:
    with pytest.raises(ValueError):
        m.evidence_recall_at_k([("d", 0, 5)], [], 1)
    with pytest.raises(ValueError):
        m.evidence_recall_at_budget([("d", 0, 5)], [3], [], 10)


def test_context_tokens_at_k() -> None:
    assert m.context_tokens_at_k([5, 7, 11], 1) == 5
    assert m.context_tokens_at_k([5, 7, 11], 2) == 12
    assert m.context_tokens_at_k([5, 7, 11], 10) == 23
    assert isinstance(m.context_tokens_at_k([5, 7], 2), int)


def test_take_within_budget_stops_at_first_chunk_that_does_not_fit() -> None:
    # 4 + 5 = 9 fits in 10; 8 does not; the later 1 would fit but is not taken
    assert m.take_within_budget([4, 5, 8, 1], 10) == 2
    assert m.take_within_budget([4, 6], 10) == 2  # exactly the budget fits
    assert m.take_within_budget([11, 1], 10) == 0
    assert m.take_within_budget([], 10) == 0
    assert m.take_within_budget([1, 2, 3], 100) == 3


def test_evidence_recall_at_budget() -> None:
    evidence = [("d", 0, 10), ("d", 20, 30)]  # 20 characters
    spans = [("d", 0, 10), ("d", 100, 200), ("d", 20, 30)]
    tokens = [3, 50, 3]
    # budget 10: only the first chunk (the second does not fit, so the third is not taken)
    assert m.evidence_recall_at_budget(spans, tokens, evidence, 10) == pytest.approx(0.5)
    assert m.evidence_recall_at_budget(spans, tokens, evidence, 56) == pytest.approx(1.0)
    assert m.evidence_recall_at_budget(spans, tokens, evidence, 55) == pytest.approx(0.5)
    # nothing fits: 0.0, not an error
    assert m.evidence_recall_at_budget(spans, tokens, evidence, 2) == 0.0


def test_collapse_to_docs_keeps_best_rank() -> None:
    assert m.collapse_to_docs(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert m.collapse_to_docs([]) == []
    docs = m.collapse_to_docs(["faq", "policy", "faq"])
    assert m.reciprocal_rank(docs, {"policy"}) == 0.5
