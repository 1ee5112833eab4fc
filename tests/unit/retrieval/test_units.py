"""Returned units (retrieval.unit=parent|window): spans, merging in rank order, and metrics
computed on what is returned, by hand."""

from __future__ import annotations

import random

import pytest

from sweep.chunking.chunkers import Chunk, ChunkSpec, TokenizedDoc, chunk_document
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import parse_document
from sweep.data.golden import GoldenItem
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.relevance import ResolvedItem
from sweep.retrieval.ranking import Ranking
from sweep.retrieval.units import (
    UnitSpec,
    build_units,
    parent_span,
    returned_ranking,
    window_span,
)

REGEX = RegexTokenizer()
TEXT = """\
# Guide

## Returns

One two three. Four five six. Seven eight nine. Ten eleven twelve.

## Shipping

Alpha beta gamma. Delta epsilon zeta.
"""


def _setup():
    doc = parse_document("guide.md", TEXT)
    starts = REGEX.token_starts(doc.text)
    return doc, starts, TokenizedDoc(doc, starts)


def _span_of(text: str) -> tuple[int, int]:
    a = TEXT.index(text)
    return a, a + len(text)


def test_parent_is_the_section_of_the_hit() -> None:
    _, _, d = _setup()
    hit = _span_of("Four five six.")
    # "# Guide" has no body, so it belongs to "## Returns" (as with boundary=heading).
    section = (0, TEXT.index("\n\n## Shipping"))
    assert parent_span(d, hit, 1000) == section


def test_parent_is_cut_around_the_hit() -> None:
    _, _, d = _setup()
    hit = _span_of("Four five six.")  # 4 regex tokens
    # 8 tokens: 2 before ("three", "."), 2 after ("Seven", "eight").
    assert parent_span(d, hit, 8) == _span_of("three. Four five six. Seven eight")
    # At the section's end the room goes to the left: "Delta epsilon zeta." is 4 tokens,
    # 3 more come before it ("beta gamma .").
    hit = _span_of("Delta epsilon zeta.")
    assert parent_span(d, hit, 7) == _span_of("beta gamma. Delta epsilon zeta.")
    # A hit over the limit is returned as it is.
    assert parent_span(d, hit, 2) == hit


def test_window_adds_sentences_on_each_side_within_the_section() -> None:
    _, _, d = _setup()
    hit = _span_of("Seven eight nine.")
    assert window_span(d, hit, 1) == _span_of("Four five six. Seven eight nine. Ten eleven twelve.")
    assert window_span(d, hit, 0) == hit
    # Never beyond the section: five sentences back from "Alpha" stop at its heading line
    # (a sentence of its own section), five forward at the document's end.
    hit = _span_of("Alpha beta gamma.")
    assert window_span(d, hit, 5) == _span_of("## Shipping\n\nAlpha beta gamma. Delta epsilon zeta.")


def test_window_of_a_hit_cut_inside_a_sentence_takes_whole_sentences() -> None:
    _, _, d = _setup()
    hit = _span_of("five six. Seven")
    assert window_span(d, hit, 0) == _span_of("Four five six. Seven eight nine.")


def _chunk(cid: str, start: int, end: int, tokens: int, doc: str = "d") -> Chunk:
    return Chunk(cid, doc, 0, start, end, "x" * (end - start), "", tokens)


def test_merging_in_rank_order() -> None:
    units = [_chunk("A", 0, 100, 10), _chunk("B", 20, 40, 2), _chunk("C", 50, 150, 10),
             _chunk("D", 200, 300, 10), _chunk("E", 0, 100, 10, doc="e")]
    # Five chunks whose units are: B, D, A (contains B: takes B's place), B again (inside A:
    # dropped), C (overlaps A only partly: kept), E (same span, other document: kept).
    unit_of = [1, 3, 0, 1, 2, 4]
    ranking = Ranking((0, 1, 2, 3, 4, 5), (6.0, 5.0, 4.0, 3.0, 2.0, 1.0))
    out = returned_ranking(ranking, unit_of, units)
    assert out.indices == (0, 3, 2, 4)
    assert out.scores == (6.0, 5.0, 2.0, 1.0)
    # Equal units from two hits are returned once.
    assert returned_ranking(Ranking((0, 1), (2.0, 1.0)), [3, 3], units).indices == (3,)


def test_a_unit_swallowing_two_earlier_ones_returns_once() -> None:
    units = [_chunk("A", 0, 100, 10), _chunk("B", 10, 20, 1), _chunk("C", 30, 40, 1)]
    out = returned_ranking(Ranking((0, 1, 2), (3.0, 2.0, 1.0)), [1, 2, 0], units)
    assert out.indices == (0,)
    assert out.scores == (3.0,)


def _merge_by_the_rule(ranking: Ranking, unit_of: list[int], units: list[Chunk]) -> Ranking:
    """The merging rule written the plain way: every hit against every unit kept so far."""
    kept: list[int] = []
    scores: list[float] = []

    def inside(i: Chunk, o: Chunk) -> bool:
        return i.doc_id == o.doc_id and o.start <= i.start and i.end <= o.end

    for c, score in zip(ranking.indices, ranking.scores, strict=True):
        u = unit_of[c]
        if any(inside(units[u], units[k]) for k in kept):
            continue
        swallowed = [n for n, k in enumerate(kept) if inside(units[k], units[u])]
        if swallowed:
            kept[swallowed[0]] = u
            for n in reversed(swallowed[1:]):
                del kept[n], scores[n]
            continue
        kept.append(u)
        scores.append(score)
    return Ranking(tuple(kept), tuple(scores))


def test_merging_matches_the_rule_on_random_overlapping_units() -> None:
    # Nested, equal, partly overlapping and disjoint units over three documents, in random
    # rank orders: the per-document merge gives exactly what the plain rule gives.
    rng = random.Random(18)
    for _ in range(300):
        units = []
        for n in range(rng.randint(1, 12)):
            a = rng.randint(0, 60)
            units.append(_chunk(f"u{n}", a, a + rng.randint(1, 40), 1,
                                doc=rng.choice("xyz")))
        n_chunks = rng.randint(1, 30)
        unit_of = [rng.randrange(len(units)) for _ in range(n_chunks)]
        order = list(range(n_chunks))
        rng.shuffle(order)
        ranking = Ranking(tuple(order), tuple(float(-i) for i in range(n_chunks)))
        assert returned_ranking(ranking, unit_of, units) == _merge_by_the_rule(
            ranking, unit_of, units)


def test_build_units_and_metrics_on_what_is_returned() -> None:
    doc, starts, _ = _setup()
    chunks = chunk_document(doc, starts, ChunkSpec("sentence", 4, 0))
    texts = [c.text for c in chunks]
    assert "Seven eight nine." in texts and "Alpha beta gamma." in texts
    units, unit_of = build_units(chunks, [doc], [starts], UnitSpec("window", 1000, 1))
    assert all(u.text == TEXT[u.start : u.end] for u in units)
    assert all(u.n_tokens == REGEX.token_starts(u.text).size for u in units)
    seven = texts.index("Seven eight nine.")
    window = units[unit_of[seven]]
    assert window.text == "Four five six. Seven eight nine. Ten eleven twelve."
    assert window.n_tokens == 12

    # The question's evidence is "Ten eleven twelve."; the search ranks "Seven" first, then
    # "Alpha". Chunk-level scoring: the top chunk misses; the window around it holds it.
    ev = _span_of("Ten eleven twelve.")
    item = ResolvedItem(GoldenItem("q1", "what comes after nine?"), (("guide", *ev),),
                        frozenset(), "evidence")
    alpha = texts.index("Alpha beta gamma.")
    ranking = Ranking((seven, alpha), (2.0, 1.0))
    spec = EvalSpec(k=(1, 2), prompt_k=1, token_budget=12, min_overlap=0.5)
    chunk_summary, _ = evaluate([item], chunks, [ranking], spec)
    assert chunk_summary["recall_at_1"] == 0.0
    assert chunk_summary["context_tokens_at_1"] == 4
    unit_ranking = returned_ranking(ranking, unit_of, units)
    summary, rows = evaluate([item], units, [unit_ranking], spec)
    # Relevant units: the window around "Seven" and the one around "Ten" (both hold the
    # evidence); one of the two is returned at rank 1.
    assert summary["hit_at_1"] == 1.0
    assert summary["recall_at_1"] == 0.5
    assert summary["evidence_recall_at_1"] == 1.0
    # What the model reads: the 12-token window, then the "Alpha" window: one sentence back
    # is the heading line ("#", "#", "Shipping"), then Alpha and Delta: 3 + 4 + 4.
    assert summary["context_tokens_at_1"] == 12
    assert summary["context_tokens_at_2"] == 12 + 11
    # 12 tokens of budget hold the first window exactly; 11 would hold none.
    assert summary["evidence_recall_at_budget"] == 1.0
    small, _ = evaluate([item], units, [unit_ranking], EvalSpec((1, 2), 1, 11, 0.5))
    assert small["evidence_recall_at_budget"] == 0.0
    ten = units[unit_of[texts.index("Ten eleven twelve.")]]
    assert ten.text == "Seven eight nine. Ten eleven twelve."
    assert rows[0]["relevant_ids"].split() == sorted([window.chunk_id, ten.chunk_id])


def test_unit_chunk_is_the_identity_and_bad_units_fail() -> None:
    doc, starts, _ = _setup()
    chunks = chunk_document(doc, starts, ChunkSpec("sentence", 4, 0))
    units, unit_of = build_units(chunks, [doc], [starts], UnitSpec())
    assert units == chunks and unit_of == list(range(len(chunks)))
    with pytest.raises(SweepError, match=r"retrieval\.unit"):
        UnitSpec("page").validate()


def test_window_units_scan_each_section_run_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # A long document without headings is one section run: scanning it for sentences once
    # per hit made `window` quadratic in the document's length (22 s for COVID-QA's 2,560
    # chunks); the bounds are scanned once per run and shared by its hits.
    body = " ".join(f"Sentence number {n} ends here." for n in range(40))
    text = f"# Long\n\n{body}\n\n## Tail\n\nLast one. Really last."
    doc = parse_document("long.md", text)
    starts = REGEX.token_starts(doc.text)
    chunks = chunk_document(doc, starts, ChunkSpec("sentence", 6, 0))
    assert len(chunks) > 40
    d = TokenizedDoc(doc, starts)
    expected = [window_span(d, (c.start, c.end), 2) for c in chunks]  # no memo: one scan each
    calls: list[tuple[int, int]] = []
    original = TokenizedDoc.sentence_cuts

    def counted(self: TokenizedDoc, a: int, b: int) -> list[int]:
        calls.append((a, b))
        return original(self, a, b)

    monkeypatch.setattr(TokenizedDoc, "sentence_cuts", counted)
    units, unit_of = build_units(chunks, [doc], [starts], UnitSpec("window", 1000, 2))
    assert len(set(calls)) == 2 and len(calls) == 2  # "# Long" + body, and "## Tail"
    assert [(units[u].start, units[u].end) for u in unit_of] == expected
    # Two sentences each side of a middle sentence, by hand.
    mid = next(c for c in chunks if c.text == "Sentence number 20 ends here.")
    unit = units[unit_of[chunks.index(mid)]]
    assert unit.text == " ".join(f"Sentence number {n} ends here." for n in range(18, 23))
