"""Queue order on hand-made cases, one rule at a time, and the reason each candidate gets."""

from __future__ import annotations

from sweep.questions.merge import Candidate
from sweep.questions.priority import Signals, prioritise


def cand(cid: str, count: int = 1, neg: int = 0, first: str | None = None) -> Candidate:
    return Candidate(cid, f"question {cid}", count=count, negative_count=neg, first_seen=first)


def order(cands: list[Candidate], **kw: object) -> list[str]:
    return [c.cid for c in prioritise(cands, **kw)]  # type: ignore[arg-type]


def test_negative_feedback_beats_frequency() -> None:
    assert order([cand("a", count=400), cand("b", count=2, neg=1),
                  cand("c", count=3, neg=2)]) == ["c", "b", "a"]


def test_frequency_orders_the_rest() -> None:
    assert order([cand("a", 1), cand("b", 12), cand("c", 3)]) == ["b", "c", "a"]


def test_disagreement_breaks_ties_in_frequency_only() -> None:
    signals = {"a": Signals(disagree=True), "b": Signals(disagree=False),
               "c": Signals(disagree=True)}
    assert order([cand("a", 1), cand("b", 1), cand("c", 2)], signals=signals) == ["c", "a", "b"]
    assert order([cand("a", 1), cand("b", 2)], signals=signals) == ["b", "a"]


def test_coverage_comes_after_disagreement() -> None:
    signals = {"a": Signals(disagree=False, uncovered=True),
               "b": Signals(disagree=True, uncovered=False),
               "c": Signals(disagree=False, uncovered=False)}
    assert order([cand("c"), cand("a"), cand("b")], signals=signals) == ["b", "a", "c"]


def test_skipped_go_to_the_back_and_ties_fall_to_first_seen_then_cid() -> None:
    cands = [cand("z", first="2024-01-02T00:00:00Z"), cand("y", first="2024-01-01T00:00:00Z"),
             cand("x"), cand("w", count=50, neg=5)]
    assert order(cands, skipped=frozenset({"w"})) == ["y", "z", "x", "w"]


def test_priorities_and_reasons() -> None:
    signals = {"a": Signals(disagree=True, disagree_note="BM25: d#1, dense: e#2",
                            uncovered=True, uncovered_note="no golden question in e")}
    out = prioritise([cand("b", count=3, neg=1), cand("a")], signals)
    assert [c.priority for c in out] == [1, 2]
    assert out[0].reason == "negative feedback 1 of 3 times asked; asked 3 times"
    assert out[1].reason == ("asked 1 time; BM25 and dense disagree (BM25: d#1, dense: e#2); "
                             "not covered by the golden set (no golden question in e)")
