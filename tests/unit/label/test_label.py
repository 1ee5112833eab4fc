"""`sweep label`: the golden-file writes, the labelling checks, the list view, and the
server's security (a real server on an ephemeral port, real HTTP requests)."""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import shutil
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers import DEMO, label_settings
from sweep.common.errors import SweepError
from sweep.data.golden import load_golden
from sweep.label import store as store_mod
from sweep.label.app import DenseIndex, LabelApp, SweepRanks, build_app
from sweep.label.checks import question_overlap, suggest_mentions
from sweep.label.server import LabelServer, bind
from sweep.label.store import GoldenFile, StaleError, line_digest

QUOTE_30 = ("You can return most Kestrel Home products within 30 days of delivery for a full "
            "refund of the item price.")
QUOTE_WARRANTY = ("The standard warranty period is two years for devices and one year for "
                  "accessories.")


def item(qid: str, question: str = "how long can i send it back", **extra: Any) -> dict:
    return {"qid": qid, "question": question,
            "evidence": [{"path": "returns/refund-policy.md", "quote": QUOTE_30}], **extra}


LINES = [
    json.dumps(item("q001")),
    json.dumps(item("q002", "second question")),
    "{this line is broken but must survive",
    json.dumps(item("q003", "third question")),
]


@pytest.fixture
def golden_file(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    path.write_bytes(("\n".join(LINES) + "\n").encode())
    return path


def digest_of(gf: GoldenFile, qid: str) -> str:
    return next(e.digest for e in gf.entries() if e.qid == qid)


# --------------------------------------------------------------------------- save / edit / delete


def test_append_adds_one_line_and_leaves_earlier_bytes_alone(golden_file: Path) -> None:
    before = golden_file.read_bytes()
    entry = GoldenFile(golden_file).append(item("q004", "a new one"))
    after = golden_file.read_bytes()
    assert after.startswith(before)
    assert after[len(before):] == (json.dumps(item("q004", "a new one")) + "\n").encode()
    assert entry.qid == "q004" and entry.lineno == 5


def test_append_after_a_last_line_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_bytes(LINES[0].encode())  # hand-edited: no final newline
    GoldenFile(path).append(item("q002", "other"))
    assert path.read_bytes() == (LINES[0] + "\n" + json.dumps(item("q002", "other")) + "\n"
                                 ).encode()


def test_append_creates_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    GoldenFile(path).append(item("q001"))
    assert load_golden(path).items[0].qid == "q001"


@pytest.mark.parametrize("bad, message", [
    (item("q001"), "already in"),                                  # duplicate qid
    ({"qid": "q009", "question": " "}, "question"),                 # empty question
    # a span needs its document (a quote alone may name none: it is searched everywhere)
    ({"qid": "q009", "question": "x", "evidence": [{"start": 0, "end": 1}]}, "doc_id"),
    ({**item("q009"), "bogus": 1}, "unknown field"),
])
def test_append_refuses_bad_items_and_writes_nothing(golden_file: Path, bad: dict,
                                                     message: str) -> None:
    before = golden_file.read_bytes()
    with pytest.raises(SweepError, match=message):
        GoldenFile(golden_file).append(bad)
    assert golden_file.read_bytes() == before


def test_a_failed_append_is_cut_back_to_the_old_file(golden_file: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    before = golden_file.read_bytes()
    real_write = os.write

    def half_write(fd: int, data: bytes) -> int:  # the disk fills up half way
        return real_write(fd, data[: len(data) // 2])

    monkeypatch.setattr(store_mod.os, "write", half_write)
    with pytest.raises(OSError, match="short write"):
        GoldenFile(golden_file).append(item("q004", "new"))
    assert golden_file.read_bytes() == before


def test_replace_rewrites_only_its_line(golden_file: Path) -> None:
    gf = GoldenFile(golden_file)
    new = item("q002", "second question, reworded", notes="edited")
    entry = gf.replace("q002", digest_of(gf, "q002"), new)
    lines = golden_file.read_text().split("\n")
    assert lines == [LINES[0], json.dumps(new), LINES[2], LINES[3], ""]
    assert entry.lineno == 2 and entry.digest == line_digest(json.dumps(new).encode())


def test_delete_removes_only_its_line(golden_file: Path) -> None:
    gf = GoldenFile(golden_file)
    gf.delete("q003", digest_of(gf, "q003"))
    assert golden_file.read_text() == "\n".join(LINES[:3]) + "\n"


def test_rewrite_keeps_crlf_bom_and_permissions(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + LINES[0].encode() + b"\r\n" + LINES[1].encode() + b"\r\n")
    path.chmod(0o600)
    gf = GoldenFile(path)
    gf.delete("q002", digest_of(gf, "q002"))
    assert path.read_bytes() == b"\xef\xbb\xbf" + LINES[0].encode() + b"\r\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("fail_at", ["replace", "fsync"])
@pytest.mark.parametrize("operation", ["edit", "delete"])
def test_crash_before_the_rename_leaves_the_old_file_intact(
        golden_file: Path, monkeypatch: pytest.MonkeyPatch, fail_at: str, operation: str) -> None:
    before = golden_file.read_bytes()
    gf = GoldenFile(golden_file)
    digest = digest_of(gf, "q002")

    def crash(*args: Any) -> None:
        raise OSError(5, "simulated crash")

    monkeypatch.setattr(store_mod.os, fail_at, crash)
    with pytest.raises(OSError, match="simulated crash"):
        if operation == "edit":
            gf.replace("q002", digest, item("q002", "changed"))
        else:
            gf.delete("q002", digest)
    monkeypatch.undo()
    assert golden_file.read_bytes() == before
    # No temp file left; the empty lock file every writer shares stays (see store.py).
    assert sorted(p.name for p in golden_file.parent.iterdir()) == [".golden.jsonl.lock",
                                                                     "golden.jsonl"]


def test_edit_of_a_line_changed_on_disk_is_refused(golden_file: Path) -> None:
    gf = GoldenFile(golden_file)
    seen = digest_of(gf, "q002")
    # Someone edits the file by hand after the page was loaded.
    golden_file.write_text(golden_file.read_text().replace("second question", "2nd question"))
    before = golden_file.read_bytes()
    with pytest.raises(StaleError, match="changed"):
        gf.replace("q002", seen, item("q002", "mine"))
    with pytest.raises(StaleError):
        gf.delete("q002", seen)
    with pytest.raises(StaleError, match="no longer"):
        gf.delete("q777", seen)
    assert golden_file.read_bytes() == before


def test_edit_cannot_take_another_items_qid(golden_file: Path) -> None:
    gf = GoldenFile(golden_file)
    with pytest.raises(SweepError, match="already in"):
        gf.replace("q002", digest_of(gf, "q002"), item("q001", "clash"))


def test_rewrite_through_a_symlink_replaces_the_target(tmp_path: Path, golden_file: Path) -> None:
    link = tmp_path / "link.jsonl"
    link.symlink_to(golden_file)
    gf = GoldenFile(link)
    gf.delete("q001", digest_of(gf, "q001"))
    assert link.is_symlink()
    assert golden_file.read_text().splitlines() == LINES[1:]


@pytest.mark.parametrize("qids, expected", [
    ([], "q001"),
    ([f"q{i:03d}" for i in range(1, 51)] + [f"x{i:03d}" for i in range(1, 11)], "q051"),
    (["case-7", "case-12"], "case-13"),
    (["a", "b"], "q001"),
])
def test_next_qid_follows_the_files_main_style(tmp_path: Path, qids: list[str],
                                               expected: str) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(item(q, f"question {q}")) + "\n" for q in qids))
    assert GoldenFile(path).next_qid() == expected


# --------------------------------------------------------------------------- the app (no HTTP)


def make_app(tmp_path: Path, *, golden: bool = True, dense: bool = False) -> LabelApp:
    """The demo corpus and golden set, copied, behind a LabelApp (BM25; optional fake dense)."""
    work = tmp_path / "demo"
    if not work.exists():
        shutil.copytree(DEMO / "corpus", work / "corpus")
        if golden:
            shutil.copy(DEMO / "golden.jsonl", work / "golden.jsonl")
            shutil.copy(DEMO / "golden.reference.yaml", work / "golden.reference.yaml")
    settings = label_settings(work / "corpus", work / "golden.jsonl")
    app = build_app(settings, say=lambda _: None)
    if dense:  # a bag-of-letters "model": enough to fill the dense column
        def vec(text: str) -> np.ndarray:
            v = np.zeros(64, dtype=np.float32)
            for ch in text.lower():
                v[ord(ch) % 64] += 1
            return v / (np.linalg.norm(v) or 1)

        app.dense = DenseIndex("fake", np.stack([vec(c.text) for c in app.chunks]), vec)
    return app


def span_of(app: LabelApp, source: str, quote: str, nth: int = 0) -> dict:
    doc = app.servable[source]
    at = -1
    for _ in range(nth + 1):
        at = doc.text.index(quote, at + 1)
    return {"doc_id": doc.doc_id, "start": at, "end": at + len(quote)}


def test_build_writes_path_quote_and_reference_chunk_ids(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    ev = [span_of(app, "returns/refund-policy.md", QUOTE_30),
          span_of(app, "warranty/warranty-terms.md", QUOTE_WARRANTY)]
    # The selection's surrounding whitespace is trimmed.
    ev[0] = {**ev[0], "start": ev[0]["start"] - 1}
    obj, _ = app.build({"question": "  thermostat broke, refund?  ", "evidence": ev,
                        "answer_must_mention": ["30 days", "30 days", " "]})
    assert obj == {
        "qid": "q051", "question": "thermostat broke, refund?",
        "relevant_chunk_ids": ["returns/refund-policy#2", "warranty/warranty-terms#3"],
        "answer_must_mention": ["30 days"],
        "evidence": [{"path": "returns/refund-policy.md", "quote": QUOTE_30},
                     {"path": "warranty/warranty-terms.md", "quote": QUOTE_WARRANTY}]}


def test_a_quote_repeated_in_its_document_keeps_its_offsets(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    ev = span_of(app, "warranty/warranty-terms.md", "Kestrel Plus", nth=1)
    obj, _ = app.build({"question": "q", "evidence": [ev]})
    assert obj["evidence"] == [{"path": "warranty/warranty-terms.md", "quote": "Kestrel Plus",
                                "start": ev["start"], "end": ev["end"]}]
    # ...and that span is what the project's resolver reads back.
    path = tmp_path / "one.jsonl"
    GoldenFile(path).append(obj)
    from sweep.evaluation.relevance import CorpusIndex, resolve_item

    resolved = resolve_item(load_golden(path).items[0], CorpusIndex(app.docs), None)
    assert resolved.spans == (("warranty/warranty-terms", ev["start"], ev["end"]),)


@pytest.mark.parametrize("evidence, message", [
    ([], "at least one evidence"),
    ([{"doc_id": "nope", "start": 0, "end": 5}], "unknown document"),
    ([{"doc_id": "faq", "start": "0", "end": 5}], "integers"),
    ([{"doc_id": "faq", "start": 1, "end": 1}], "empty"),
    ("faq", "must be a list"),
])
def test_build_rejects_bad_evidence(tmp_path: Path, evidence: Any, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        make_app(tmp_path).build({"question": "q", "evidence": evidence})


def test_warnings_while_labelling(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    result = app.check({
        "question": "can i return products within 30 days of delivery for a full refund",
        "evidence": [span_of(app, "returns/refund-policy.md", QUOTE_30),
                     span_of(app, "warranty/warranty-terms.md", "Kestrel Plus")],
        "answer_must_mention": ["30 days", "fourteen"]})
    kinds = [w["kind"] for w in result["warnings"]]
    messages = " | ".join(w["message"] for w in result["warnings"])
    # The demo's planted contradiction, found by the same code as `sweep validate`.
    assert "says '30 days' (returns/refund-policy.md) but a near-duplicate passage in " \
           "faq.md:23 says '14 days'" in messages
    assert "duplicate_quote" in kinds and "evidence 2: the quote occurs" in messages
    assert "question_overlap" in kinds  # the question copies the policy's own words
    assert "'fourteen' occurs in none of the evidence" in messages
    assert result["suggestions"] == []  # "30 days" is already a mention
    assert result["evidence"][0]["chunk_ids"] == ["returns/refund-policy#2"]
    assert result["evidence"][0]["heading_path"][-1] == "The refund window"
    assert json.loads(result["line"])["evidence"][0]["quote"] == QUOTE_30


def test_a_real_users_question_is_not_flagged(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    result = app.check({"question": "how long do i have to send something back",
                        "evidence": [span_of(app, "returns/refund-policy.md", QUOTE_30)]})
    assert "question_overlap" not in [w["kind"] for w in result["warnings"]]
    assert result["suggestions"] == ["30 days"]


def test_question_overlap_counts_content_words() -> None:
    assert question_overlap("What is the restocking fee?", "a restocking fee of 15%") == (2, 2)
    assert question_overlap("do i lose money", "restocking fee of 15%") == (0, 2)


def test_suggested_mentions_are_quantities_and_codes() -> None:
    text = ("Refunds within 30 days, minus a 15% fee; we pay up to $15. Error ERR_4021 or E-17 "
            "on the KT-200 after 2 tries.")
    assert suggest_mentions(text) == ["30 days", "15%", "$15", "2 tries", "ERR_4021", "E-17",
                                      "KT-200"]


def test_search_returns_both_retrievers(tmp_path: Path) -> None:
    app = make_app(tmp_path, dense=True)
    hits = app.search("restocking fee for an opened thermostat")
    assert len(hits["bm25"]) == 8 and len(hits["dense"]) == 8
    assert "returns/refund-policy#6" in [h.chunk.chunk_id for h in hits["bm25"][:3]]
    assert [h.rank for h in hits["bm25"]] == list(range(1, 9))
    assert app.search("   ") == {"bm25": [], "dense": []}


def test_edit_state_gives_the_items_spans(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    state = app.edit_state("q001")
    assert state["question"].startswith("how long do i have")
    doc = app.by_id["returns/refund-policy"]
    [ev] = state["evidence"]
    assert doc.text[ev["start"]:ev["end"]] == QUOTE_30
    assert state["answer_must_mention"] == ["30 days"] and state["problems"] == []


def test_edit_keeps_fields_the_page_does_not_edit(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    path = Path(app.store.path)
    path.write_text(json.dumps({**item("q001"), "tags": ["returns"],
                                "relevant_doc_ids": ["faq"]}) + "\n")
    state = app.edit_state("q001")
    result = app.save_edit("q001", state["digest"], {
        "question": "reworded", "evidence": state["evidence"], "answer_must_mention": []})
    saved = json.loads(path.read_text())
    assert saved["question"] == "reworded" and saved["tags"] == ["returns"]
    assert saved["relevant_doc_ids"] == ["faq"] and result["lineno"] == 1
    with pytest.raises(StaleError):  # the digest the page holds is now out of date
        app.save_edit("q001", state["digest"], {"question": "again",
                                                "evidence": state["evidence"]})


def test_needs_any_is_written_for_several_passages_and_read_back(tmp_path: Path) -> None:
    from sweep.label.pages import needs_options

    app = make_app(tmp_path)
    two = [span_of(app, "returns/refund-policy.md", QUOTE_30),
           span_of(app, "warranty/warranty-terms.md", QUOTE_WARRANTY)]
    obj, _ = app.build({"question": "q", "evidence": two, "needs": "any"})
    assert obj["needs"] == "any"
    # "all" is the default (no field), and one passage has nothing to choose between
    assert "needs" not in app.build({"question": "q", "evidence": two, "needs": ""})[0]
    assert "needs" not in app.build({"question": "q", "evidence": two[:1], "needs": "any"})[0]
    with pytest.raises(SweepError, match="needs must be one of all, any"):
        app.build({"question": "q", "evidence": two, "needs": "some"})
    saved = app.save_new({"question": "refund or warranty?", "evidence": two, "needs": "any"})
    assert load_golden(app.store.path).items[-1].needs == "any"
    state = app.edit_state(saved["qid"])
    assert state["needs"] == "any"
    assert '<option value="any" selected>' in needs_options(state["needs"])
    assert '<option value="" selected>' in needs_options("all")
    # an edit that picks "all" again drops the field
    app.save_edit(saved["qid"], state["digest"], {"question": "refund or warranty?",
                                                  "evidence": two, "needs": ""})
    assert load_golden(app.store.path).items[-1].needs is None


def test_new_golden_set_gets_a_reference_sidecar(tmp_path: Path) -> None:
    app = make_app(tmp_path, golden=False)
    assert app.reference_from == "new"
    app.save_new({"question": "refund window?",
                  "evidence": [span_of(app, "returns/refund-policy.md", QUOTE_30)]})
    golden = load_golden(app.store.path)
    assert golden.reference == {"chunk": {"boundary": "recursive", "size": 254, "overlap": 0,
                                          "tokenizer": "minilm"}}
    from sweep.pipeline.memo import resolve_golden

    [resolved] = resolve_golden(golden, app.docs, app.fingerprint)
    assert not resolved.problems  # its chunk ids exist under that reference chunking


# --------------------------------------------------------------------------- the list view


def test_list_view_rows_resolve_and_flag_problems(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    with open(app.store.path, "a") as fh:
        fh.write(json.dumps({"qid": "bad1", "question": "x",
                             "relevant_chunk_ids": ["faq#999"]}) + "\n")
        fh.write("not json\n")
        fh.write(json.dumps({"qid": "bad2", "question": "y", "relevant_chunk_ids": ["faq#1"],
                             "evidence": [{"path": "returns/refund-policy.md",
                                           "quote": QUOTE_30}]}) + "\n")
    ranks = SweepRanks(False, "tracking is off")
    rows, _ = app.rows(ranks)
    assert len(rows) == 63
    by_qid = {r.entry.qid: r for r in rows}
    assert sum(r.resolves == "yes" for r in rows) == 61
    assert by_qid["q001"].resolves == "yes" and by_qid["q001"].rank == "—"
    assert any("near-duplicate" in w for w in by_qid["q001"].warnings)
    assert by_qid["bad1"].resolves == "no"
    assert "does not exist under the reference chunking" in by_qid["bad1"].errors[0]
    assert rows[61].entry.obj is None and rows[61].resolves == "no"
    assert any("none of them holds the evidence" in w for w in by_qid["bad2"].warnings)


def _track(app: LabelApp, uri: str) -> None:
    """Tracking on, into ``uri``: the page's settings are its job spec's."""
    job = app.settings.job
    app.settings.job = dataclasses.replace(
        job, tracking=dataclasses.replace(job.tracking, enabled=True, uri=uri))


def test_list_view_ranks_from_the_last_sweep(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from sweep.decide import runs as decide
    from sweep.decide.runs import SweepTable

    app = make_app(tmp_path)
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"")
    _track(app, f"sqlite:///{db}")
    q1 = app.edit_state("q001")["question"]
    frame = pd.DataFrame([
        {"qid": "q001", "question": q1, "status": "scored", "first_relevant_rank": 3.0,
         "dense_first_relevant_rank": 3.0, "bm25_first_relevant_rank": float("nan")},
        {"qid": "q002", "question": "old wording", "status": "scored",
         "first_relevant_rank": float("nan")},
        {"qid": "q003", "question": "?", "status": "orphan", "first_relevant_rank": None},
    ])
    table = SweepTable(
        parent={"run_id": "p" * 32, "start_time": 0, "experiment": "chunk-sweep-demo"},
        metric="recall_at_5", swept=["chunk.size"],
        rows=[{"run_id": "r" * 32, "chunk.size": 256,
               "params": {"golden.path": str(app.store.path)}}],
        shown=[], per_question={"r" * 32: frame})
    calls = []
    monkeypatch.setattr(decide, "ranked_table", lambda *a, **k: calls.append(a) or table)
    monkeypatch.setattr(decide, "read_per_question",
                        lambda uri, run_id, tmp: table.per_question[run_id])
    ranks = app.sweep_ranks()
    assert ranks.ok and "chunk.size=256" in ranks.note
    rows = {r.entry.qid: r for r in app.rows(ranks)[0]}
    assert rows["q001"].rank == "3" and "dense retriever alone: 3" in rows["q001"].rank_title
    assert rows["q002"].rank == "not found" and "edited since" in rows["q002"].rank_title
    assert rows["q003"].rank == "—" and "orphan" in rows["q003"].rank_title
    assert rows["q004"].rank == "—" and "added since" in rows["q004"].rank_title
    app.sweep_ranks()
    assert len(calls) == 1  # cached until the store changes
    # A sweep of another golden file says so instead of showing its ranks.
    table.rows[0]["params"]["golden.path"] = "/elsewhere/golden.jsonl"
    other = app.sweep_ranks(refresh=True)
    assert not other.ok and "/elsewhere/golden.jsonl" in other.note


def test_ranks_say_why_there_are_none(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    assert "tracking is off" in app.sweep_ranks().note
    _track(app, f"sqlite:///{tmp_path}/none/mlflow.db")
    ranks = app.sweep_ranks(refresh=True)
    assert not ranks.ok and "no tracking store at" in ranks.note


# --------------------------------------------------------------------------- server + security


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabelServer, LabelApp]]:
    """One server for the module: the tests that write restore the file, and every test that
    must not write compares the file before and after."""
    tmp_path = tmp_path_factory.mktemp("served")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe password is hunter2-zebra.\n")
    work = tmp_path / "demo"
    shutil.copytree(DEMO / "corpus", work / "corpus")
    shutil.copy(DEMO / "golden.jsonl", work / "golden.jsonl")
    shutil.copy(DEMO / "golden.reference.yaml", work / "golden.reference.yaml")
    # Symlinks out of the corpus: a file and a folder.
    (work / "corpus" / "leak.md").symlink_to(outside / "secret.md")
    (work / "corpus" / "linked").symlink_to(outside, target_is_directory=True)
    (work / "corpus" / "xss.md").write_text("# <script>alert(1)</script>\n\nzebra <b>bold</b>\n")
    app = make_app(tmp_path, dense=True)
    server = LabelServer(0, app)
    server.start_background()
    try:
        yield server, app
    finally:
        server.shutdown()
        server.server_close()


def request(server: LabelServer, method: str, path: str, body: Any = None, *,
            headers: dict[str, str] | None = None, host: str | None = None,
            origin: str | None = "own", token: str | None = "own", raw: bytes | None = None
            ) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    hdrs = {"Host": host or f"127.0.0.1:{server.port}"}
    if method == "POST":
        if origin is not None:
            hdrs["Origin"] = f"http://127.0.0.1:{server.port}" if origin == "own" else origin
        if token is not None:
            hdrs["X-Label-Token"] = server.app.token if token == "own" else token
        hdrs["Content-Type"] = "application/json"
    hdrs.update(headers or {})
    data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in hdrs.items():
        conn.putheader(k, v)
    if data is not None:
        conn.putheader("Content-Length", str(len(data)))
    conn.endheaders(data)
    res = conn.getresponse()
    text = res.read().decode("utf-8", "replace")
    conn.close()
    return res.status, text


def new_item(app: LabelApp) -> dict:
    return {"question": "how long is the refund window",
            "evidence": [span_of(app, "returns/refund-policy.md", QUOTE_30)]}


def test_server_listens_on_loopback_only(served: tuple[LabelServer, LabelApp]) -> None:
    server, _ = served
    assert server.server_address[0] == "127.0.0.1"
    assert server.socket.getsockname()[0] == "127.0.0.1"


def _outward_address() -> str | None:
    """This machine's address on its outward interface, or None when it has none."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # no packet is sent; picks the outward interface
        address = probe.getsockname()[0]
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") or address == "0.0.0.0" else address


def test_server_is_unreachable_through_another_address(served: tuple[LabelServer, LabelApp]
                                                       ) -> None:
    outward = _outward_address()
    if outward is None:
        pytest.skip("no outward network interface: nothing but loopback to try the port on")
    with pytest.raises(OSError):
        socket.create_connection((outward, served[0].port), timeout=2).close()


def test_bind_refuses_a_port_in_use(served: tuple[LabelServer, LabelApp]) -> None:
    with pytest.raises(SweepError, match=r"cannot listen on 127\.0\.0\.1"):
        bind(served[0].port)


def test_pages_render_and_carry_security_headers(served: tuple[LabelServer, LabelApp]) -> None:
    server, _ = served
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/")
    res = conn.getresponse()
    body = res.read().decode()
    assert res.status == 200 and 'id="question"' in body
    csp = res.getheader("Content-Security-Policy")
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert res.getheader("X-Frame-Options") == "DENY"
    for path in ("/items", "/doc/faq.md", "/?edit=q001", "/api/search?q=refund"):
        status, text = request(server, "GET", path)
        assert status == 200, (path, text[:300])
    status, text = request(server, "GET", "/", host=f"localhost:{server.port}")
    assert status == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1",
                                  "127.0.0.1:1", "0.0.0.0:{port}", ""])
def test_a_foreign_host_header_is_refused(served: tuple[LabelServer, LabelApp],
                                          host: str) -> None:
    server, app = served
    host = host.format(port=server.port)
    before = app.store.path.read_bytes()
    for method, path, body in (("GET", "/", None), ("GET", "/doc/faq.md", None),
                               ("POST", "/api/items", new_item(app))):
        if host:
            status, text = request(server, method, path, body, host=host,
                                   origin=f"http://{host}")
        else:  # no Host header at all
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                s.sendall(f"{method} {path} HTTP/1.0\r\n\r\n".encode())
                chunks = []
                while chunk := s.recv(65536):
                    chunks.append(chunk)
                text = b"".join(chunks).decode()
            status = int(text.split()[1])
        assert status == 403, (method, path, host)
        assert "forbidden" in text
    assert app.store.path.read_bytes() == before


@pytest.mark.parametrize("case", ["foreign-origin", "no-origin", "null-origin", "no-token",
                                  "wrong-token", "form-post", "cross-site"])
def test_a_write_from_anywhere_but_the_page_is_refused(served: tuple[LabelServer, LabelApp],
                                                       case: str) -> None:
    server, app = served
    before = app.store.path.read_bytes()
    kwargs: dict[str, Any] = {
        "foreign-origin": {"origin": "http://evil.example"},
        "no-origin": {"origin": None},
        "null-origin": {"origin": "null"},
        "no-token": {"token": None},
        "wrong-token": {"token": "guess"},
        "form-post": {"headers": {"Content-Type": "application/x-www-form-urlencoded"}},
        "cross-site": {"headers": {"Sec-Fetch-Site": "cross-site"}},
    }[case]
    for path in ("/api/items", "/api/check", "/api/items/q001/delete"):
        status, text = request(server, "POST", path, new_item(app), **kwargs)
        assert status == 403, (case, path, text)
    assert app.store.path.read_bytes() == before


def test_a_foreign_origin_cannot_read_either(served: tuple[LabelServer, LabelApp]) -> None:
    server, _ = served
    status, _ = request(server, "GET", "/api/search?q=refund",
                        headers={"Origin": "http://evil.example"})
    assert status == 403
    status, _ = request(server, "GET", "/api/search?q=refund",
                        headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"})
    assert status == 403


def test_save_edit_delete_through_http(served: tuple[LabelServer, LabelApp]) -> None:
    server, app = served
    path = app.store.path
    before = path.read_bytes()
    status, text = request(server, "POST", "/api/items", new_item(app))
    assert status == 201, text
    saved = json.loads(text)
    assert saved["qid"] == "q051" and saved["lineno"] == 61
    assert path.read_bytes() == before + (saved["line"] + "\n").encode()
    assert json.loads(saved["line"])["relevant_chunk_ids"] == ["returns/refund-policy#2"]

    edit = {**new_item(app), "question": "refund window length?", "digest": saved["digest"]}
    status, text = request(server, "POST", "/api/items/q051", edit)
    assert status == 200, text
    assert json.loads(path.read_text().splitlines()[-1])["question"] == "refund window length?"
    status, text = request(server, "POST", "/api/items/q051", edit)  # stale digest
    assert status == 409 and "reload" in text

    digest = next(e.digest for e in app.store.entries() if e.qid == "q051")
    status, text = request(server, "POST", "/api/items/q051/delete", {"digest": digest})
    assert status == 200, text
    assert path.read_bytes() == before

    status, text = request(server, "POST", "/api/items", {"question": "", "evidence": []})
    assert status == 400 and "question" in text
    status, text = request(server, "POST", "/api/items", raw=b"nope!")
    assert status == 400 and "not JSON" in text


TRAVERSALS = [
    "/doc/../golden.jsonl", "/doc/..%2fgolden.jsonl", "/doc/..%2Fgolden.jsonl",
    "/doc/%2e%2e%2fgolden.jsonl", "/doc/%2e%2e/%2e%2e/outside/secret.md",
    "/doc/..%252fgolden.jsonl", "/doc/returns/../faq.md", "/doc/./faq.md",
    "/doc//etc/passwd", "/doc/%2Fetc%2Fpasswd", "/doc/%2e%2e%2f%2e%2e%2foutside%2fsecret.md",
    "/doc/leak.md", "/doc/linked/secret.md", "/doc/faq.md%00.png", "/doc/..\\golden.jsonl",
    "/doc/%5c..%5cgolden.jsonl", "/doc/", "/doc/returns", "/golden.jsonl", "/../golden.jsonl",
    "/static/../../golden.jsonl",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_document_serving_never_leaves_the_corpus(served: tuple[LabelServer, LabelApp],
                                                  path: str) -> None:
    server, _ = served
    status, text = request(server, "GET", path)
    assert status == 404, (path, status)
    assert "hunter2" not in text and "qid" not in text and "root:" not in text


def test_symlinked_documents_are_never_shown(served: tuple[LabelServer, LabelApp]) -> None:
    server, app = served
    # skipped when the corpus loads: one rule for runs and the page (issue 14, item 7)
    assert "leak" not in app.by_id and not app.hidden
    assert not any(s.startswith(("leak", "linked/")) for s in app.servable)
    status, text = request(server, "GET", "/api/search?q=hunter2+zebra+password")
    assert status == 200 and "hunter2" not in text
    status, text = request(server, "POST", "/api/check", {
        "question": "q", "evidence": [{"doc_id": "leak", "start": 0, "end": 10}]})
    assert status == 400 and "unknown document" in text


def test_corpus_text_is_escaped(served: tuple[LabelServer, LabelApp]) -> None:
    server, _ = served
    status, text = request(server, "GET", "/doc/xss.md")
    assert status == 200
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)" in text
    status, text = request(server, "GET", "/api/search?q=zebra+bold")
    assert status == 200 and "<b>bold</b>" not in json.loads(text)["bm25"]
