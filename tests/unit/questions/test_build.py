"""The queue end to end without a model: re-import adds counts and never duplicates,
decisions are respected, the file format is the agreed one and a bad queue is one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sweep.common.errors import SweepError
from sweep.questions.build import build_queue, summary
from sweep.questions.merge import cid_of
from sweep.questions.queue import (
    decisions_path,
    read_decisions,
    read_queue,
    report_path,
    write_queue,
)
from sweep.questions.rows import Row

FIELDS = ["cid", "question", "count", "source", "source_ref", "reason", "priority",
          "feedback", "negative_count", "trace_id", "variants", "first_seen", "last_seen",
          "retrieved", "passage"]


def rows(*qs: str, fb: str | None = None) -> list[Row]:
    return [Row(question=q, source="log", source_ref=f"log.csv:{i + 2}",
                feedback=[fb] if fb else []) for i, q in enumerate(qs)]


def import_once(queue: Path, new: list[Row], **kw: object) -> dict:
    built = build_queue(new, read_queue(queue), read_decisions(queue), **kw)  # type: ignore[arg-type]
    write_queue(queue, built.queue)
    return built.report


def lines(queue: Path) -> list[dict]:
    return [json.loads(x) for x in queue.read_text(encoding="utf-8").splitlines()]


def test_queue_lines_have_the_agreed_fields(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    import_once(q, rows("How do I X?", "how do i x", "Y?"))
    out = lines(q)
    assert [list(o) for o in out] == [FIELDS, FIELDS]
    assert out[0]["cid"] == cid_of("how do i x") and out[0]["count"] == 2
    assert out[0]["priority"] == 1 and out[1]["priority"] == 2
    assert out[0]["variants"] == ["how do i x"] and out[0]["feedback"] is None


def test_reimport_sums_counts_and_never_duplicates(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    import_once(q, rows("alpha?", "beta?", "beta?"))
    report = import_once(q, rows("Alpha", "gamma", "beta", fb="down"))
    out = {o["cid"]: o for o in lines(q)}
    assert len(out) == 3
    assert out[cid_of("alpha")]["count"] == 2
    assert out[cid_of("beta")]["count"] == 3 and out[cid_of("beta")]["negative_count"] == 1
    assert lines(q)[0]["cid"] == cid_of("beta")  # negative now: first
    assert report["merged_into_queue"] == 2 and report["candidates_new"] == 1
    assert report["candidates_before"] == 2 and report["queue_size"] == 3


def test_decisions_labelled_rejected_never_come_back_skipped_go_last(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    import_once(q, rows("labelled one", "rejected one", "skipped one", "skipped one", "plain"))
    with decisions_path(q).open("w", encoding="utf-8") as fh:
        for cid, d in [(cid_of("labelled one"), "skipped"), (cid_of("labelled one"), "labelled"),
                       (cid_of("rejected one"), "rejected"), (cid_of("skipped one"), "skipped")]:
            fh.write(json.dumps({"cid": cid, "decision": d, "qid": None,
                                 "at": "2024-05-01T00:00:00Z", "reason": None}) + "\n")
    report = import_once(q, rows("Labelled one?", "rejected one", "skipped one", "new one"))
    out = [o["question"] for o in lines(q)]
    assert out == ["new one", "plain", "skipped one"]
    assert lines(q)[-1]["count"] == 3
    assert report["skipped_decided"] == 2 and report["dropped_decided"] == 2
    assert "skipped on the label page" in lines(q)[-1]["reason"]


def test_near_duplicate_of_a_decided_candidate_is_skipped(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    import_once(q, rows("reset my password", "ship to canada"))
    decisions_path(q).write_text(json.dumps({"cid": cid_of("reset my password"),
                                             "decision": "labelled"}) + "\n", encoding="utf-8")
    vectors = {"reset my password": [1.0, 0.0], "ship to canada": [0.0, 1.0],
               "reset the password": [0.99, 0.14]}

    def embed(texts: list[str]) -> np.ndarray:
        v = np.asarray([vectors[t] for t in texts], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    report = import_once(q, rows("reset the password"), embed=embed, near_threshold=0.9)
    assert [o["question"] for o in lines(q)] == ["ship to canada"]
    assert report["skipped_decided"] == 1 and report["merged_near"] == 1


def test_ratings_threshold_is_reported_and_summary_lines(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    new = [Row("a", "log", "f:2", feedback=["1"]), Row("b", "log", "f:3", feedback=["5"]),
           Row("c", "log", "f:4", feedback=["huh"])]
    report = import_once(q, new)
    assert report["feedback"]["negative_below"] == 1.0
    assert report["feedback"]["unrecognised"] == 1
    assert lines(q)[0]["question"] == "a" and lines(q)[0]["feedback"] == "negative"
    report["priority"]["steps"] = {"disagreement": {"ran": False, "why_not": "no --corpus"},
                                   "coverage": {"ran": False, "why_not": "no --corpus"}}
    text = "\n".join(summary(report))
    assert "read 3 rows" in text and "negative at or below 1" in text


@pytest.mark.parametrize(("content", "message"), [
    ("not json\n", "q.jsonl:1: not JSON"),
    ('{"cid": "c-1", "question": "a", "count": 1, "source": "web"}\n', "q.jsonl:1: source"),
    ('{"cid": "c-1", "question": "a", "count": "2", "source": "log"}\n', "q.jsonl:1: count"),
    ('{"cid": "c-1", "question": "a", "count": 1, "source": "log"}\n'
     '{"cid": "c-1", "question": "a", "count": 1, "source": "log"}\n', "q.jsonl:2: cid"),
])
def test_a_damaged_queue_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    q = tmp_path / "q.jsonl"
    q.write_text(content, encoding="utf-8")
    with pytest.raises(SweepError, match=message):
        read_queue(q)


def test_decisions_file_last_wins_and_cut_last_line_is_tolerated(tmp_path: Path) -> None:
    q = tmp_path / "q.jsonl"
    decisions_path(q).write_text('{"cid": "c-1", "decision": "skipped"}\n'
                                 '{"cid": "c-1", "decision": "labelled"}\n'
                                 '{"cid": "c-2", "decis', encoding="utf-8")
    assert read_decisions(q) == {"c-1": "labelled"}
    decisions_path(q).write_text('{"cid": "c-1", "decision": "maybe"}\n', encoding="utf-8")
    with pytest.raises(SweepError, match=r"decisions\.jsonl:1: decision"):
        read_decisions(q)
    assert decisions_path(q).name == "q.decisions.jsonl"
    assert report_path(q).name == "q.import_report.json"
