"""evaluate(): per-question rows and the summary on hand-made chunks and rankings, every value
worked out by hand."""

from __future__ import annotations

import math

import pytest

from sweep.chunking.chunkers import Chunk
from sweep.data.golden import GoldenItem
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.relevance import ResolvedItem
from sweep.retrieval.ranking import Ranking

# Hand-made chunks with gaps between them (as trimmed chunks have).
#   a#0 [0,10) 5 tok   a#1 [12,20) 6 tok   a#2 [22,30) 4 tok   b#0 [0,10) 3 tok   b#1 [10,20) 7 tok
CHUNKS = [
    Chunk("a#0", "a", 0, 0, 10, "", "", 5),
    Chunk("a#1", "a", 1, 12, 20, "", "", 6),
    Chunk("a#2", "a", 2, 22, 30, "", "", 4),
    Chunk("b#0", "b", 0, 0, 10, "", "", 3),
    Chunk("b#1", "b", 1, 10, 20, "", "", 7),
]
IDX = {c.chunk_id: i for i, c in enumerate(CHUNKS)}
SPEC = EvalSpec(k=(1, 3), prompt_k=2, token_budget=10, min_overlap=0.5)


def resolved(qid: str, spans=(), doc_ids=(), source="evidence") -> ResolvedItem:
    item = GoldenItem(qid=qid, question=f"question {qid}")
    docs = frozenset(doc_ids) | {s[0] for s in spans}
    return ResolvedItem(item, tuple(spans), frozenset(docs), source)


def ranking(*chunk_ids: str) -> Ranking:
    return Ranking(tuple(IDX[c] for c in chunk_ids), tuple(1.0 - 0.1 * i for i in range(len(chunk_ids))))


CASE = [
    # q1: evidence inside a#1; a#1 retrieved at rank 2
    (resolved("q1", [("a", 12, 18)]), ranking("b#0", "a#1", "a#0")),
    # q2: evidence = a#0 and b#1; only a#0 retrieved (rank 1)
    (resolved("q2", [("a", 0, 10), ("b", 10, 20)]), ranking("a#0", "a#2", "b#0")),
    # q3: evidence straddles the gap between a#1 and a#2; each holds 3 of 8 characters
    (resolved("q3", [("a", 17, 25)]), ranking("a#1", "a#2")),
    # q4: evidence that could not be placed anywhere
    (resolved("q4", source="none"), ranking("b#1")),
    # q5: only a document id
    (resolved("q5", doc_ids=["b"], source="doc_ids"), ranking("a#0", "b#1")),
]
NDCG_2_Q1 = 1 / math.log2(3)
NDCG_2_Q2 = 1 / (1 + 1 / math.log2(3))


@pytest.fixture(scope="module")
def result():
    items = [r for r, _ in CASE]
    rankings = [rk for _, rk in CASE]
    return evaluate(items, CHUNKS, rankings, SPEC)


def test_evaluate_rows_statuses(result) -> None:
    _, rows = result
    assert [r["qid"] for r in rows] == ["q1", "q2", "q3", "q4", "q5"]
    assert [r["status"] for r in rows] == ["scored", "scored", "orphan", "orphan", "doc_only"]
    assert [r["first_relevant_rank"] for r in rows] == [2, 1, None, None, None]
    assert rows[2]["orphan_reason"] == "no chunk of this configuration covers the evidence"
    assert rows[3]["orphan_reason"] == "evidence could not be placed in the corpus"
    assert [r["relevant_ids"] for r in rows] == ["a#1", "a#0 b#1", "", "", ""]
    assert rows[0]["retrieved_ids"] == "b#0 a#1 a#0"
    assert rows[0]["question"] == "question q1"
    assert [r["evidence_source"] for r in rows] == ["evidence"] * 3 + ["none", "doc_ids"]


def test_evaluate_row_values_q1(result) -> None:
    row = result[1][0]
    assert row["mrr"] == 0.5
    assert [row[f"recall_at_{k}"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]
    assert [row[f"hit_at_{k}"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]
    assert row["ndcg_at_1"] == 0.0
    assert row["ndcg_at_2"] == pytest.approx(NDCG_2_Q1, abs=1e-12)
    assert row["ndcg_at_3"] == pytest.approx(NDCG_2_Q1, abs=1e-12)
    assert [row[f"evidence_recall_at_{k}"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]
    assert [row[f"context_tokens_at_{k}"] for k in (1, 2, 3)] == [3, 9, 14]
    assert row["evidence_recall_at_budget"] == 1.0  # 3 + 6 tokens fit in 10
    assert row["evidence_coverage_at_prompt_k"] == row["evidence_recall_at_2"] == 1.0
    assert row["doc_mrr"] == 0.5
    assert [row[f"doc_recall_at_{k}"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]


def test_evaluate_row_values_q2(result) -> None:
    row = result[1][1]
    assert row["mrr"] == 1.0
    assert [row[f"recall_at_{k}"] for k in (1, 2, 3)] == [0.5, 0.5, 0.5]
    assert [row[f"hit_at_{k}"] for k in (1, 2, 3)] == [1.0, 1.0, 1.0]
    assert row["ndcg_at_1"] == 1.0
    assert row["ndcg_at_3"] == pytest.approx(NDCG_2_Q2, abs=1e-12)
    assert [row[f"evidence_recall_at_{k}"] for k in (1, 2, 3)] == [0.5, 0.5, 0.5]
    assert [row[f"context_tokens_at_{k}"] for k in (1, 2, 3)] == [5, 9, 12]
    assert row["evidence_recall_at_budget"] == 0.5
    assert row["doc_mrr"] == 1.0
    assert [row[f"doc_recall_at_{k}"] for k in (1, 2, 3)] == [0.5, 1.0, 1.0]


def test_evaluate_orphans_and_doc_only_rows_have_no_chunk_metrics(result) -> None:
    rows = result[1]
    for row in rows[2:]:
        assert "mrr" not in row
        assert not any(key.startswith(
            ("recall_at_", "hit_at_", "ndcg_at_", "evidence_recall", "evidence_coverage",
             "context_tokens"))
                       for key in row)
    # q3 names a document (through its evidence), so document metrics apply
    assert rows[2]["doc_mrr"] == 1.0
    # q4 names nothing
    assert "doc_mrr" not in rows[3]
    # q5: documents a, b in that order
    assert rows[4]["doc_mrr"] == 0.5
    assert [rows[4][f"doc_recall_at_{k}"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]


def test_evaluate_summary_averages_only_scored(result) -> None:
    summary, _ = result
    assert summary["n_questions"] == 5
    assert summary["n_scored"] == 2
    assert summary["n_doc_only"] == 1
    assert summary["n_orphans"] == 2
    approx = lambda v: pytest.approx(v, abs=1e-12)  # noqa: E731
    assert summary["mrr"] == approx(0.75)
    assert summary["recall_at_1"] == approx(0.25)
    assert summary["recall_at_2"] == approx(0.75)
    assert summary["recall_at_3"] == approx(0.75)
    assert summary["hit_at_1"] == approx(0.5)
    assert summary["hit_at_3"] == approx(1.0)
    assert summary["ndcg_at_1"] == approx(0.5)
    assert summary["ndcg_at_3"] == approx((NDCG_2_Q1 + NDCG_2_Q2) / 2)
    assert summary["evidence_recall_at_1"] == approx(0.25)
    assert summary["evidence_recall_at_2"] == approx(0.75)
    assert summary["context_tokens_at_1"] == approx(4.0)
    assert summary["context_tokens_at_3"] == approx(13.0)
    assert summary["evidence_recall_at_budget"] == approx(0.75)
    # document metrics: q1, q2, q3, q5 (q4 names no document)
    assert summary["doc_mrr"] == approx((0.5 + 1.0 + 1.0 + 0.5) / 4)
    assert summary["doc_recall_at_1"] == approx((0.0 + 0.5 + 1.0 + 0.0) / 4)
    assert summary["doc_recall_at_2"] == approx(1.0)
    # every k of the spec plus prompt_k, nothing else
    ks = {name.rsplit("_", 1)[1] for name in summary if name.startswith("recall_at_")}
    assert ks == {"1", "2", "3"}


def test_evaluate_all_orphans_gives_nan_not_zero() -> None:
    items = [resolved("q3", [("a", 17, 25)]), resolved("q4", source="none")]
    summary, _ = evaluate(items, CHUNKS, [ranking("a#1"), ranking("a#0")], SPEC)
    assert summary["n_orphans"] == 2 and summary["n_scored"] == 0
    assert "mrr" not in summary  # nothing to average: absent, never 0
    assert summary["doc_mrr"] == 1.0


def test_evaluate_rankings_must_match_items() -> None:
    with pytest.raises(ValueError):
        evaluate([CASE[0][0]], CHUNKS, [], SPEC)


def test_evaluate_relevant_chunk_never_retrieved() -> None:
    item = resolved("q", [("b", 10, 20)])
    summary, (row,) = evaluate([item], CHUNKS, [ranking("a#0", "a#1", "a#2")], SPEC)
    assert row["status"] == "scored"
    assert row["relevant_ids"] == "b#1"
    assert row["mrr"] == 0.0 and row["first_relevant_rank"] is None
    assert summary["recall_at_3"] == 0.0
    assert summary["evidence_recall_at_budget"] == 0.0
    assert row["context_tokens_at_3"] == 15


def _fresh(items, chunks, rankings, spec=SPEC):
    """`evaluate` with nothing prepared before it in this process."""
    from sweep.evaluation import evaluate as ev

    ev._PREPARED.clear()
    return evaluate(items, chunks, rankings, spec)


def test_chunks_alike_but_for_their_header_reuse_the_preparation() -> None:
    """A chunking that differs only in what is embedded (chunk.header: the embed text, the
    tokens) has the same spans, relevant chunks and touching chunks: the second job of such a
    pair takes the first's `_Prepared`, and scores its own ranking as a fresh process does."""
    from sweep.evaluation import evaluate as ev

    items = [r for r, _ in CASE]
    headed = [Chunk(c.chunk_id, c.doc_id, c.ordinal, c.start, c.end, c.text,
                    f"# {c.doc_id}\n{c.text}", c.n_tokens + 2) for c in CHUNKS]
    other = [ranking("a#1", "b#1", "a#0"), ranking("b#1", "a#0"), ranking("a#2"),
             ranking("b#0"), ranking("b#1", "a#0")]
    first = _fresh(items, CHUNKS, [rk for _, rk in CASE])
    prepared = ev._PREPARED[-1][2]
    second = evaluate(items, headed, other, SPEC)
    assert ev._PREPARED[-1][2] is prepared and len(ev._PREPARED) == 1
    assert second == _fresh(items, headed, other)
    # q1's relevant chunk a#1 is at rank 1 now, and the extra tokens count in the context
    assert second[1][0]["mrr"] == 1.0 and first[1][0]["mrr"] == 0.5
    assert second[1][0]["context_tokens_at_3"] == 8 + 9 + 7


def test_a_moved_chunk_or_another_overlap_is_prepared_anew() -> None:
    """The same chunk ids over other spans (or another min_overlap, or other questions) are a
    chunking of their own: nothing of the first is reused, and at most `PREPARED_KEPT` are
    kept."""
    from sweep.evaluation import evaluate as ev

    items = [r for r, _ in CASE]
    rankings = [rk for _, rk in CASE]
    _fresh(items, CHUNKS, rankings)
    # a#1 moved to [17,20): 1 of q1's (a 12..18) characters, under half of the shorter span
    moved = [Chunk(c.chunk_id, c.doc_id, c.ordinal, 17 if c.chunk_id == "a#1" else c.start,
                   c.end, c.text, c.embed_text, c.n_tokens) for c in CHUNKS]
    summary, rows = evaluate(items, moved, rankings, SPEC)
    assert rows[0]["status"] == "orphan" and (summary, rows) == _fresh(items, moved, rankings)
    loose = EvalSpec(k=(1, 3), prompt_k=2, token_budget=10, min_overlap=0.3)
    evaluate(items, CHUNKS, rankings, SPEC)
    _, rows = evaluate(items, CHUNKS, rankings, loose)
    # q3 (a 17..25): a#1 holds 3 of 8 characters, which is 3/8 of the shorter span >= 0.3
    assert rows[2]["status"] == "scored" and rows[2]["relevant_ids"] == "a#1 a#2"
    _, fewer = evaluate(items[:2], CHUNKS, rankings[:2], SPEC)
    assert fewer == _fresh(items[:2], CHUNKS, rankings[:2])[1]
    evaluate(items, moved, rankings, SPEC)
    evaluate(items, CHUNKS, rankings, loose)
    assert len(ev._PREPARED) == ev.PREPARED_KEPT
