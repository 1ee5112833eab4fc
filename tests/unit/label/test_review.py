"""`sweep label --review`: accept, re-select and drop on a queue written by a real rebase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import label_settings
from sweep.cli.golden import cmd_golden
from sweep.common.errors import SweepError
from sweep.data.golden import load_golden
from sweep.label import review
from sweep.label.app import build_app

REFUND = "You can return most products within 30 days of delivery for a full refund."
SHIPPING = "Orders over 50 euros ship free of charge to every country in the European Union."
WARRANTY = "The standard warranty period is two years for devices and one year for accessories."


def rebased(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A rebase with one moved item, one whose proposal lacks its mention (unplaced) and one
    removed: (new corpus, out, queue)."""
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "policy.md").write_text(f"# Policy\n\n{REFUND}\n\n## Shipping\n\n{SHIPPING}\n\n"
                                   f"## Warranty\n\n{WARRANTY}\n")
    (new / "policy.md").write_text(f"# Policy\n\nNew intro.\n\n{REFUND.replace('30', '14')}\n\n"
                                   f"## Warranty\n\n{WARRANTY}\n")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(x) for x in [
        {"qid": "q1", "question": "refund window?", "answer_must_mention": ["30 days"],
         "evidence": [{"path": "policy.md", "quote": REFUND}]},
        {"qid": "q2", "question": "free shipping?", "evidence": [{"path": "policy.md",
                                                                    "quote": SHIPPING}]},
        {"qid": "q3", "question": "warranty?", "evidence": [{"path": "policy.md",
                                                               "quote": WARRANTY}]}]) + "\n")
    out = tmp_path / "rebased.jsonl"
    cmd_golden(["rebase", "--golden", str(golden), "--old", str(old), "--new", str(new),
                "--out", str(out), f"cache.dir={tmp_path}/cache"], say=lambda _: None)
    return new, out, tmp_path / "rebased.review.jsonl"


def app_for(new: Path, out: Path, queue: Path):
    app = build_app(label_settings(new, out), say=lambda _: None)
    app.review_queue = queue
    return app


def digest(app, qid: str) -> str:
    return next(e.digest for e in app.store.entries() if e.qid == qid)


def test_the_queue_names_its_golden_file_corpus_and_pending_items(tmp_path: Path) -> None:
    new, out, queue = rebased(tmp_path)
    lines = review.load_queue(queue)
    assert [(q["qid"], q["status"]) for q in lines] == [("q1", "unplaced"), ("q2", "removed")]
    assert review.queue_paths(lines, queue) == (str(out.resolve()), str(new.resolve()))
    assert lines[0]["mentions_missing"] == ["30 days"]
    assert lines[0]["passages"][0]["new"]["text"] == REFUND.replace("30", "14")


def test_accept_marks_the_proposal_reviewed_and_logs_it(tmp_path: Path) -> None:
    new, out, queue = rebased(tmp_path)
    app = app_for(new, out, queue)
    assert [i.qid for i in load_golden(out).pending] == ["q1", "q2"]
    with pytest.raises(SweepError, match="answer_must_mention '30 days' is not in the proposed"):
        review.decide(app, queue, "q1", {"digest": digest(app, "q1"), "decision": "accept"})
    # The reviewer fixes the expected answer on the line (as the editor would), then accepts.
    entry = next(e for e in app.store.entries() if e.qid == "q1")
    rebase = {**entry.obj["rebase"], "mentions_missing": []}
    app.store.replace("q1", entry.digest, {**entry.obj, "answer_must_mention": ["14 days"],
                                           "rebase": rebase})
    result = review.decide(app, queue, "q1", {"digest": digest(app, "q1"), "decision": "accept"})
    assert result["decision"] == "accepted"
    obj = json.loads(next(e.raw for e in app.store.entries() if e.qid == "q1"))
    assert obj["rebase"]["status"] == "accepted" and obj["rebase"]["pending_was"] == "unplaced"
    assert obj["rebase"]["review"]["decision"] == "accepted"
    assert obj["evidence"] == [{"path": "policy.md", "quote": REFUND.replace("30", "14")}]
    golden = load_golden(out)
    assert [i.qid for i in golden.items] == ["q1", "q3"]  # now scored
    logged = [json.loads(x) for x in review.decisions_path(queue).read_text().splitlines()]
    assert [(x["qid"], x["decision"]) for x in logged] == [("q1", "accepted")]
    with pytest.raises(SweepError, match="not waiting for review"):
        review.decide(app, queue, "q1", {"digest": digest(app, "q1"), "decision": "accept"})


def test_a_removed_passage_cannot_be_accepted_only_reselected_or_dropped(tmp_path: Path
                                                                        ) -> None:
    new, out, queue = rebased(tmp_path)
    app = app_for(new, out, queue)
    with pytest.raises(SweepError, match="no proposal"):
        review.decide(app, queue, "q2", {"digest": digest(app, "q2"), "decision": "accept"})
    review.decide(app, queue, "q2", {"digest": digest(app, "q2"), "decision": "drop"})
    assert "q2" not in app.store.qids()
    logged = json.loads(review.decisions_path(queue).read_text().splitlines()[-1])
    assert logged["decision"] == "dropped" and logged["item"]["question"] == "free shipping?"


def test_reselect_through_the_editor_writes_the_new_span_and_marks_it_reviewed(tmp_path: Path
                                                                              ) -> None:
    new, out, queue = rebased(tmp_path)
    app = app_for(new, out, queue)
    text = app.by_id["policy"].text
    start = text.index("New intro.")
    app.save_edit("q2", digest(app, "q2"), {
        "question": "free shipping?", "evidence": [{"doc_id": "policy", "start": start,
                                                    "end": start + len("New intro.")}]})
    obj = json.loads(next(e.raw for e in app.store.entries() if e.qid == "q2"))
    assert obj["evidence"] == [{"path": "policy.md", "quote": "New intro."}]
    assert obj["rebase"]["status"] == "reselected"
    assert obj["rebase"]["passages"][0]["old"]["text"] == SHIPPING  # the old text is kept
    logged = json.loads(review.decisions_path(queue).read_text().splitlines()[-1])
    assert (logged["qid"], logged["decision"]) == ("q2", "reselected")
    # The corpus record the rebase wrote is kept: it already holds every document.
    from sweep.data.drift import read_record

    assert read_record(out)["written_by"] == "sweep golden rebase"


def test_the_page_shows_old_and_proposed_text_side_by_side(tmp_path: Path) -> None:
    new, out, queue = rebased(tmp_path)
    app = app_for(new, out, queue)
    html = review.review_page(app, queue, "n0nce")
    assert "2</span> of 2 items to decide" in html
    assert REFUND in html and REFUND.replace("30", "14") in html
    assert "no counterpart found" in html
    # q1's expected answer changed (30 -> 14 days) and q2 has no proposal: nothing to accept.
    assert html.count('class="accept primary"') == 0
    assert '/?edit=q2' in html


def test_a_broken_queue_line_is_one_line_naming_the_file_and_line(tmp_path: Path) -> None:
    queue = tmp_path / "q.review.jsonl"
    queue.write_text('{"qid": "a", "passages": []}\n{"qid": 3}\n')
    with pytest.raises(SweepError, match=r"q.review.jsonl:2: qid: each line must be an object"):
        review.load_queue(queue)


def test_the_first_save_records_the_corpus_and_a_moved_corpus_is_warned_at_start(
        tmp_path: Path) -> None:
    from sweep.data.drift import read_record

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text(f"# A\n\n{REFUND}\n")
    golden = tmp_path / "g.jsonl"
    app = build_app(label_settings(corpus, golden), say=lambda _: None)
    start = app.by_id["a"].text.index(REFUND)
    app.save_new({"question": "refund window?",
                  "evidence": [{"doc_id": "a", "start": start, "end": start + len(REFUND)}]})
    record = read_record(golden)
    assert record["written_by"] == "sweep label" and set(record["documents"]) == {"a.md"}
    (corpus / "a.md").write_text(f"# A\n\nEdited.\n\n{REFUND}\n")
    (corpus / "b.md").write_text("# B\n\nnew\n")
    said: list[str] = []
    app = build_app(label_settings(corpus, golden), say=said.append)
    assert any(s.startswith("warning: 1 document changed since these labels were made") for s in
               said)
    start = app.by_id["b"].text.index("new")
    app.save_new({"question": "what is new?",
                  "evidence": [{"doc_id": "b", "start": start, "end": start + 3}]})
    # b.md is added; a.md keeps the fingerprint it had when its label was made.
    after = read_record(golden)["documents"]
    assert set(after) == {"a.md", "b.md"} and after["a.md"] == record["documents"]["a.md"]
