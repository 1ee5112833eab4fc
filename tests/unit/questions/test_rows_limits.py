"""Logs are read as a stream with a per-row and a per-field limit (issue 44): a single huge
line (a 300 MB line compresses to a small gzip) is refused after reading at most the limit,
with one line naming the file and the row. Limits are set small by the test; memory is bounded
by the limit logic, checked by recording what the reader asks the file for."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sweep.common.errors import SweepError
from sweep.questions import rows as rows_mod
from sweep.questions.rows import Limits, read_rows

SMALL = Limits(row=200, field=80, document=2_000)


class _Spy:
    """A text file that records the largest piece it handed out and refuses an unbounded
    read."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.largest = fh, 0

    def readline(self, size: int = -1) -> str:
        assert size > 0, "a log line is read without a bound"
        line = self.fh.readline(size)
        self.largest = max(self.largest, len(line))
        return line

    def read(self, size: int = -1) -> str:
        assert size > 0, "a log is read whole"
        return self.fh.read(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fh, name)

    def __enter__(self) -> _Spy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[_Spy]:
    made: list[_Spy] = []
    real = rows_mod.open_text

    def opened(path: Path) -> _Spy:
        made.append(_Spy(real(path)))
        return made[-1]

    monkeypatch.setattr(rows_mod, "open_text", opened)
    return made


def _gz(path: Path, text: str) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(text)
    return path


@pytest.mark.parametrize(("name", "body", "line"), [
    ("huge.txt.gz", "ok question\n" + "x" * 100_000 + "\nlast\n", 2),
    ("huge.csv.gz", "question,id\nfine,1\n" + "y" * 100_000 + ",2\n", 3),
    ("huge.jsonl.gz", '{"question": "fine"}\n{"question": "' + "z" * 100_000 + '"}\n', 2),
    ("huge.log", "a\nb\n" + "w" * 100_000, 3),  # no final newline, not compressed
])
def test_a_huge_row_is_refused_after_reading_at_most_the_limit(
        tmp_path: Path, spy: list[_Spy], name: str, body: str, line: int) -> None:
    path = tmp_path / name
    if name.endswith(".gz"):
        _gz(path, body)
    else:
        path.write_text(body, encoding="utf-8")
    with pytest.raises(SweepError) as err:
        list(read_rows(path, limits=SMALL))
    message = str(err.value)
    assert f"{path}:{line}: the row is longer than 200 characters" in message
    assert "\n" not in message
    assert spy[-1].largest <= SMALL.row + 1  # never more than the limit held at once


def test_a_csv_row_over_several_lines_counts_as_one_row(tmp_path: Path) -> None:
    cell = "\n".join(["part"] * 60)  # 60 short lines inside one quoted cell: ~300 chars
    path = tmp_path / "multi.csv"
    path.write_text(f'question,id\n"{cell}",1\n', encoding="utf-8")
    with pytest.raises(SweepError, match="the row is longer than 200 characters"):
        list(read_rows(path, limits=Limits(row=200, field=10_000)))


@pytest.mark.parametrize(("name", "body", "where"), [
    ("f.csv", "question,id\n" + "q" * 120 + ",1\n",
     "f.csv:2: question: 120 characters, more than the per-field limit of 80"),
    ("f.jsonl", json.dumps({"question": "ok", "id": "i" * 120}) + "\n",
     "f.jsonl:1: id: 120 characters, more than the per-field limit of 80"),
    ("f.txt", "t" * 120 + "\n", "f.txt:1: question: 120 characters"),
])
def test_a_field_over_its_limit_names_file_row_and_field(tmp_path: Path, name: str, body: str,
                                                         where: str) -> None:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    with pytest.raises(SweepError) as err:
        list(read_rows(path, limits=SMALL))
    assert where in str(err.value)


def test_an_otel_export_over_the_document_limit_is_refused(tmp_path: Path) -> None:
    span = {"traceId": "t", "spanId": "s", "attributes": []}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    path = tmp_path / "trace.json"
    path.write_text("\n".join([json.dumps(doc)] * 40) + "\n", encoding="utf-8")
    with pytest.raises(SweepError, match="longer than 2,000 characters"):
        list(read_rows(path, limits=SMALL))


def test_rows_within_the_limits_read_as_before(tmp_path: Path) -> None:
    path = tmp_path / "ok.csv"
    path.write_text("question,id\nhow do I reset it?,7\n\"two, with comma\",8\n",
                    encoding="utf-8")
    got = [(r.question, r.row_id) for r in read_rows(path, limits=SMALL)]
    assert got == [("how do I reset it?", "7"), ("two, with comma", "8")]
