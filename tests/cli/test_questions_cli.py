"""`sweep questions import` through the real CLI (no model: --no-near): the queue and report
files, re-import, and bad input as one line with a non-zero exit and nothing half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import DEMO, run_cli

LOG = ("timestamp,user_query,thumbs\n"
       "2024-05-01T10:00:00Z,How do I reset my password?,down\n"
       "2024-05-01T10:05:00Z,how do i reset my password,\n"
       "2024-05-02T09:30:00Z,Refund to card 4111 1111 1111 1111?,up\n"
       "2024-05-03T12:00:00Z,Do you ship to Canada?,\n"
       "2024-05-03T12:00:00Z,Do you ship to Canada?,\n"
       "2024-05-03T12:00:00Z,Do you ship to Canada?,\n")


def sweep(*args: str, cwd: Path) -> tuple[int, str, str]:
    res = run_cli("-m", "sweep.cli", "questions", *args, cwd=cwd, timeout=300)
    return res.returncode, res.stdout, res.stderr


def test_import_writes_queue_and_report_then_adds_to_it(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text(LOG, encoding="utf-8")
    q = tmp_path / "queue.jsonl"
    code, out, err = sweep("import", str(log), "--out", str(q), "--no-near", cwd=tmp_path)
    assert code == 0, err
    lines = [json.loads(x) for x in q.read_text(encoding="utf-8").splitlines()]
    assert [(c["question"], c["count"], c["negative_count"]) for c in lines] == [
        ("How do I reset my password?", 2, 1), ("Do you ship to Canada?", 3, 0),
        ("Refund to card [card]?", 1, 0)]
    report = json.loads((tmp_path / "queue.import_report.json").read_text(encoding="utf-8"))
    assert report["rows_read"] == 6 and report["merged_exact"] == 3
    assert report["redactions"]["card"] == 1
    assert report["sources"][0]["columns"] == {"question": "user_query", "id": None,
                                               "time": "timestamp", "feedback": "thumbs"}
    assert report["priority"]["steps"]["disagreement"] == {"ran": False,
                                                           "why_not": "no --corpus"}
    assert "read 6 rows" in out and "1 card" in out
    assert "4111" not in q.read_text(encoding="utf-8") + json.dumps(report)

    code, _, err = sweep("import", str(log), "--out", str(q), "--no-near", cwd=tmp_path)
    assert code == 0, err
    again = [json.loads(x) for x in q.read_text(encoding="utf-8").splitlines()]
    assert [c["count"] for c in again] == [4, 6, 2]


@pytest.mark.parametrize(("setup", "args", "message"), [
    (lambda d: (d / "e.csv").write_text("", encoding="utf-8"), ["{d}/e.csv"],
     "e.csv: empty file"),
    (lambda d: (d / "c.csv").write_text("query,rating\nq,1\n", encoding="utf-8"),
     ["{d}/c.csv", "--question-column", "text"],
     "--question-column 'text' is not a column (columns: query, rating)"),
    (lambda d: None, ["{d}/missing.csv"], "missing.csv: no such file"),
    (lambda d: (d / "b.jsonl").write_text('{"question": "a"}\n{oops\n', encoding="utf-8"),
     ["{d}/b.jsonl"], "b.jsonl:2: not JSON"),
    (lambda d: None, ["--mlflow-experiment", "x", "--tracking-uri", "sqlite:///{d}/none.db"],
     "no MLflow store at"),
    (lambda d: None, [], "give log files or --mlflow-experiment"),
    (lambda d: (d / "l.csv").write_text("query\nq\n", encoding="utf-8"),
     ["{d}/l.csv", "--against-sweep", "latest"], "--against-sweep needs --corpus DIR"),
    (lambda d: (d / "l.csv").write_text("query\nq\n", encoding="utf-8"),
     ["{d}/l.csv", "--corpus", "{demo}", "--against-sweep", "latest",
      "--sweep-tracking-uri", "sqlite:///{d}/none.db"], "no MLflow store at"),
])
def test_bad_input_one_line_nonzero_and_queue_untouched(tmp_path: Path, setup, args, message
                                                        ) -> None:
    setup(tmp_path)
    q = tmp_path / "queue.jsonl"
    q.write_text('{"cid": "c-1", "question": "kept", "count": 1, "source": "log"}\n',
                 encoding="utf-8")
    before = q.read_bytes()
    code, _, err = sweep("import", *[a.replace("{d}", str(tmp_path)).replace("{demo}", str(DEMO / "corpus"))
                             for a in args],
                           "--out", str(q), "--no-near", cwd=tmp_path)
    assert code != 0
    assert message in err, err
    assert "Traceback" not in err
    assert len([x for x in err.splitlines() if x.startswith("error:")]) == 1
    assert q.read_bytes() == before
    assert not (tmp_path / "queue.import_report.json").exists()
    assert not list(tmp_path.glob(".queue.jsonl.*"))  # no temporary file left behind
