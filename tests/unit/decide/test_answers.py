"""The closing statement of an answer run: the retrieval winner, its paired live-accuracy
differences, the rank agreement, and the words when a retrieval win does not show."""

from __future__ import annotations

import pytest

from sweep.decide.answers import AnswerRun, closing_statement, compare_to_winner, summary_rows


def _run(name: str, retrieval: float, live: list[int], oracle: list[int] | None = None
         ) -> AnswerRun:
    qids = [f"q{i:02d}" for i in range(len(live))]
    oracle = oracle if oracle is not None else [1] * len(live)
    return AnswerRun(name, retrieval, dict(zip(qids, map(float, live), strict=True)),
                     dict(zip(qids, map(float, oracle), strict=True)),
                     {"ok": sum(live), "oracle_fail": len(live) - sum(oracle)})


def test_a_winner_that_answers_every_question_the_others_miss_wins_on_answers() -> None:
    a = _run("a", 0.9, [1] * 20)
    b = _run("b", 0.8, [0] * 20)
    winner, pairs = compare_to_winner([b, a], n=2000)
    assert winner is a
    (p,) = pairs
    # every paired difference is exactly 1: the interval cannot move
    assert (p.other, p.n, p.diff, p.lo, p.hi) == ("b", 20, 1.0, 1.0, 1.0)
    lines = closing_statement([b, a], n=2000)
    assert "wins on answers too" in lines[1]
    assert "100% of 1 pairs" in lines[2] and "is also the answer winner" in lines[2]
    assert lines[-1].startswith("conclusion: the retrieval winner also wins")


def test_a_retrieval_win_that_does_not_show_in_answers_is_said_in_words() -> None:
    a = _run("a", 0.9, [1, 0] * 10)  # 50%
    b = _run("b", 0.8, [1] * 20)  # 100%: the retrieval runner-up answers better
    c = _run("c", 0.7, [0, 1] * 10)  # 50% on the other half
    lines = closing_statement([a, b, c], n=2000)
    vs_b = next(ln for ln in lines if ln.strip().startswith("vs b"))
    vs_c = next(ln for ln in lines if ln.strip().startswith("vs c"))
    assert "-0.500" in vs_b and "LOSES on answers" in vs_b
    assert "+0.000" in vs_c and "ties on answers" in vs_c
    # retrieval order a > b > c; live accuracy 0.5, 1.0, 0.5: pair (a,b) discordant,
    # (b,c) concordant, (a,c) tied and not counted -> 1 of 2
    assert "50% of 2 pairs" in lines[-2] and "is not the answer winner" in lines[-2]
    assert "does NOT clearly show" in lines[-1]


def test_pairs_use_only_the_questions_both_graded() -> None:
    a = AnswerRun("a", 0.9, {"q1": 1.0, "q2": 1.0, "q3": 0.0}, {})
    b = AnswerRun("b", 0.5, {"q2": 0.0, "q3": 0.0, "q4": 1.0}, {})
    _, (p,) = compare_to_winner([a, b], n=500)
    assert p.n == 2 and p.diff == pytest.approx(0.5)  # q2: 1-0, q3: 0-0


def test_summary_rows_hold_accuracy_tax_and_diagnoses_best_retrieval_first() -> None:
    rows = summary_rows([_run("low", 0.1, [1, 0, 0, 0], [1, 1, 0, 0]),
                         _run("high", 0.9, [1, 1, 1, 0], [1, 1, 1, 1])])
    assert [r["configuration"] for r in rows] == ["high", "low"]
    assert rows[0]["live"] == 0.75 and rows[0]["oracle"] == 1.0
    assert rows[0]["tax"] == pytest.approx(0.25)
    assert rows[1]["tax"] == pytest.approx(0.25) and rows[1]["n_oracle_fail"] == 2
    assert rows[0]["n"] == 4 and rows[0]["n_ok"] == 3
