"""Reading logs: formats, gzip, column mapping and guessing, times, and bad input as one line
naming the file and line."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.common.registry import Entry
from sweep.questions.rows import Columns, iso_time, pick_columns, question_of, read_rows


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_columns_guessed_and_values_read(tmp_path: Path) -> None:
    p = write(tmp_path / "log.csv", "Timestamp,User Query,rating,session\n"
              "2024-05-01T10:00:00Z,How do I reset it?,1,s1\n"
              "1714557600,\"Quoted, with comma\",,s2\n")
    picked: list[Columns] = []
    rows = list(read_rows(p, chosen=picked.append))
    assert picked == [Columns("User Query", None, "Timestamp", "rating")]
    assert [r.question for r in rows] == ["How do I reset it?", "Quoted, with comma"]
    assert rows[0].time == "2024-05-01T10:00:00Z"
    assert rows[1].time == "2024-05-01T10:00:00Z"  # 1714557600 s is the same instant
    assert rows[0].feedback == ["1"] and rows[1].feedback == []
    assert rows[0].source_ref == "log.csv:2" and rows[0].source == "log"


def test_tsv_gzip_and_explicit_columns(tmp_path: Path) -> None:
    p = tmp_path / "log.tsv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("a\tb\tc\nhello there\tx1\tdown\n")
    rows = list(read_rows(p, columns=Columns(question="a", id="b", feedback="c")))
    assert len(rows) == 1
    assert (rows[0].question, rows[0].row_id, rows[0].feedback) == ("hello there", "x1", ["down"])
    assert rows[0].source_ref == "log.tsv.gz:2 (id x1)"


def test_jsonl_with_nested_keys(tmp_path: Path) -> None:
    lines = [{"request": {"query": "what is bm25"}, "ts": 1714557600000, "feedback": "👎"},
             {"request": {"query": "second one"}, "ts": None}]
    p = write(tmp_path / "log.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    rows = list(read_rows(p, columns=Columns(question="request.query")))
    assert [r.question for r in rows] == ["what is bm25", "second one"]
    assert rows[0].time == "2024-05-01T10:00:00Z"  # milliseconds
    assert rows[0].feedback == ["👎"] and rows[1].time is None


def test_text_log_with_and_without_times(tmp_path: Path) -> None:
    p = write(tmp_path / "q.txt", "2024-05-01 10:00:00 | first question\n\n"
              "second question\n2024-05-01T11:00:00Z\tthird\n")
    rows = list(read_rows(p))
    assert [(r.question, r.time) for r in rows] == [
        ("first question", "2024-05-01T10:00:00Z"), ("second question", None),
        ("third", "2024-05-01T11:00:00Z")]
    assert rows[1].source_ref == "q.txt:3"


@pytest.mark.parametrize(("name", "text", "columns", "message"), [
    ("empty.csv", "", Columns(), "empty.csv: empty file"),
    ("head.csv", "question,rating\n", Columns(), "head.csv: no rows under the header"),
    ("blank.txt", "\n\n", Columns(), "blank.txt: empty log"),
    ("cols.csv", "query,rating\nq,1\n", Columns(question="prompt"),
     "--question-column 'prompt' is not a column (columns: query, rating)"),
    ("none.csv", "alpha,beta\nq,1\n", Columns(), "no question column (columns: alpha, beta)"),
    ("width.csv", "question,rating\nq,1,extra\n", Columns(), "width.csv:2: 3 fields"),
    ("time.csv", "question,time\nq,yesterday\n", Columns(), "time.csv:2: time: 'yesterday'"),
    ("bad.jsonl", '{"question": "a"}\n{"question": \n', Columns(), "bad.jsonl:2: not JSON"),
    ("type.jsonl", '{"question": 3}\n', Columns(), "type.jsonl:1: question: must be a string"),
    ("list.jsonl", '[1, 2]\n', Columns(), "list.jsonl:1: a line must be a JSON object"),
])
def test_bad_input_is_one_line_naming_file_and_line(tmp_path: Path, name: str, text: str,
                                                    columns: Columns, message: str) -> None:
    p = write(tmp_path / name, text)
    with pytest.raises(SweepError) as exc:
        list(read_rows(p, columns=columns))
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_missing_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="no such file"):
        list(read_rows(tmp_path / "nope.csv"))
    p = tmp_path / "latin.txt"
    p.write_bytes("caf\xe9 question\n".encode("latin-1"))
    with pytest.raises(SweepError, match=r"latin\.txt: not UTF-8"):
        list(read_rows(p))
    g = tmp_path / "cut.csv.gz"
    body = "question\n" + "".join(f"question number {i * 7919 % 100003}\n" for i in range(5000))
    g.write_bytes(gzip.compress(body.encode())[:2000])
    with pytest.raises(SweepError, match=r"cut\.csv\.gz: cannot read"):
        list(read_rows(g))


def test_pick_columns_refuses_one_column_for_two_roles() -> None:
    with pytest.raises(SweepError, match="two roles"):
        pick_columns(["query", "rating"], Columns(question="query", feedback="query"), "f")
    assert pick_columns(["text_only"], Columns(), "f").question == "text_only"


def test_iso_time_forms() -> None:
    assert iso_time("2024-05-01T12:00:00+02:00") == "2024-05-01T10:00:00Z"
    assert iso_time("2024-05-01") == "2024-05-01T00:00:00Z"
    assert iso_time(0) == "1970-01-01T00:00:00Z"
    assert iso_time("  ") is None
    with pytest.raises(ValueError):
        iso_time("not a time")


def test_question_of_inputs() -> None:
    assert question_of({"question": "q1", "k": 3}) == "q1"
    assert question_of({"x": "only string"}) == "only string"
    assert question_of({"messages": [{"role": "system", "content": "s"},
                                     {"role": "user", "content": "hi?"}]}) == "hi?"
    assert question_of('{"query": "from json"}') == "from json"
    assert question_of({"a": "one", "b": "two"}) is None


def _peak_reading(path: Path, rows: int) -> tuple[int, int]:
    line = "2024-05-01T10:00:00Z," + "how do I configure the thing number %d " * 3 + "\n"
    with path.open("w", encoding="utf-8") as fh:
        fh.write("time,question\n")
        for i in range(rows):
            fh.write(line.replace("%d", str(i % 97)))
    tracemalloc.start()
    n = sum(1 for _ in read_rows(path))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert n == rows
    return peak, path.stat().st_size


def test_reading_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    """Rows are streamed: four times the file, about the same peak of Python allocations,
    and a small fraction of the file (so a 2 GB log needs no 2 GB; tests/e2e reads 40 MB)."""
    small, _ = _peak_reading(tmp_path / "small.csv", 1_500)
    large, size = _peak_reading(tmp_path / "large.csv", 6_000)
    assert large < small * 1.5 + 16_384, (small, large)
    assert large < size / 10, (large, size)


def test_a_log_format_is_one_entry(tmp_path) -> None:
    """A format registered in LOG_FORMATS alone is detected from its suffix and read."""
    from sweep.questions import rows as r

    def pipe_rows(path, fh, fmt, columns, chosen):
        for n, line in enumerate(fh, 1):
            question, _, when = line.rstrip("\n").partition("|")
            yield r.Row(question=question, source="log", source_ref=f"{path.name}:{n}",
                        time=r.iso_time(when) if when else None)

    log = tmp_path / "asked.pipe"
    log.write_text("how do I reset?|2026-01-02T03:04:05Z\nwhere is the manual?|\n")
    with r.LOG_FORMATS.added(Entry("pipe", r.LogFormat("pipe", pipe_rows, ("pipe",)))):
        assert r.detect_format(log) == "pipe"
        got = [(row.question, row.source_ref, row.time) for row in r.read_rows(log)]
    assert got == [("how do I reset?", "asked.pipe:1", "2026-01-02T03:04:05Z"),
                   ("where is the manual?", "asked.pipe:2", None)]
    assert "pipe" not in r.LOG_FORMATS  # the block's toy is gone after it
    # the shared suffixes: an OpenTelemetry export is told from a plain JSONL by its content
    otel = tmp_path / "spans.json"
    otel.write_text('{"resourceSpans": []}\n')
    plain = tmp_path / "rows.json"
    plain.write_text('{"question": "a"}\n')
    assert (r.detect_format(otel), r.detect_format(plain)) == ("otel", "jsonl")
