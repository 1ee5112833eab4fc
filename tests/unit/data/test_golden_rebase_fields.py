"""The golden file's `rebase` field: items a rebase left for review are kept, and not scored."""

from __future__ import annotations

import json
from pathlib import Path

from sweep.data.golden import load_golden, parse_golden_lines

EVIDENCE = [{"path": "a.md", "quote": "alpha"}]


def line(qid: str, **extra: object) -> str:
    return json.dumps({"qid": qid, "question": f"question {qid}?", "evidence": EVIDENCE,
                       **extra})


def test_pending_items_are_kept_apart_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join([line("a"), line("b", rebase={"status": "edited"}),
                               line("c", rebase={"status": "moved"}),
                               line("d", rebase={"status": "removed"}),
                               line("e", rebase={"status": "accepted"})]) + "\n")
    golden = load_golden(path)
    assert [i.qid for i in golden.items] == ["a", "c", "e"]
    assert [i.qid for i in golden.pending] == ["b", "d"]
    warnings = [p for p in golden.problems if p.severity == "warning"]
    assert [(p.line, p.field) for p in warnings] == [(2, "rebase.status"), (4, "rebase.status")]
    assert not golden.errors


def test_a_set_with_only_pending_items_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "g.jsonl"
    path.write_text(line("a", rebase={"status": "removed"}) + "\n")
    golden = load_golden(path)
    assert not golden.items
    assert "all 1 items await review" in str(golden.errors[0])


def test_an_unknown_rebase_status_is_an_error_naming_the_field() -> None:
    items, problems = parse_golden_lines(line("a", rebase={"status": "fine"}), "g.jsonl")
    assert not items
    assert str(problems[0]).startswith("g.jsonl:1: rebase.status: must be one of unchanged, moved")
    _, problems = parse_golden_lines(line("a", rebase="moved"), "g.jsonl")
    assert str(problems[0]) == "g.jsonl:1: rebase: must be an object, got str"
