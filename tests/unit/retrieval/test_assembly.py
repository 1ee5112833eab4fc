"""Context assembly (issue 47) on hand-made chunks: each order, the budget and the dedup rule,
and the context's scores against its evidence."""

from __future__ import annotations

import pytest

from sweep.chunking.chunkers import Chunk
from sweep.config.schema import AssemblyDedup, AssemblyOrder
from sweep.evaluation.assembled import context_scores
from sweep.retrieval.assembly import DEDUPS, ORDERS, AssemblySpec, assemble, mostly_inside


def chunk(i: int, doc: str, start: int, end: int, tokens: int) -> Chunk:
    text = "x" * (end - start)
    return Chunk(f"{doc}#{i}", doc, i, start, end, text, text, tokens)


# Six chunks: a.md 0-100, 100-200, 200-300; b.md 0-100; a small-to-big style repeat of a.md's
# 120-160 (all of its 40 characters inside a#1); a half-overlapping one of a#2 (250-350: 50 of
# 100 inside a#2, not more than half).
CHUNKS = [chunk(0, "a.md", 0, 100, 20), chunk(1, "a.md", 100, 200, 30),
          chunk(2, "a.md", 200, 300, 40), chunk(3, "b.md", 0, 100, 50),
          chunk(4, "a.md", 120, 160, 10), chunk(5, "a.md", 250, 350, 25)]


def test_the_schema_offers_the_assembly_s_names() -> None:
    assert [o.value for o in AssemblyOrder] == list(ORDERS)
    assert [d.value for d in AssemblyDedup] == list(DEDUPS)


def test_defaults_are_the_top_prompt_k_as_ranked() -> None:
    assert AssemblySpec().neutral
    assert assemble([3, 1, 4, 0, 2, 5], CHUNKS, 3, AssemblySpec()) == [3, 1, 4]


def test_document_order_is_by_document_then_position() -> None:
    spec = AssemblySpec(order="document")
    assert assemble([3, 2, 0, 1], CHUNKS, 4, spec) == [0, 1, 2, 3]
    assert assemble([5, 4, 3], CHUNKS, 3, spec) == [4, 5, 3]


def test_lost_in_middle_puts_the_best_at_both_ends() -> None:
    spec = AssemblySpec(order="lost_in_middle")
    # ranks 1..5 are chunks 3, 1, 4, 0, 2: 1st, 3rd, 5th in front, 4th, 2nd at the back
    assert assemble([3, 1, 4, 0, 2], CHUNKS, 5, spec) == [3, 4, 2, 0, 1]
    assert assemble([3, 1], CHUNKS, 5, spec) == [3, 1]
    assert assemble([2], CHUNKS, 5, spec) == [2]


def test_budget_keeps_whole_chunks_best_first_and_stops_at_the_first_that_does_not_fit() -> None:
    ranking = [1, 3, 0, 4]  # 30, 50, 20, 10 tokens
    assert assemble(ranking, CHUNKS, 5, AssemblySpec(budget_tokens=80)) == [1, 3]
    # 30 + 50 = 80 fits exactly; 100 leaves 20 free after the first two: chunk 0 (20) fits
    assert assemble(ranking, CHUNKS, 5, AssemblySpec(budget_tokens=100)) == [1, 3, 0]
    # 79: chunk 3 does not fit, and the walk stops there although chunks 0 and 4 would fit
    assert assemble(ranking, CHUNKS, 5, AssemblySpec(budget_tokens=79)) == [1]
    # a first chunk over the budget: nothing reaches the prompt (never a cut chunk)
    assert assemble(ranking, CHUNKS, 5, AssemblySpec(budget_tokens=29)) == []
    # the budget never lifts prompt_k
    assert assemble(ranking, CHUNKS, 2, AssemblySpec(budget_tokens=10_000)) == [1, 3]


def test_overlap_dedup_drops_a_chunk_mostly_inside_a_kept_one_and_fills_the_slot() -> None:
    assert mostly_inside(CHUNKS[4], CHUNKS[1])
    assert not mostly_inside(CHUNKS[1], CHUNKS[4])  # 40 of a#1's 100 characters: not most
    assert not mostly_inside(CHUNKS[5], CHUNKS[2])  # exactly half is not "mostly"
    assert not mostly_inside(CHUNKS[3], CHUNKS[0])  # same offsets, another document
    ranking = [1, 4, 5, 2, 0]
    assert assemble(ranking, CHUNKS, 3, AssemblySpec()) == [1, 4, 5]
    assert assemble(ranking, CHUNKS, 3, AssemblySpec(dedup="overlap")) == [1, 5, 2]
    # the repeat is dropped before it counts against the budget
    assert assemble(ranking, CHUNKS, 5, AssemblySpec(dedup="overlap", budget_tokens=95)
                    ) == [1, 5, 2]


def test_the_rules_compose_dedup_then_budget_then_order() -> None:
    spec = AssemblySpec(order="document", budget_tokens=60, dedup="overlap")
    # 1 (30) kept; 4 repeats 1; 0 (20) kept, 50; 5 (25) over 60: stop
    assert assemble([1, 4, 0, 5, 3], CHUNKS, 5, spec) == [0, 1]


@pytest.mark.parametrize("order", ORDERS)
def test_order_changes_no_score_of_the_context(order: str) -> None:
    ranking = [3, 1, 4, 0, 2]
    context = [CHUNKS[i] for i in assemble(ranking, CHUNKS, 5, AssemblySpec(order=order))]
    assert context_scores(context, [("a.md", 90, 130), ("b.md", 10, 20)]) == {
        "assembled_evidence_recall": 1.0, "assembled_tokens": 150.0, "assembled_chunks": 5.0}


def test_context_scores_count_the_evidence_characters_inside_the_context() -> None:
    context = [CHUNKS[i] for i in assemble([1, 3, 0], CHUNKS, 5, AssemblySpec(budget_tokens=80))]
    # evidence a.md 90-130 (40 chars: 30 inside a#1) and b.md 10-20 (10, inside b#3)
    scores = context_scores(context, [("a.md", 90, 130), ("b.md", 10, 20)])
    assert scores == {"assembled_evidence_recall": 40 / 50, "assembled_tokens": 80.0,
                      "assembled_chunks": 2.0}
    assert context_scores([], [("a.md", 0, 10)])["assembled_evidence_recall"] == 0.0
