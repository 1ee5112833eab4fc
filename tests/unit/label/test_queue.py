"""Working a labelling queue (label/queue.py): order, skip to the back, decisions, restarts,
two claimers; then the same through real HTTP requests to a real server (two tabs)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_label import QUOTE_30, make_app, request, span_of

from sweep.common.errors import SweepError
from sweep.data.golden import load_golden
from sweep.label.app import LabelApp
from sweep.label.queue import (
    CLAIM_TTL_S,
    ClaimConflict,
    LabelQueue,
    abstentions_path,
    decisions_path,
    read_decisions,
)
from sweep.label.server import LabelServer, open_queue
from sweep.label.store import GoldenFile

TAB_A, TAB_B = "tab-aaaaaaaa", "tab-bbbbbbbb"


def cid(question: str) -> str:
    return "c-" + hashlib.sha256(question.encode()).hexdigest()[:12]


def candidate(question: str, priority: int, **extra: Any) -> dict[str, Any]:
    """A queue line in the agreed format (issue 27), written by hand."""
    return {"cid": cid(question), "question": question, "count": 1, "source": "log",
            "source_ref": f"log.csv:{priority + 1}", "reason": f"asked {priority} times",
            "priority": priority, "feedback": None, "negative_count": 0, "trace_id": None,
            "variants": [], "first_seen": None, "last_seen": None, "retrieved": [],
            "passage": None, **extra}


QUESTIONS = ["how long can i return a kettle", "how long is the warranty",
             "do you ship to norway", "what is the meaning of life"]


def write_queue(path: Path, questions: list[str] = QUESTIONS, **extra: Any) -> Path:
    path.write_text("".join(json.dumps(candidate(q, i + 1, **extra)) + "\n"
                            for i, q in enumerate(questions)), encoding="utf-8")
    return path


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def work(tmp_path: Path) -> tuple[Path, GoldenFile]:
    return write_queue(tmp_path / "q.jsonl"), GoldenFile(tmp_path / "golden.jsonl")


def fake_write(golden: GoldenFile, qid: str, question: str = "x") -> Any:
    def write(extra: dict[str, Any]) -> dict[str, Any]:
        golden.append({"qid": qid, "question": question, "relevant_doc_ids": ["d"], **extra})
        return {"qid": qid}
    return write


def next_question(q: LabelQueue, tab: str = TAB_A) -> str | None:
    c = q.claim(tab)["candidate"]
    return None if c is None else c["question"]


# --------------------------------------------------------------------------- the store


def test_queue_order_and_claims_are_stable(work: tuple[Path, GoldenFile]) -> None:
    q = LabelQueue(*work)
    first = q.claim(TAB_A)
    assert first["candidate"]["question"] == QUESTIONS[0]
    assert first["candidate"]["reason"] == "asked 1 times"
    # asking again (a reload of the same tab) returns the same claim, not the next one
    assert next_question(q) == QUESTIONS[0]
    assert first["counts"] == {"golden_items": 0, "target": 50, "labelled": 0, "rejected": 0,
                               "skipped": 0, "left": 4, "queued": 4, "held_by_other_tabs": 0}


def test_two_claimers_never_get_the_same_candidate(work: tuple[Path, GoldenFile]) -> None:
    q = LabelQueue(*work)
    got = {tab: next_question(q, tab) for tab in (TAB_A, TAB_B, "tab-cccccccc", "tab-dddddddd")}
    assert sorted(got.values()) == sorted(QUESTIONS)
    assert next_question(q, "tab-eeeeeeee") is None  # all four held


def test_concurrent_claims_from_threads_are_distinct(work: tuple[Path, GoldenFile]) -> None:
    q = LabelQueue(*work)
    got: list[str | None] = []
    barrier = threading.Barrier(4)

    def run(i: int) -> None:
        barrier.wait()
        got.append(next_question(q, f"tab-thread-{i}"))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(x for x in got if x) == sorted(QUESTIONS)


def test_skip_goes_to_the_back_in_skip_order(work: tuple[Path, GoldenFile]) -> None:
    q = LabelQueue(*work)
    c0 = q.claim(TAB_A)["candidate"]
    q.skip(TAB_A, c0["cid"])
    c1 = q.claim(TAB_A)["candidate"]
    assert c1["question"] == QUESTIONS[1]
    q.skip(TAB_A, c1["cid"])
    # left: 2, 3 (fresh), then 0, 1 (skipped, in the order skipped)
    order = []
    for _ in range(4):
        c = q.claim(TAB_A)["candidate"]
        order.append(QUESTIONS.index(c["question"]))
        q.skip(TAB_A, c["cid"])
    assert order == [2, 3, 0, 1]
    assert q.counts()["skipped"] == 4 and q.counts()["left"] == 4


def test_labelled_and_rejected_never_come_back_and_survive_a_restart(
        work: tuple[Path, GoldenFile]) -> None:
    path, golden = work
    q = LabelQueue(path, golden)
    c0 = q.claim(TAB_A)["candidate"]
    saved = q.save(TAB_A, c0["cid"], fake_write(golden, "q001", c0["question"]))
    assert saved["queue"]["labelled"] == 1
    c1 = q.claim(TAB_A)["candidate"]
    out = q.reject(TAB_A, c1["cid"], "unanswerable", "the corpus has no warranty for kettles")
    assert out["abstention"] == "abstain-" + c1["cid"][2:]
    c2 = q.claim(TAB_A)["candidate"]
    q.skip(TAB_A, c2["cid"])

    # a new process: same files, nothing in memory
    q2 = LabelQueue(path, GoldenFile(golden.path))
    left = []
    while (c := q2.claim(TAB_B)["candidate"]) is not None and c["question"] not in left:
        left.append(c["question"])
        q2.skip(TAB_B, c["cid"])
    assert left == [QUESTIONS[3], QUESTIONS[2]]
    assert q2.counts() | {"skipped": 0} == {"golden_items": 1, "target": 50, "labelled": 1,
                                            "rejected": 1, "skipped": 0, "left": 2, "queued": 4}

    lines = [json.loads(x) for x in decisions_path(path).read_text().splitlines()]
    assert [(d["cid"], d["decision"], d["qid"]) for d in lines[:3]] == [
        (c0["cid"], "labelled", "q001"), (c1["cid"], "rejected", "abstain-" + c1["cid"][2:]),
        (c2["cid"], "skipped", None)]
    assert lines[1]["reason"] == ("not answerable from the corpus: the corpus has no warranty "
                                  "for kettles")
    assert set(lines[0]) == {"cid", "decision", "qid", "at", "reason"}
    (abst,) = [json.loads(x) for x in abstentions_path(golden.path).read_text().splitlines()]
    assert abst | {"at": None} == {"qid": "abstain-" + c1["cid"][2:], "question": QUESTIONS[1],
                                   "source": "log", "source_ref": "log.csv:3",
                                   "cid": c1["cid"], "at": None}
    (item,) = load_golden(golden.path).items
    assert (item.source, item.source_ref, item.extra["cid"]) == ("log", "log.csv:2", c0["cid"])


def test_a_rejection_for_another_reason_writes_no_abstention(
        work: tuple[Path, GoldenFile]) -> None:
    path, golden = work
    q = LabelQueue(path, golden)
    c = q.claim(TAB_A)["candidate"]
    assert q.reject(TAB_A, c["cid"], "not_a_question")["abstention"] is None
    assert not abstentions_path(golden.path).exists()
    with pytest.raises(SweepError, match="reason: 'whatever' is not one of"):
        q.reject(TAB_A, q.claim(TAB_A)["candidate"]["cid"], "whatever")
    with pytest.raises(SweepError, match=r"reason: \['x'\] is not one of"):
        q.reject(TAB_A, q.claim(TAB_A)["candidate"]["cid"], ["x"])  # type: ignore[arg-type]


def test_a_candidate_without_source_saves_no_source(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"cid": "c-1", "question": "where is my parcel"}\n')
    golden = GoldenFile(tmp_path / "g.jsonl")
    q = LabelQueue(path, golden)
    assert q.claim(TAB_A)["candidate"]["source"] is None
    q.save(TAB_A, "c-1", fake_write(golden, "q001"))
    (item,) = load_golden(golden.path).items
    assert (item.source, item.source_ref, item.extra["cid"]) == (None, None, "c-1")


def test_the_last_decision_wins(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"cid": "c-1", "decision": "skipped"}\n{"cid": "c-2", "decision": '
                    '"skipped"}\n{"cid": "c-1", "decision": "labelled", "qid": "q9"}\n')
    last = read_decisions(path)
    assert {k: (v.decision, v.line) for k, v in last.items()} == {
        "c-1": ("labelled", 3), "c-2": ("skipped", 2)}


def test_a_second_claimer_cannot_decide_a_held_candidate(work: tuple[Path, GoldenFile]) -> None:
    path, golden = work
    q = LabelQueue(path, golden)
    c = q.claim(TAB_A)["candidate"]
    with pytest.raises(ClaimConflict, match="another tab is working on this question"):
        q.save(TAB_B, c["cid"], fake_write(golden, "q001"))
    with pytest.raises(ClaimConflict):
        q.skip(TAB_B, c["cid"])
    assert not golden.path.exists() and not decisions_path(path).exists()


def test_an_expired_claim_goes_to_the_next_tab(work: tuple[Path, GoldenFile]) -> None:
    clock = Clock()
    q = LabelQueue(*work, clock=clock)
    assert next_question(q, TAB_A) == QUESTIONS[0]
    clock.t += CLAIM_TTL_S + 1
    assert next_question(q, TAB_B) == QUESTIONS[0]
    q.release(TAB_B)
    assert next_question(q, TAB_A) == QUESTIONS[0]


def test_a_candidate_decided_by_another_process_is_refused(work: tuple[Path, GoldenFile]
                                                           ) -> None:
    path, golden = work
    one = LabelQueue(path, golden)
    two = LabelQueue(path, GoldenFile(golden.path))  # another process: its own claims
    c1 = one.claim(TAB_A)["candidate"]
    c2 = two.claim(TAB_B)["candidate"]
    assert c1["cid"] == c2["cid"]  # claims are per process; the decisions file decides
    one.save(TAB_A, c1["cid"], fake_write(golden, "q001"))
    with pytest.raises(ClaimConflict, match="was labelled meanwhile"):
        two.save(TAB_B, c2["cid"], fake_write(two.golden, "q002"))
    assert len(golden.entries()) == 1
    assert [d["decision"] for d in map(json.loads, decisions_path(path).read_text()
                                       .splitlines())] == ["labelled"]


def test_golden_line_without_its_decision_counts_as_labelled(work: tuple[Path, GoldenFile]
                                                             ) -> None:
    """A crash between the golden append and the decision append: the candidate stays done."""
    path, golden = work
    golden.append({"qid": "q001", "question": QUESTIONS[0], "relevant_doc_ids": ["d"],
                   "cid": cid(QUESTIONS[0]), "source": "log"})
    q = LabelQueue(path, golden)
    assert next_question(q) == QUESTIONS[1]
    assert q.counts()["labelled"] == 1


def test_an_abstention_without_its_decision_counts_as_rejected(work: tuple[Path, GoldenFile]
                                                              ) -> None:
    """A crash between the abstentions.jsonl append and the decision append: the candidate is
    not offered again, so no second abstention with the same qid can make sweeps fail."""
    path, golden = work
    q = LabelQueue(path, golden)
    c = q.claim(TAB_A)["candidate"]
    q.reject(TAB_A, c["cid"], "unanswerable")
    decisions_path(path).write_text("")  # the decision line lost
    q2 = LabelQueue(path, GoldenFile(golden.path))
    assert next_question(q2) == QUESTIONS[1]
    assert q2.counts()["rejected"] == 1 and q2.counts()["left"] == 3
    with pytest.raises(ClaimConflict, match="rejected meanwhile"):
        q2.reject(TAB_A, c["cid"], "unanswerable")
    assert len(abstentions_path(golden.path).read_text().splitlines()) == 1
    from sweep.data.abstentions import load_abstentions

    assert [a.qid for a in load_abstentions(golden.path)[0]] == ["abstain-" + c["cid"][2:]]


def test_a_queue_imported_into_while_the_page_runs_is_read_again(
        work: tuple[Path, GoldenFile]) -> None:
    path, golden = work
    q = LabelQueue(path, golden)
    held = q.claim(TAB_A)["candidate"]
    # an import writes the whole queue again: a new first candidate, the others after it
    write_queue(path, ["where is my parcel", *QUESTIONS])
    assert next_question(q, TAB_B) == "where is my parcel"
    assert q.claim(TAB_A)["candidate"]["cid"] == held["cid"]  # the claim survives
    assert q.counts()["queued"] == 5


def test_a_failed_golden_write_records_no_decision(work: tuple[Path, GoldenFile]) -> None:
    path, golden = work
    q = LabelQueue(path, golden)
    c = q.claim(TAB_A)["candidate"]

    def failing(_extra: dict[str, Any]) -> dict[str, Any]:
        raise SweepError("type the question first")

    with pytest.raises(SweepError):
        q.save(TAB_A, c["cid"], failing)
    assert not decisions_path(path).exists()
    assert next_question(q) == QUESTIONS[0]  # still this tab's


@pytest.mark.parametrize(("line", "words"), [
    ('{"question": "x"}', "q.jsonl:2: cid: missing"),
    ('{"cid": "c-1", "question": ""}', "q.jsonl:2: question: missing"),
    ('{"cid": "c-1", "question": "x", "source": "benchmark"}', "q.jsonl:2: source: 'benchmark'"),
    ('{"cid": "c-0", "question": "again"}', "q.jsonl:2: cid: duplicate 'c-0' (first on line 1)"),
    ("[1, 2]", "q.jsonl:2: each line must be a JSON object"),
    ("{not json", "q.jsonl:2: not a JSON line"),
])
def test_a_bad_queue_line_is_one_error(tmp_path: Path, line: str, words: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"cid": "c-0", "question": "fine"}\n' + line + "\n")
    with pytest.raises(SweepError) as err:
        LabelQueue(path, GoldenFile(tmp_path / "g.jsonl"))
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_bad_decisions_file_fails_at_start(work: tuple[Path, GoldenFile]) -> None:
    path, golden = work
    decisions_path(path).write_text('{"cid": "c-1", "decision": "maybe"}\n')
    with pytest.raises(SweepError, match=r"q\.decisions\.jsonl:1: decision: 'maybe'"):
        LabelQueue(path, golden)


def test_a_missing_or_empty_queue(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="queue file not found"):
        LabelQueue(tmp_path / "nope.jsonl", GoldenFile(tmp_path / "g.jsonl"))
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(SweepError, match="the queue is empty"):
        LabelQueue(tmp_path / "e.jsonl", GoldenFile(tmp_path / "g.jsonl"))


# --------------------------------------------------------------------------- over HTTP

QUEUE_QUESTIONS = ["how many days do i have to return something",
                   "how long does the warranty last", "is there a store on mars"]


@pytest.fixture
def served_queue(tmp_path: Path) -> Iterator[tuple[LabelServer, LabelApp, Path]]:
    app = make_app(tmp_path)
    passage = {"doc_id": "warranty/warranty-terms", "start": 0, "end": 10, "text": "Warranty"}
    path = write_queue(tmp_path / "queue.jsonl", QUEUE_QUESTIONS, passage=passage)
    app.queue = open_queue(app, str(path), target=12)
    server = LabelServer(0, app)
    server.start_background()
    try:
        yield server, app, path
    finally:
        server.shutdown()
        server.server_close()


def post(server: LabelServer, action: str, body: dict[str, Any]) -> tuple[int, dict]:
    status, text = request(server, "POST", f"/api/queue/{action}", body)
    return status, json.loads(text)


def test_two_tabs_over_http(served_queue: tuple[LabelServer, LabelApp, Path]) -> None:
    server, app, path = served_queue
    before = len(app.store.entries())
    s, a = post(server, "claim", {"tab": TAB_A})
    s2, b = post(server, "claim", {"tab": TAB_B})
    assert (s, s2) == (200, 200)
    assert a["candidate"]["cid"] != b["candidate"]["cid"]
    assert a["counts"]["target"] == 12 and b["counts"]["held_by_other_tabs"] == 1
    # the passage's document is named by its corpus path, so the page can open it
    assert a["candidate"]["passage"]["path"] == "warranty/warranty-terms.md"

    item = {"question": a["candidate"]["question"],
            "evidence": [span_of(app, "returns/refund-policy.md", QUOTE_30)]}
    # tab B cannot save tab A's candidate: 409, nothing written
    s, err = post(server, "save", {"tab": TAB_B, "cid": a["candidate"]["cid"], "item": item})
    assert s == 409 and "another tab" in err["error"]
    assert len(app.store.entries()) == before
    # tab A saves it once; a second save of the same candidate is refused
    s, saved = post(server, "save", {"tab": TAB_A, "cid": a["candidate"]["cid"], "item": item})
    assert s == 200 and saved["queue"]["labelled"] == 1
    s, err = post(server, "save", {"tab": TAB_A, "cid": a["candidate"]["cid"], "item": item})
    assert s == 409 and "labelled meanwhile" in err["error"]
    entries = app.store.entries()
    assert len(entries) == before + 1
    last = entries[-1].obj
    assert (last["source"], last["source_ref"], last["cid"]) == (
        "log", "log.csv:2", a["candidate"]["cid"])

    # tab B rejects its own as unanswerable; tab A's next is the third, and then nothing
    s, rej = post(server, "reject", {"tab": TAB_B, "cid": b["candidate"]["cid"],
                                     "why": "unanswerable"})
    assert s == 200 and rej["abstention"]
    s, nxt = post(server, "claim", {"tab": TAB_A})
    assert nxt["candidate"]["question"] == QUEUE_QUESTIONS[2]
    s, none = post(server, "claim", {"tab": TAB_B})
    assert none["candidate"] is None and none["counts"]["left"] == 1
    decisions = read_decisions(decisions_path(path))
    assert {d.decision for d in decisions.values()} == {"labelled", "rejected"}


def test_queue_api_needs_the_page_token(served_queue: tuple[LabelServer, LabelApp, Path]
                                        ) -> None:
    server, _, path = served_queue
    status, _ = request(server, "POST", "/api/queue/claim", {"tab": TAB_A}, token="forged")
    assert status == 403
    status, text = request(server, "POST", "/api/queue/claim", {"tab": "x"})
    assert status == 400 and "tab id" in json.loads(text)["error"]
    assert not decisions_path(path).exists()


def test_the_page_offers_the_queue(served_queue: tuple[LabelServer, LabelApp, Path]) -> None:
    server, _, _ = served_queue
    status, html = request(server, "GET", "/")
    assert status == 200
    assert 'id="queue-panel"' in html and '"queue": true' in html
