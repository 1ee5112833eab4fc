"""`source` / `source_ref` / `cid` on golden items (issue 27): parsed, kept, checked, and
written by the importers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_importers import beir_folder, squad_data

from sweep.data.golden import SOURCES, parse_golden_lines
from sweep.data.importers import convert_squad, import_beir

BASE = {"qid": "q1", "question": "how long is the warranty",
        "evidence": [{"doc_id": "w", "quote": "two years"}]}


def parse(**fields: object):
    return parse_golden_lines(json.dumps({**BASE, **fields}), "g.jsonl")


@pytest.mark.parametrize("source", SOURCES)
def test_every_known_source_is_kept(source: str) -> None:
    (item,), problems = parse(source=source, source_ref="log.csv:12", cid="c-0123456789ab")
    assert problems == []
    assert (item.source, item.source_ref) == (source, "log.csv:12")
    assert item.extra["cid"] == "c-0123456789ab"


def test_absent_source_is_unspecified() -> None:
    (item,), problems = parse()
    assert problems == [] and item.source is None and item.source_ref is None


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"source": "tickets"}, "source", "'tickets' is not one of log, trace"),
    ({"source": 3}, "source", "3 is not one of"),
    ({"source": "log", "source_ref": ""}, "source_ref", "non-empty string"),
    ({"source": "log", "source_ref": ["a"]}, "source_ref", "non-empty string"),
    ({"cid": 12}, "cid", "candidate"),
])
def test_bad_source_fields_are_one_error_naming_line_and_field(
        fields: dict[str, object], field: str, words: str) -> None:
    items, problems = parse_golden_lines("\n" + json.dumps({**BASE, **fields}), "g.jsonl")
    assert items == []
    (p,) = problems
    assert (p.file, p.line, p.field, p.severity) == ("g.jsonl", 2, field, "error")
    assert words in p.message
    assert str(p).startswith(f"g.jsonl:2: {field}: ")


def test_squad_import_marks_benchmark_with_its_file() -> None:
    result = convert_squad(squad_data(), "dev-v2.json")
    assert result.items
    assert {(i["source"], i["source_ref"]) for i in result.items} == {("benchmark",
                                                                        "dev-v2.json")}
    # what it writes parses back with the source kept
    text = "\n".join(json.dumps(i) for i in result.items)
    items, problems = parse_golden_lines(text, "g")
    assert not [p for p in problems if p.severity == "error"]
    assert {i.source for i in items} == {"benchmark"}


def test_beir_import_marks_benchmark(tmp_path: Path) -> None:
    src = beir_folder(tmp_path / "beir")
    result = import_beir(src)
    assert result.items and all(i["source"] == "benchmark" for i in result.items)
    assert all(i["source_ref"] == str(src) for i in result.items)
