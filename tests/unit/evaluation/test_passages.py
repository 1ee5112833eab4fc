"""Answers that need several passages: grouping spans into passages, full recall and passages
found on hand-made items, the per-need split against the filtered mean of the rows (recall against ranx:
tests/comparison/test_crosscheck_ranx_passages.py)."""

from __future__ import annotations

import csv
import math

import pytest

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import parse_document
from sweep.data.golden import EvidenceRef, GoldenItem, parse_golden_lines
from sweep.evaluation import metrics as m
from sweep.evaluation.evaluate import EvalSpec, by_needs, by_needs_metrics, evaluate, need_group
from sweep.evaluation.relevance import CorpusIndex, ResolvedItem, group_passages, resolve_item
from sweep.outputs.report import write_per_question
from sweep.retrieval.ranking import Ranking

# --------------------------------------------------------------------------- the metrics

THREE = [{"p1#0"}, {"p2#0", "p2#1"}, {"p3#0"}]


def test_two_of_three_passages_in_top_k() -> None:
    ranked = ["p1#0", "x", "p2#1", "y", "p3#0"]
    relevant = set().union(*THREE) - {"p2#0"}  # one relevant chunk per passage
    assert m.recall_at_k(ranked, relevant, 4) == pytest.approx(2 / 3)
    assert round(m.recall_at_k(ranked, relevant, 4), 3) == 0.667
    assert m.full_recall_at_k(ranked, THREE, 4) == 0.0
    assert m.passages_found_at_k(ranked, THREE, 4) == 2
    # the third passage at rank 5: the whole answer
    assert m.full_recall_at_k(ranked, THREE, 5) == 1.0
    assert m.passages_found_at_k(ranked, THREE, 5) == 3


def test_any_is_hit_at_k() -> None:
    ranked = ["x", "p3#0", "p1#0"]
    union = set().union(*THREE)
    for k in (1, 2, 3):
        assert m.full_recall_at_k(ranked, THREE, k, "any") == m.hit_at_k(ranked, union, k)
        assert m.passages_found_at_k(ranked, THREE, k, "any") == m.hit_at_k(ranked, union, k)
    assert m.passages_found_at_k(ranked, THREE, 3, "all") == 2  # the count, for needs all


def test_one_passage_full_recall_is_hit() -> None:
    ranked = ["x", "a", "b"]
    for k in (1, 2, 3):
        assert m.full_recall_at_k(ranked, [{"a", "b"}], k) == m.hit_at_k(ranked, {"a", "b"}, k)


def test_a_passage_no_chunk_holds_is_never_found() -> None:
    assert m.passages_found_at_k(["a", "b"], [{"a"}, set()], 2) == 1
    assert m.full_recall_at_k(["a", "b"], [{"a"}, set()], 2) == 0.0


@pytest.mark.parametrize("bad", [[], [set()], [set(), set()]])
def test_no_relevant_passage_is_an_error(bad) -> None:
    with pytest.raises(ValueError, match="cannot be scored"):
        m.full_recall_at_k(["a"], bad, 1)


def test_bad_needs_and_k() -> None:
    with pytest.raises(ValueError, match="needs"):
        m.passages_found_at_k(["a"], [{"a"}], 1, "some")
    with pytest.raises(ValueError, match="k must be"):
        m.passages_found_at_k(["a"], [{"a"}], 0)


def _full_recall_by_definition(ranked, passages, k):
    """An independent reading of the definition: every passage meets the top k."""
    top = ranked[:k]
    return float(all(any(r in p for r in top) for p in passages))


def test_full_recall_equals_the_definition_on_random_cases() -> None:
    import random

    rnd = random.Random(7)
    ids = [f"c{i}" for i in range(12)]
    for _ in range(300):
        ranked = rnd.sample(ids, rnd.randint(1, 12))
        passages = [set(rnd.sample(ids, rnd.randint(1, 3))) for _ in range(rnd.randint(1, 4))]
        k = rnd.randint(1, 12)
        assert m.full_recall_at_k(ranked, passages, k) == _full_recall_by_definition(
            ranked, passages, k)
        assert m.passages_found_at_k(ranked, passages, k) == sum(
            bool(set(ranked[:k]) & p) for p in passages)


# --------------------------------------------------------------------------- passages

TEXT = ("First paragraph, sentence one. Sentence two.\n"
        "Still the first paragraph.\n"
        "\n"
        "Second paragraph here.\n"
        "  \n"
        "Third paragraph.\n")


def _span(doc: str, needle: str) -> tuple[str, int, int]:
    start = TEXT.index(needle)
    return (doc, start, start + len(needle))


def test_spans_of_one_paragraph_are_one_passage() -> None:
    spans = [_span("a", "sentence one"), _span("a", "Still the first")]
    assert group_passages(spans, {"a": TEXT}) == ((0, 1),)


def test_a_blank_line_separates_passages() -> None:
    # a line of spaces between the second and third paragraphs is a blank line too
    spans = [_span("a", "Third paragraph"), _span("a", "sentence one"),
             _span("a", "Second paragraph")]
    assert group_passages(spans, {"a": TEXT}) == ((0,), (1,), (2,))


def test_other_documents_are_other_places_and_overlaps_join() -> None:
    spans = [_span("a", "sentence one"), _span("b", "sentence one"),
             ("a", 0, 80), _span("a", "Second paragraph")]
    # ("a", 0, 80) overlaps the first span and crosses the break into the second paragraph
    assert group_passages(spans, {"a": TEXT, "b": TEXT}) == ((0, 2, 3), (1,))


def test_the_same_origin_is_one_passage() -> None:
    spans = [_span("a", "sentence one"), _span("a", "Third paragraph")]
    assert group_passages(spans, {"a": TEXT}, origin=[0, 0]) == ((0, 1),)
    assert group_passages(spans, {"a": TEXT}, origin=[0, 1]) == ((0,), (1,))


def test_resolved_quotes_make_passages_and_needs() -> None:
    docs = [parse_document("a.md", TEXT), parse_document("b.md", "Other text.\n")]
    corpus = CorpusIndex(docs)
    ev = (EvidenceRef(doc_id="a", quote="Sentence two."),
          EvidenceRef(doc_id="a", quote="Still the first paragraph."),
          EvidenceRef(doc_id="a", quote="Third paragraph."),
          EvidenceRef(doc_id="b", quote="Other text."))
    res = resolve_item(GoldenItem("q", "?", evidence=ev), corpus, None)
    assert res.passages == ((0, 1), (2,), (3,))
    assert res.needs == "all" and res.passages_needed == 3
    alt = resolve_item(GoldenItem("q", "?", evidence=ev, needs="any"), corpus, None)
    assert alt.needs == "any" and alt.passages_needed == 1


def test_needs_is_parsed_and_checked() -> None:
    lines = "\n".join([
        '{"qid": "a", "question": "x?", "relevant_doc_ids": ["d"], "needs": "any"}',
        '{"qid": "b", "question": "y?", "relevant_doc_ids": ["d"]}',
        '{"qid": "c", "question": "z?", "relevant_doc_ids": ["d"], "needs": "both"}',
    ])
    items, problems = parse_golden_lines(lines, "g.jsonl")
    assert [(i.qid, i.needs) for i in items] == [("a", "any"), ("b", None)]
    assert [str(p) for p in problems] == [
        "g.jsonl:3: needs: must be one of all, any, got 'both'"]


# --------------------------------------------------------------------------- in evaluate

# p1 [0,10)  p2 [10,20)  p3 [20,30)  x [30,40)  y [40,50): one document, five chunks
CHUNKS = [Chunk(f"d#{i}", "d", i, 10 * i, 10 * i + 10, "", "", 5) for i in range(5)]
SPEC = EvalSpec(k=(1, 3), prompt_k=2, token_budget=100, min_overlap=0.5)


def _item(qid: str, spans, groups, needs=None) -> ResolvedItem:
    return ResolvedItem(GoldenItem(qid, f"question {qid}", needs=needs), tuple(spans),
                        frozenset({"d"}), "evidence", passages=groups)


def _rank(*ordinals: int) -> Ranking:
    return Ranking(tuple(ordinals), tuple(1.0 - 0.1 * i for i in range(len(ordinals))))


EV3 = [("d", 0, 10), ("d", 10, 20), ("d", 20, 30)]
CASE = [
    (_item("three", EV3, ((0,), (1,), (2,))), _rank(0, 1, 3, 2)),        # 2 of 3 in top 2
    (_item("alt", EV3, ((0,), (1,), (2,)), "any"), _rank(3, 2, 0)),      # one alternative
    (_item("two", EV3[:2], ((0,), (1,))), _rank(1, 0)),                  # whole answer
    (_item("one", EV3[:2], ((0, 1),)), _rank(3, 4, 1)),                  # one passage at 3
    (_item("pair", EV3[1:], ((0,), (1,))), _rank(4, 3, 2)),              # 1 of 2 at 3
]


@pytest.fixture(scope="module")
def result():
    return evaluate([i for i, _ in CASE], CHUNKS, [r for _, r in CASE], SPEC)


def test_rows_hold_the_passage_metrics(result) -> None:
    rows = {r["qid"]: r for r in result[1]}
    three = rows["three"]
    assert three["recall_at_2"] == pytest.approx(2 / 3)
    assert three["full_recall_at_2"] == 0.0 and three["passages_found_at_2"] == 2.0
    assert three["full_recall_at_3"] == 0.0 and three["full_recall_at_1"] == 0.0
    assert (three["n_passages"], three["passages_needed"], three["needs"]) == (3, 3, "all")
    alt = rows["alt"]
    assert (alt["passages_needed"], alt["needs"]) == (1, "any")
    assert alt["full_recall_at_2"] == alt["hit_at_2"] == 1.0
    assert alt["passages_found_at_2"] == 1.0 and alt["recall_at_2"] == pytest.approx(1 / 3)
    assert rows["two"]["full_recall_at_2"] == 1.0
    assert rows["one"]["passages_needed"] == 1
    assert [rows["one"][f"full_recall_at_{k}"] for k in (1, 2, 3)] == [0.0, 0.0, 1.0]
    assert rows["pair"]["passages_found_at_3"] == 1.0 and rows["pair"]["full_recall_at_3"] == 0


def test_summary_means(result) -> None:
    summary = result[0]
    assert summary["full_recall_at_2"] == pytest.approx(2 / 5)  # alt and two
    assert summary["passages_found_at_2"] == pytest.approx((2 + 1 + 2 + 0 + 0) / 5)


def test_by_needs_is_the_filtered_mean_of_per_question_csv(result, tmp_path) -> None:
    names = ["recall_at_2", "full_recall_at_2", "passages_found_at_2"]
    split = by_needs(result[1], names)
    assert split["1"]["n"] == 2 and split["2"]["n"] == 2 and split["3plus"]["n"] == 1
    assert split["2"]["full_recall_at_2"] == 0.5  # two: 1, pair: 0
    assert split["3plus"]["full_recall_at_2"] == 0.0
    write_per_question(tmp_path, result[1])
    with open(tmp_path / "per_question.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for group in ("1", "2", "3plus"):
        picked = [r for r in rows if r["status"] == "scored"
                  and need_group(int(r["passages_needed"])) == group]
        assert len(picked) == split[group]["n"]
        for name in names:
            assert split[group][name] == pytest.approx(
                math.fsum(float(r[name]) for r in picked) / len(picked))
    flat = by_needs_metrics(split)
    assert flat["n_needs_3plus"] == 1.0 and flat["full_recall_at_2_needs_2"] == 0.5
    assert all(" " not in k and "+" not in k for k in flat)


def test_an_empty_group_has_no_means() -> None:
    rows = [{"status": "scored", "passages_needed": 1, "recall_at_5": 1.0},
            {"status": "orphan", "passages_needed": 2},
            {"status": "doc_only", "doc_recall_at_5": 1.0}]
    split = by_needs(rows, ["recall_at_5"])
    assert split == {"1": {"n": 1, "recall_at_5": 1.0}, "2": {"n": 0}, "3plus": {"n": 0}}


def test_validate_warns_when_needs_has_one_passage(tmp_path) -> None:
    from sweep.data.golden import load_golden
    from sweep.evaluation.relevance import resolve_all
    from sweep.evaluation.validate import check_golden

    docs = [parse_document("a.md", TEXT)]
    path = tmp_path / "g.jsonl"
    path.write_text(
        '{"qid": "one", "question": "x?", "needs": "any", "evidence": [{"doc_id": "a", '
        '"quote": "sentence one"}, {"doc_id": "a", "quote": "Sentence two"}]}\n'
        '{"qid": "two", "question": "y?", "needs": "any", "evidence": [{"doc_id": "a", '
        '"quote": "sentence one"}, {"doc_id": "a", "quote": "Third paragraph"}]}\n',
        encoding="utf-8")
    golden = load_golden(path)
    result = check_golden(golden, resolve_all(golden.items, CorpusIndex(docs), None), docs)
    assert [(p.line, p.field, p.severity) for p in result.problems] == [(1, "needs", "warning")]


def test_paragraph_around_agrees_with_the_break_regex() -> None:
    from sweep.evaluation.relevance import PARAGRAPH_BREAK, paragraph_around

    text = "a b\n\nc d\ne\n \t\nf\n\n\ng h"
    for start in range(len(text)):
        for end in range(start + 1, len(text) + 1):
            before = [mt.end() for mt in PARAGRAPH_BREAK.finditer(text, 0, start)]
            after = PARAGRAPH_BREAK.search(text, end)
            expected = (before[-1] if before else 0, after.start() if after else len(text))
            got = paragraph_around(text, start, end)
            # the same paragraph; in a run of three newlines the regex's break ends one sooner
            assert text[slice(*got)].strip() == text[slice(*expected)].strip(), (start, end)
            assert got[0] <= start and end <= got[1]
    assert text[slice(*paragraph_around(text, 6, 7))] == "c d\ne"
