"""`metrics.TopKSpans`, `metrics.TopKRanks` and `metrics.TopKPassages` (every k in one pass)
equal the per-metric reference functions.

The fast paths add up the same integers (evidence characters covered, characters read,
relevant ids found) that `covered_chars`, `spans_length` and `recall_at_k` count for each
prefix and divide them once, or `math.fsum` the same DCG terms, as the reference functions do,
so the values must be EQUAL (==), not approximately equal. Checked on hand-made cases, on
randomized cases (overlapping and repeated chunks, empty spans, evidence in several documents,
chroma placement, k beyond the ranking) and through `evaluate`."""

from __future__ import annotations

import math
import random

import pytest

from helpers import check_rows_against_reference
from sweep.chunking.chunkers import Chunk
from sweep.data.golden import GoldenItem
from sweep.evaluation import metrics as m
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.placement import placed_spans
from sweep.evaluation.relevance import ResolvedItem
from sweep.retrieval.ranking import Ranking

Span = tuple[str, int, int]


def assert_equal_to_reference(ranked: list[Span], evidence: list[Span], tokens: list[int],
                              ks: range, budgets: tuple[int, ...]) -> None:
    top = m.TopKSpans(ranked, evidence, max(ks))
    for k in ks:
        assert top.evidence_recall(k) == m.evidence_recall_at_k(ranked, evidence, k), k
        assert top.span_precision(k) == m.span_precision_at_k(ranked, evidence, k), k
        assert top.span_iou(k) == m.span_iou_at_k(ranked, evidence, k), k
        covered, total = m.covered_chars(evidence, ranked[:k])
        assert (top.covered[min(k, len(ranked))], top.total) == (covered, total)
        assert top.read[min(k, len(ranked))] == m.spans_length(ranked[:k])
    full = m.TopKSpans(ranked, evidence, len(ranked))
    for budget in budgets:
        assert full.evidence_recall_at_budget(tokens, budget) == \
            m.evidence_recall_at_budget(ranked, tokens, evidence, budget), budget


def test_hand_made_prefixes() -> None:
    evidence = [("d", 10, 20), ("d", 15, 25), ("e", 0, 4)]  # merged: d 10..25 (15) + e 0..4
    ranked = [("d", 0, 15), ("d", 5, 15), ("e", 2, 10), ("d", 20, 40), ("x", 0, 9)]
    top = m.TopKSpans(ranked, evidence, 10)
    assert top.total == 19
    # chunk 2 repeats evidence 10..15 (adds nothing); chunk 3 adds e 2..4; chunk 4 d 20..25
    assert top.covered == [0, 5, 5, 7, 12, 12]
    assert top.read == [0, 15, 25, 33, 53, 62]
    assert top.span_iou(4) == 12 / (53 + 19 - 12)
    assert top.evidence_recall(99) == 12 / 19  # beyond the ranking: the whole ranking
    assert_equal_to_reference(ranked, evidence, [3, 3, 3, 3, 3], range(1, 12), (0, 5, 9, 100))


def test_errors_match_the_reference() -> None:
    with pytest.raises(ValueError, match="empty evidence"):
        m.TopKSpans([("d", 0, 5)], [("d", 3, 3)], 3)
    top = m.TopKSpans([("d", 0, 5)] * 4, [("d", 0, 2)], 2)
    with pytest.raises(ValueError, match="k must be >= 1"):
        top.evidence_recall(0)
    with pytest.raises(ValueError, match="beyond the computed depth"):
        top.span_iou(3)  # 4 ranked spans, only 2 computed: k=3 is not known
    with pytest.raises(ValueError, match="beyond the computed depth"):
        top.evidence_recall_at_budget([1, 1, 1, 1], 3)  # three chunks fit
    assert m.TopKSpans([], [("d", 0, 2)], 5).span_precision(5) == 0.0  # nothing read


def _random_case(rng: random.Random) -> tuple[list[Span], list[Span], list[int]]:
    docs = [f"doc{i}" for i in range(rng.randint(1, 3))]
    pool: list[Span] = []
    for doc_id in docs:
        pos = 0
        size, overlap = rng.randint(3, 40), rng.choice([0, 0, 1, 5, 20])
        while pos < 300:  # a fixed chunker with overlap, then a few odd chunks
            pool.append((doc_id, pos, pos + size))
            pos += max(1, size - min(overlap, size - 1))
        pool += [(doc_id, a, a + rng.randint(0, 60)) for a in rng.sample(range(300), 3)]
    pool += rng.sample(pool, min(len(pool), 3))  # repeated chunks
    ranked = rng.sample(pool, rng.randint(0, min(len(pool), 25)))
    evidence = []
    for _ in range(rng.randint(1, 4)):
        a = rng.randint(0, 320)
        evidence.append((rng.choice(docs), a, a + rng.choice([0, 1, rng.randint(2, 80)])))
    if not any(e > s for _, s, e in evidence):
        evidence.append((docs[0], 7, 30))
    tokens = [rng.randint(1, 200) for _ in ranked]
    return ranked, evidence, tokens


@pytest.mark.parametrize("seed", range(40))
def test_random_spans_equal_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        ranked, evidence, tokens = _random_case(rng)
        assert_equal_to_reference(ranked, evidence, tokens, range(1, len(ranked) + 6),
                                  (0, 1, 50, 300, 1024, 10**6))


def test_hand_made_ranks() -> None:
    ranks = m.TopKRanks(["a", "x", "b", "a", "y"], {"a", "b", "c"}, 10)
    assert ranks.found == [0, 1, 1, 2, 2, 2]  # the repeated "a" is found once
    assert ranks.recall(3) == 2 / 3 and ranks.hit(1) == 1.0
    # DCG counts the repeat (as ndcg_at_k does): 1 + 1/log2(4) + 1/log2(5)
    assert ranks.ndcg(4) == math.fsum([1.0, 1 / math.log2(4), 1 / math.log2(5)]) / math.fsum(
        [1.0, 1 / math.log2(3), 1 / math.log2(4)])
    assert m.TopKRanks(["x", "y"], {"a"}, 1).hit(1) == 0.0
    with pytest.raises(ValueError, match="beyond the computed depth"):
        m.TopKRanks(["x", "y"], {"a"}, 1).recall(2)
    with pytest.raises(ValueError, match="no relevant ids"):
        m.TopKRanks(["x"], set(), 1)


@pytest.mark.parametrize("seed", range(20))
def test_random_ranks_equal_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(30)]
    for _ in range(50):
        ranked = [rng.choice(ids) for _ in range(rng.randint(0, 25))]  # repeats included
        relevant = set(rng.sample(ids, rng.randint(1, 8)))
        ranks = m.TopKRanks(ranked, relevant, len(ranked) + 6)
        for k in range(1, len(ranked) + 7):
            assert ranks.recall(k) == m.recall_at_k(ranked, relevant, k)
            assert ranks.hit(k) == m.hit_at_k(ranked, relevant, k)
            assert ranks.ndcg(k) == m.ndcg_at_k(ranked, dict.fromkeys(relevant, 1.0), k)


def test_hand_made_passages() -> None:
    # passage 0 first at rank 2 ("b"), passage 1 never, passage 2 at rank 4 ("d", "a" repeated)
    ranked = ["x", "b", "a", "d", "a"]
    found = m.TopKPassages(ranked, [{"a", "b"}, {"z"}, {"d", "y"}], "all", 10)
    assert sorted(found.first) == [2, 4]
    assert [found.found(k) for k in range(1, 7)] == [0, 1, 1, 2, 2, 2]
    assert found.full_recall(10) == 0.0  # passage 1 is never found
    alternatives = m.TopKPassages(ranked, [{"z"}, {"d"}], "any", 10)
    assert [alternatives.found(k) for k in (3, 4)] == [0, 1]
    assert alternatives.full_recall(4) == 1.0
    with pytest.raises(ValueError, match="beyond the computed depth"):
        m.TopKPassages(ranked, [{"a"}], "all", 2).found(3)
    with pytest.raises(ValueError, match="k must be >= 1"):
        found.found(0)
    with pytest.raises(ValueError, match="no passage has a relevant id"):
        m.TopKPassages(ranked, [set(), set()], "all", 3)
    with pytest.raises(ValueError, match="needs must be"):
        m.TopKPassages(ranked, [{"a"}], "most", 3)


@pytest.mark.parametrize("seed", range(20))
def test_random_passages_equal_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    ids = [f"c{i}" for i in range(30)]
    for _ in range(50):
        ranked = [rng.choice(ids) for _ in range(rng.randint(0, 25))]  # repeats included
        passages = [set(rng.sample(ids, rng.randint(0, 4))) for _ in range(rng.randint(1, 4))]
        if not any(passages):
            passages.append({rng.choice(ids)})
        needs = rng.choice(["all", "any"])
        depth = rng.randint(1, len(ranked) + 6)
        found = m.TopKPassages(ranked, passages, needs, depth)
        known = range(1, len(ranked) + 7) if depth >= len(ranked) else range(1, depth + 1)
        for k in known:
            assert found.found(k) == m.passages_found_at_k(ranked, passages, k, needs)
            assert found.full_recall(k) == m.full_recall_at_k(ranked, passages, k, needs)


def _chunk(i: int, doc_id: str, text: str, a: int, b: int) -> Chunk:
    return Chunk(f"{doc_id}#{i}", doc_id, i, a, b, text[a:b], text[a:b], b - a)


@pytest.mark.parametrize("mode", ["exact", "chroma"])
@pytest.mark.parametrize("seed", range(6))
def test_evaluate_equals_the_reference_functions(mode: str, seed: int) -> None:
    """Through `evaluate`: every rank and span metric of every row as the reference functions give it
    on the same placed spans (chroma mode moves chunks to the first copy of a passage)."""
    rng = random.Random(seed)
    words = ["alpha.", "beta", "gamma.", "delta", "eps."]
    texts = {d: " ".join(rng.choice(words) for _ in range(120)) for d in ("a", "b", "c")}
    chunks: list[Chunk] = []
    for doc_id, text in texts.items():
        size, step = rng.choice([(40, 40), (60, 45), (25, 10)])  # overlap 0, 15, 15
        for a in range(0, len(text), step):
            chunks.append(_chunk(len(chunks), doc_id, text, a, min(len(text), a + size)))
    spans = placed_spans(chunks, mode, texts)
    resolved, rankings = [], []
    for q in range(30):
        ev = []
        for _ in range(rng.randint(1, 3)):
            doc_id = rng.choice("abc")
            a = rng.randint(0, len(texts[doc_id]) - 30)
            ev.append((doc_id, a, a + rng.randint(1, 120)))
        ev = [(d, a, min(b, len(texts[d]))) for d, a, b in ev]
        item = GoldenItem(qid=f"q{q}", question=f"question {q}")
        resolved.append(ResolvedItem(item, tuple(ev), frozenset(d for d, _, _ in ev), "evidence"))
        order = rng.sample(range(len(chunks)), rng.randint(1, 30))
        rankings.append(Ranking(tuple(order), tuple(-i / 10 for i in range(len(order)))))
    spec = EvalSpec(k=(1, 3, 5, 10, 40), prompt_k=5, token_budget=200, min_overlap=0.3,
                    span_mode=mode)
    _, rows = evaluate(resolved, chunks, rankings, spec, texts=texts)
    assert check_rows_against_reference(rows, resolved, chunks, rankings, spans, spec) > 20


@pytest.mark.parametrize("seed", range(10))
def test_the_chunks_touching_the_evidence_are_those_touching_spans_gives(seed: int) -> None:
    """`evaluate`'s pre-filter of the chunks touching the evidence (a bisection over ordered
    bounds, a comparison over others) keeps every chunk `touching_spans` keeps, open and
    closed intervals alike, in chunk order."""
    from sweep.evaluation.evaluate import _Placed

    rng = random.Random(seed)
    for _ in range(20):
        ranked, evidence, _ = _random_case(rng)
        pool = sorted(set(ranked)) if rng.random() < 0.5 else ranked  # ordered or shuffled
        for d, a, b in rng.sample(pool, min(3, len(pool))):  # evidence at a chunk's edges
            evidence += [(d, b - 1, b + 3), (d, a - 3, a + 1), (d, b, b + 2), (d, a - 2, a)]
        chunks = [Chunk(f"{d}#{i}", d, i, a, b, "", "", 1) for i, (d, a, b) in enumerate(pool)]
        for mode in ("exact", "chroma"):
            placed = _Placed(chunks, "exact", None)
            placed.closed = mode == "chroma"  # chroma's interval test on the same spans
            assert placed.touching(evidence) == m.touching_spans(pool, evidence, placed.closed)
