"""An OpenTelemetry (OTLP JSON) export with OpenInference attributes, as Phoenix and the
collector's file exporter write it: one trace per question, a RETRIEVER span's documents,
feedback on a span."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.questions.rows import read_rows


def attr(key: str, value: object) -> dict:
    kind = "intValue" if isinstance(value, int) else "stringValue"
    return {"key": key, "value": {kind: value}}


def trace(tid: str, question: str, feedback: str | None, start_ns: int) -> list[dict]:
    root = {"traceId": tid, "spanId": f"{tid}-r", "name": "chat",
            "startTimeUnixNano": str(start_ns),
            "attributes": [attr("openinference.span.kind", "CHAIN"),
                           attr("input.value", json.dumps({"question": question}))]}
    if feedback:
        root["attributes"].append(attr("feedback", feedback))
    retriever = {"traceId": tid, "spanId": f"{tid}-s", "parentSpanId": f"{tid}-r",
                 "name": "retrieve",
                 "attributes": [attr("openinference.span.kind", "RETRIEVER"),
                                attr("retrieval.documents.0.document.id", "refunds#2"),
                                attr("retrieval.documents.0.document.content", "30 days."),
                                attr("retrieval.documents.1.document.id", "refunds#3")]}
    return [root, retriever]


def test_otlp_export_rows(tmp_path: Path) -> None:
    spans = trace("t1", "How long for a refund?", "thumbs_down", 1714557600 * 10**9) + \
        trace("t2", "Do you ship abroad?", None, 1714557660 * 10**9)
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    p = tmp_path / "export.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    rows = list(read_rows(p))
    assert [r.question for r in rows] == ["How long for a refund?", "Do you ship abroad?"]
    assert [r.trace_id for r in rows] == ["t1", "t2"]
    assert rows[0].source == "trace" and rows[0].source_ref == "export.json:t1"
    assert rows[0].feedback == ["thumbs_down"] and rows[1].feedback == []
    assert rows[0].retrieved == [{"doc_id": "refunds#2", "text": "30 days."},
                                 {"doc_id": "refunds#3", "text": None}]
    assert rows[0].time == "2024-05-01T10:00:00Z" and rows[1].time == "2024-05-01T10:01:00Z"


def test_otlp_lines_and_empty_export(tmp_path: Path) -> None:
    p = tmp_path / "spans.jsonl"
    line = {"resourceSpans": [{"scopeSpans": [{"spans": trace("a", "q one", None, 0)}]}]}
    p.write_text(json.dumps(line) + "\n" + json.dumps(line).replace('"a', '"b') + "\n",
                 encoding="utf-8")
    assert [r.trace_id for r in read_rows(p)] == ["a", "b"]
    empty = tmp_path / "none.json"
    empty.write_text('{"resourceSpans": []}', encoding="utf-8")
    with pytest.raises(SweepError, match="no spans"):
        list(read_rows(empty))
