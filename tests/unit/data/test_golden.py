"""Golden-set parsing: every problem collected with file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.data.golden import (
    EvidenceRef,
    GoldenItem,
    Problem,
    load_golden,
    parse_golden_lines,
    reference_path,
    require_valid,
)

FILE = "golden.jsonl"

SEED = {
    "qid": "q001",
    "question": "how long do i have to send something back",
    "relevant_chunk_ids": ["policy-refunds#3"],
    "answer_must_mention": ["30 days"],
}


def line(**fields) -> str:
    obj = dict(SEED)
    for key, value in fields.items():
        if value is ...:
            obj.pop(key, None)
        else:
            obj[key] = value
    return json.dumps(obj, ensure_ascii=False)


def parse(*lines: str) -> tuple[list[GoldenItem], list[Problem]]:
    return parse_golden_lines("\n".join(lines), FILE)


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def warnings(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "warning"]


# --------------------------------------------------------------------------- valid input


def test_seed_line_parses() -> None:
    items, problems = parse(line())
    assert problems == []
    (item,) = items
    assert item == GoldenItem(
        qid="q001",
        question="how long do i have to send something back",
        relevant_chunk_ids=("policy-refunds#3",),
        answer_must_mention=("30 days",),
        line=1,
    )


def test_full_line_with_evidence_and_extras() -> None:
    text = line(
        relevant_doc_ids=["policy-refunds"],
        evidence=[
            {"doc_id": "policy-refunds", "quote": "within 30 days"},
            {"path": "policy/refunds.md", "start": 120, "end": 188},
        ],
        notes="checked by hand",
        tags=["refunds"],
    )
    (item,), problems = parse(text)
    assert problems == []
    assert item.relevant_doc_ids == ("policy-refunds",)
    assert item.evidence == (
        EvidenceRef(doc_id="policy-refunds", quote="within 30 days"),
        EvidenceRef(path="policy/refunds.md", start=120, end=188),
    )
    assert item.extra == {"notes": "checked by hand", "tags": ["refunds"]}


def test_integer_qid_becomes_string() -> None:
    (item,), problems = parse(line(qid=7))
    assert problems == []
    assert item.qid == "7"


def test_evidence_only_or_doc_ids_only_is_enough() -> None:
    items, problems = parse(
        line(qid="a", relevant_chunk_ids=[], evidence=[{"doc_id": "d", "start": 0, "end": 5}]),
        line(qid="b", question="other", relevant_chunk_ids=..., relevant_doc_ids=["d"]),
    )
    assert problems == []
    assert [i.qid for i in items] == ["a", "b"]


def test_blank_lines_skipped_line_numbers_kept() -> None:
    text = "\n".join(["", line(qid="a"), "   ", "", line(qid="b", question="second"), "{bad"])
    items, problems = parse_golden_lines(text, FILE)
    assert [(i.qid, i.line) for i in items] == [("a", 2), ("b", 5)]
    assert [(p.line, p.field) for p in problems] == [(6, "")]


# --------------------------------------------------------------------------- errors


def test_malformed_json_reports_line() -> None:
    items, problems = parse(line(qid="a"), '{"qid": "b", "question": ', line(qid="c", question="c"))
    assert [i.qid for i in items] == ["a", "c"]
    (p,) = problems
    assert (p.file, p.line, p.field, p.severity) == (FILE, 2, "", "error")
    assert "malformed JSON" in p.message
    assert str(p).startswith(f"{FILE}:2: malformed JSON")


def test_not_an_object() -> None:
    _, problems = parse("[1, 2]")
    (p,) = problems
    assert p.line == 1 and "JSON object" in p.message


@pytest.mark.parametrize("qid", [..., None, "", "   ", True, 1.5, ["q"]])
def test_missing_or_bad_qid(qid) -> None:
    items, problems = parse(line(qid=qid))
    assert items == []
    assert [(p.line, p.field) for p in errors(problems)] == [(1, "qid")]


@pytest.mark.parametrize("question", [..., "", 3])
def test_missing_question(question) -> None:
    items, problems = parse(line(question=question))
    assert items == []
    assert [(p.line, p.field) for p in errors(problems)] == [(1, "question")]


def test_relevant_chunk_ids_as_string() -> None:
    items, problems = parse(line(relevant_chunk_ids="policy-refunds#3"))
    assert items == []
    (p,) = errors(problems)
    assert (p.line, p.field) == (1, "relevant_chunk_ids")
    assert "list" in p.message


def test_relevant_chunk_ids_bad_element_names_index() -> None:
    _, problems = parse(line(relevant_chunk_ids=["ok#1", 3, ""]))
    assert [p.field for p in errors(problems)] == ["relevant_chunk_ids[1]", "relevant_chunk_ids[2]"]


def test_evidence_negative_start() -> None:
    items, problems = parse(line(evidence=[{"doc_id": "d", "start": -1, "end": 5}]))
    assert items == []
    (p,) = errors(problems)
    assert (p.line, p.field) == (1, "evidence[0].start")


@pytest.mark.parametrize("end", [10, 3])
def test_evidence_end_not_after_start(end: int) -> None:
    items, problems = parse(line(evidence=[{"doc_id": "d", "start": 10, "end": end}]))
    assert items == []
    (p,) = errors(problems)
    assert p.field == "evidence[0].end"
    assert "greater than start" in p.message


@pytest.mark.parametrize(
    ("evidence", "field"),
    [
        ({"doc_id": "d", "start": "0", "end": 5}, "evidence[0].start"),
        ({"doc_id": "d", "start": 0, "end": True}, "evidence[0].end"),
        ({"doc_id": "d", "start": 0}, "evidence[0].end"),
        ({"doc_id": "d", "quote": ""}, "evidence[0].quote"),
        ({"doc_id": "d"}, "evidence[0]"),
        ({"doc_id": "", "quote": "x"}, "evidence[0].doc_id"),
        ("just a string", "evidence[0]"),
    ],
)
def test_evidence_field_errors(evidence, field: str) -> None:
    items, problems = parse(line(evidence=[evidence]))
    assert items == []
    assert [p.field for p in errors(problems)] == [field]


def test_evidence_not_a_list() -> None:
    _, problems = parse(line(evidence={"doc_id": "d", "quote": "x"}))
    assert [p.field for p in errors(problems)] == ["evidence"]


def test_a_span_without_doc_id_or_path_is_an_error() -> None:
    items, problems = parse(line(evidence=[{"doc_id": "d", "quote": "ok"},
                                           {"start": 0, "end": 5}]))
    assert items == []
    (p,) = errors(problems)
    assert (p.line, p.field) == (1, "evidence[1]")
    assert "doc_id" in p.message and "path" in p.message


def test_a_quote_alone_needs_no_document() -> None:
    # searched in every document (sweep.evaluation.relevance)
    items, problems = parse(line(evidence=[{"quote": "30 days"}]))
    assert errors(problems) == []
    assert items[0].evidence == (EvidenceRef(quote="30 days"),)


def test_evidence_unknown_field_is_an_error_naming_it() -> None:
    _, problems = parse(line(evidence=[{"doc_id": "d", "quote": "x", "offset": 3}]))
    assert [p.field for p in errors(problems)] == ["evidence[0].offset"]


def test_duplicate_qid_names_first_line() -> None:
    items, problems = parse(
        line(qid="q1", question="first"),
        line(qid="q2", question="second"),
        line(qid="q1", question="third"),
    )
    assert [i.qid for i in items] == ["q1", "q2"]
    (p,) = errors(problems)
    assert (p.line, p.field) == (3, "qid")
    assert "first on line 1" in p.message


def test_empty_relevance_is_an_error() -> None:
    items, problems = parse(line(relevant_chunk_ids=[]))
    assert items == []
    (p,) = errors(problems)
    assert (p.line, p.field) == (1, "relevant_chunk_ids")
    assert "nothing says where the answer lives" in p.message
    _, problems = parse(line(relevant_chunk_ids=..., evidence=[], relevant_doc_ids=[]))
    assert [p.field for p in errors(problems)] == ["relevant_chunk_ids"]


def test_empty_relevance_is_an_error_even_when_a_warning_came_first() -> None:
    """A warning on the same line (here an unknown field, a typo of `evidence`) must not hide
    the error: the item says nothing about where its answer lives and cannot be scored."""
    items, problems = parse(line(relevant_chunk_ids=[], evidance=[{"doc_id": "d", "quote": "x"}]))
    assert [p.field for p in warnings(problems)] == ["evidance"]
    assert [p.field for p in errors(problems)] == ["relevant_chunk_ids"]
    assert items == []


def test_empty_file() -> None:
    items, problems = parse_golden_lines("\n\n", FILE)
    assert items == []
    (p,) = problems
    assert p.severity == "error" and p.line == 0 and "empty" in p.message
    assert str(p) == f"{FILE}: no golden items (the file is empty)"


# --------------------------------------------------------------------------- warnings


def test_same_question_twice_is_a_warning() -> None:
    items, problems = parse(
        line(qid="a", question="How long do I have?"),
        line(qid="b", question="  how long   do i HAVE? "),
    )
    assert [i.qid for i in items] == ["a", "b"]  # warnings keep the item
    (p,) = problems
    assert (p.line, p.field, p.severity) == (2, "question", "warning")
    assert "line 1" in p.message


def test_unknown_field_is_a_warning() -> None:
    items, problems = parse(line(difficulty="hard"))
    assert len(items) == 1
    (p,) = problems
    assert (p.line, p.field, p.severity) == (1, "difficulty", "warning")
    assert "difficulty" not in items[0].extra


# --------------------------------------------------------------------------- files


def _write_golden(tmp_path: Path, *lines: str, name: str = "golden.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_golden_with_reference_sidecar(tmp_path: Path) -> None:
    path = _write_golden(tmp_path, line(qid="a"), line(qid="b", question="other"))
    sidecar = tmp_path / "golden.reference.yaml"
    assert reference_path(path) == sidecar
    sidecar.write_text(
        "chunk:\n  boundary: recursive\n  size: 128\n  overlap: 0\n", encoding="utf-8"
    )
    golden = load_golden(path)
    assert [i.qid for i in golden.items] == ["a", "b"]
    assert golden.problems == [] and golden.errors == []
    assert golden.reference == {"chunk": {"boundary": "recursive", "size": 128, "overlap": 0}}
    assert golden.path == str(path)
    assert len(golden.fingerprint) == 16
    assert require_valid(golden) is golden


def test_load_golden_without_sidecar(tmp_path: Path) -> None:
    golden = load_golden(_write_golden(tmp_path, line()))
    assert golden.reference is None


def test_load_golden_bad_sidecar(tmp_path: Path) -> None:
    path = _write_golden(tmp_path, line())
    reference_path(path).write_text("boundary: recursive\n", encoding="utf-8")
    with pytest.raises(SweepError, match=r"reference\.yaml"):
        load_golden(path)
    reference_path(path).write_text("chunk: [unclosed\n", encoding="utf-8")
    with pytest.raises(SweepError, match="YAML"):
        load_golden(path)


def test_load_golden_crlf_bom_and_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_bytes(("\ufeff" + line(qid="a") + "\r\n" + line(qid="b", question="x") + "\r\n").encode())
    golden = load_golden(path)
    assert [(i.qid, i.line) for i in golden.items] == [("a", 1), ("b", 2)]
    assert golden.problems == []
    fp = golden.fingerprint
    assert load_golden(path).fingerprint == fp
    path.write_bytes(path.read_bytes() + b"\n")
    assert load_golden(path).fingerprint != fp


def test_load_golden_missing_folder_and_bad_utf8(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match="not found"):
        load_golden(tmp_path / "missing.jsonl")
    with pytest.raises(SweepError, match="folder"):
        load_golden(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(line().encode() + b"\n" + b'{"qid": "caf\xe9"}\n')
    with pytest.raises(SweepError, match=r"bad\.jsonl:2: "):
        load_golden(bad)


def test_require_valid_message_is_file_line_field(tmp_path: Path) -> None:
    path = _write_golden(
        tmp_path,
        line(qid="a"),
        line(qid="b", question="other", relevant_chunk_ids="x#1"),
        "{broken",
    )
    golden = load_golden(path)
    assert [i.qid for i in golden.items] == ["a"]
    with pytest.raises(SweepError) as info:
        require_valid(golden)
    message = str(info.value)
    assert message.startswith(f"{path}:2: relevant_chunk_ids: ")
    assert "(and 1 more: run `sweep validate`)" in message
    assert "\n" not in message


def test_require_valid_ignores_warnings(tmp_path: Path) -> None:
    golden = load_golden(_write_golden(tmp_path, line(extra_field=1)))
    assert len(golden.problems) == 1 and golden.errors == []
    assert require_valid(golden) is golden
