"""Issue 44, at the import's and the label page's edges: NUL, control characters and line
breaks never reach a question, a cid, a qid or a source_ref; redaction covers the id column
and the feedback column's free text as well as the question; `sweep validate`'s loader names
file, line and field for a control character."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import DEMO, label_settings
from sweep.common.errors import SweepError
from sweep.common.textcheck import clean_text, control_char
from sweep.data.golden import parse_golden_lines
from sweep.label.app import build_app
from sweep.questions.build import build_queue, summary
from sweep.questions.merge import Merger, cid_of
from sweep.questions.rows import Row

HOSTILE = ["re\x00set", "line\nbreak", "cr\rhere", "esc\x1b[31mred", "del\x7f", "nel\x85",
           "ls\u2028sep", "tab\there"]


@pytest.mark.parametrize("text", HOSTILE)
def test_control_characters_are_found_and_cleaned(text: str) -> None:
    assert control_char(text) is not None
    cleaned = clean_text(text)
    assert control_char(cleaned) is None and "  " not in cleaned


def test_whitespace_ok_lets_tab_and_newline_through_but_not_nul() -> None:
    assert control_char("a\tb\nc", whitespace_ok=True) is None
    assert control_char("a\x00b", whitespace_ok=True) == "U+0000"


def test_import_cleans_questions_and_source_refs() -> None:
    m = Merger()
    m.add(Row(question="how do I re\x00set my password?", source="log",
              source_ref="log.csv:2 (id a\x00b\nc)", row_id="a\x00b\nc"))
    (cand,) = m.by_cid.values()
    assert cand.question == "how do I re set my password?"
    assert cand.cid == cid_of(cand.question)
    assert control_char(cand.source_ref) is None and cand.source_ref == "log.csv:2 (id a b c)"


def test_redaction_covers_the_id_and_the_feedback_column() -> None:
    rows = [Row(question="where is my order?", source="log",
                source_ref="log.csv:2 (id jane.doe@example.com)", row_id="jane.doe@example.com",
                feedback=["call me on 07700 900123 asap"]),
            Row(question="where is my order?", source="log", source_ref="log.csv:3 (id 2)",
                feedback=["mail bob@example.org re DE89 3704 0044 0532 0130 00"])]
    built = build_queue(rows, [], {}, redact=True)
    (cand,) = built.queue
    assert cand.source_ref == "log.csv:2 (id [email])"
    examples = built.report["feedback"]["unrecognised_examples"]
    assert examples == ["call me on [phone] asap", "mail [email] re [iban]"]
    text = json.dumps(built.report) + "\n".join(summary({**built.report, "priority": {
        "counts": {"negative_feedback": 0, "asked_more_than_once": 0, "disagreement": 0,
                   "uncovered": 0}}}))
    for secret in ("jane.doe", "07700", "bob@", "DE89"):
        assert secret not in text
    assert built.report["redactions"] == {"key": 0, "email": 2, "iban": 1, "card": 0,
                                          "phone": 1}


def test_no_redact_keeps_the_id_but_still_cleans_it() -> None:
    rows = [Row(question="q?", source="log", source_ref="log.csv:2 (id jane@example.com\x00)")]
    (cand,) = build_queue(rows, [], {}, redact=False).queue
    assert cand.source_ref == "log.csv:2 (id jane@example.com )"


@pytest.mark.parametrize(("field", "obj", "message"), [
    ("qid", {"qid": "q\x001", "question": "q?"}, "holds a control character or line break "
     "(U+0000)"),
    ("qid", {"qid": "q\n1", "question": "q?"}, "(U+000A)"),
    ("qid", {"qid": "q\u20281", "question": "q?"}, "(U+2028)"),
    ("question", {"qid": "q1", "question": "reset\x00 it?"}, "holds a control character "
     "(U+0000)"),
    ("source_ref", {"qid": "q1", "question": "q?", "source": "log",
                    "source_ref": "log.csv:2\n"}, "holds a control character or line break"),
])
def test_golden_loader_names_file_line_and_field(field: str, obj: dict, message: str) -> None:
    obj = {**obj, "relevant_doc_ids": ["d"]}
    text = json.dumps({"qid": "ok", "question": "fine?", "relevant_doc_ids": ["d"]}) + "\n" \
        + json.dumps(obj) + "\n"
    items, problems = parse_golden_lines(text, "g.jsonl")
    errors = [p for p in problems if p.severity == "error"]
    assert [(p.file, p.line, p.field) for p in errors] == [("g.jsonl", 2, field)]
    assert message in errors[0].message
    assert [i.qid for i in items] == ["ok"]


def test_label_page_save_cleans_the_question_and_refuses_a_bad_qid(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    shutil.copytree(DEMO / "corpus", work / "corpus")
    app = build_app(label_settings(work / "corpus", tmp_path / "golden.jsonl"),
                    say=lambda _: None)
    doc = next(iter(app.servable.values()))
    quote = doc.text.strip().split("\n")[-1].strip()[:40]
    start = doc.text.index(quote)
    ev = [{"doc_id": doc.doc_id, "start": start, "end": start + len(quote)}]
    obj, _ = app.build({"question": "re\x00fund\u2028window?", "evidence": ev})
    assert obj["question"] == "re fund window?"
    for qid in ("q\x00", "a\nb", "c\x1bd"):
        with pytest.raises(SweepError, match="qid: holds a control character"):
            app.build({"question": "q?", "qid": qid, "evidence": ev})


@pytest.mark.parametrize(("value", "kind"), [
    ("+49 1512 3456789", (None, None)),  # a phone typed as feedback is text, not a rating
    ("1_000", (None, None)),
    ("4", (None, 4.0)),
    (" 0.5 ", (None, 0.5)),
    ("thumbs down", ("negative", None)),
])
def test_feedback_numbers_are_read_as_typed(value: str, kind: tuple) -> None:
    from sweep.questions.merge import feedback_kind

    assert feedback_kind(value) == kind


def test_a_retrieved_text_is_redacted_before_it_is_cut() -> None:
    from sweep.questions.merge import MAX_RETRIEVED_CHARS

    text = "x " * ((MAX_RETRIEVED_CHARS - 8) // 2) + "mail jane.doe@example.com now"
    m = Merger()
    m.add(Row(question="q?", source="trace", source_ref="t1",
              retrieved=[{"doc_id": "d", "text": text}]))
    (cand,) = m.by_cid.values()
    kept = cand.retrieved[0]["text"]
    assert kept is not None and len(kept) <= MAX_RETRIEVED_CHARS
    assert "jan" not in kept  # cut first, "mail jan" would have been kept
