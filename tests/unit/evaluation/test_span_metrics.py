"""Span precision, span IoU and Precision_Ω (Chroma's metrics), on hand-computed cases."""

from __future__ import annotations

import pytest

from sweep.chunking.chunkers import Chunk
from sweep.evaluation import metrics as m
from sweep.evaluation.evaluate import EvalSpec, evaluate, metric_names
from sweep.evaluation.placement import chroma_span, placed_spans


def test_span_precision_counts_overlapping_chunks_twice() -> None:
    evidence = [("d", 10, 20)]
    ranked = [("d", 0, 15), ("d", 5, 15), ("e", 0, 10)]
    # covered: 10..15 = 5 characters, once although two chunks hold it
    assert m.span_precision_at_k(ranked, evidence, 1) == pytest.approx(5 / 15)
    assert m.span_precision_at_k(ranked, evidence, 2) == pytest.approx(5 / 25)
    # the other document's chunk costs its 10 characters and adds no evidence
    assert m.span_precision_at_k(ranked, evidence, 3) == pytest.approx(5 / 35)
    assert m.evidence_recall_at_k(ranked, evidence, 3) == pytest.approx(5 / 10)


def test_span_iou_adds_uncovered_evidence() -> None:
    evidence = [("d", 10, 20)]
    ranked = [("d", 0, 15), ("d", 5, 15)]
    assert m.span_iou_at_k(ranked, evidence, 1) == pytest.approx(5 / (15 + 5))
    assert m.span_iou_at_k(ranked, evidence, 2) == pytest.approx(5 / (25 + 5))
    # a chunk equal to the evidence: 1.0; evidence not retrieved at all: 0.0
    assert m.span_iou_at_k([("d", 10, 20)], evidence, 1) == 1.0
    assert m.span_iou_at_k([("d", 30, 40)], evidence, 1) == 0.0


def test_precision_omega_touching_chunks() -> None:
    chunks = [("d", 0, 10), ("d", 10, 25), ("d", 25, 40)]
    evidence = [("d", 10, 20)]
    # exact: only 10..25 shares a character: 10 / 15
    assert m.precision_omega(chunks, evidence) == pytest.approx(10 / 15)
    # closed (Chroma): 0..10 ends where the evidence starts, so it counts: 10 / 25
    assert m.precision_omega(chunks, evidence, closed=True) == pytest.approx(10 / 25)
    assert len(m.touching_spans(chunks, evidence, closed=True)) == 2


def test_precision_omega_union_and_uncovered_evidence() -> None:
    # two overlapping chunks hold the evidence: the union (0..30) counts once
    assert m.precision_omega([("d", 0, 20), ("d", 10, 30)], [("d", 12, 18)]) == \
        pytest.approx(6 / 30)
    # evidence 10..20, chunks 0..12 and 15..30 (the gap 12..15 dropped by the chunker):
    # covered 2 + 5 = 7 of a union 0..30 = 30
    assert m.precision_omega([("d", 0, 12), ("d", 15, 30)], [("d", 10, 20)]) == \
        pytest.approx(7 / 30)
    # no chunk touches it: nothing covered, denominator is the evidence itself
    assert m.precision_omega([("d", 50, 60)], [("d", 10, 20)]) == 0.0
    # other documents' chunks never touch
    assert m.precision_omega([("e", 0, 100)], [("d", 10, 20)]) == 0.0


def test_empty_evidence_is_an_error() -> None:
    with pytest.raises(ValueError):
        m.precision_omega([("d", 0, 5)], [])
    with pytest.raises(ValueError):
        m.span_precision_at_k([("d", 0, 5)], [], 1)


TEXT = "Alpha beta. Alpha beta. Gamma delta."


def _chunk(i: int, start: int, end: int) -> Chunk:
    body = TEXT[start:end]
    return Chunk(f"d#{i}", "d", i, start, end, body, body, 1)


def test_chroma_placement_first_occurrence_without_trailing_period() -> None:
    second = _chunk(1, 12, 23)  # the second "Alpha beta."
    assert second.text == "Alpha beta."
    assert chroma_span(second, TEXT) == ("d", 0, 10)  # the first copy, "." dropped
    last = _chunk(2, 24, 36)
    assert chroma_span(last, TEXT) == ("d", 24, 35)
    assert placed_spans([second], "exact") == [("d", 12, 23)]


def test_evaluate_reports_span_metrics_in_both_modes() -> None:
    from sweep.data.golden import GoldenItem
    from sweep.evaluation.relevance import ResolvedItem
    from sweep.retrieval.ranking import Ranking

    chunks = [_chunk(0, 0, 12), _chunk(1, 12, 24), _chunk(2, 24, 36)]
    item = GoldenItem(qid="q", question="?", line=1)
    resolved = [ResolvedItem(item, (("d", 12, 23),), frozenset({"d"}), "evidence")]
    rankings = [Ranking((1, 0, 2), (3.0, 2.0, 1.0))]
    spec = EvalSpec(k=(1, 2), prompt_k=1)
    summary, rows = evaluate(resolved, chunks, rankings, spec)
    assert set(metric_names(spec.k, spec.prompt_k)) <= set(summary) | {"doc_mrr"} | {
        f"doc_recall_at_{k}" for k in (1, 2)}
    # exact: chunk 1 is 12..24 and holds the 11 evidence characters
    assert summary["span_precision_at_1"] == pytest.approx(11 / 12)
    assert summary["precision_omega"] == pytest.approx(11 / 12)
    assert rows[0]["n_touching"] == 1
    assert summary["span_precision_at_min"] == pytest.approx(11 / 12)
    # chroma: chunk 1 ("Alpha beta. ") has no trailing "." and goes to its first copy at
    # 0..12, so the top chunk holds no evidence; chunk 0 ("Alpha beta. ") lands there too.
    # Both end at 12, where the evidence starts: Chroma's closed test counts them as touching
    # (holding 0 characters of it); chunk 2 ("Gamma delta") at 24..35 does not touch 12..23.
    chroma = EvalSpec(k=(1, 2), prompt_k=1, span_mode="chroma")
    summary, rows = evaluate(resolved, chunks, rankings, chroma, texts={"d": TEXT})
    assert summary["span_precision_at_1"] == 0.0
    assert summary["precision_omega"] == 0.0
    assert rows[0]["n_touching"] == 2
