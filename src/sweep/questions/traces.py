"""An MLflow 3 trace as a `Row`: the question from the root span's inputs, the documents of
its first RETRIEVER span, and its feedback assessments. Works on the trace object's
attributes (``info``, ``data.spans``), so this module needs no MLflow import; the store is
read by `sweep.outputs.tracking.iter_traces`."""

from __future__ import annotations

from typing import Any

from sweep.questions.rows import Row, documents_of, iso_time, question_of


def feedback_values(info: Any) -> list[Any]:
    """The values of the trace's feedback assessments (expectations are ground truth, not
    feedback; an assessment that holds an error or was overridden is left out)."""
    out = []
    for a in getattr(info, "assessments", None) or []:
        fb = getattr(a, "feedback", None)
        if fb is None or getattr(a, "valid", True) is False:
            continue
        if getattr(fb, "error", None) is not None:
            continue
        value = getattr(fb, "value", None)
        if isinstance(value, dict):  # several named scores: each counts
            out.extend(value.values())
        elif isinstance(value, list):
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def row_of_trace(trace: Any) -> Row:
    info = trace.info
    spans = list(getattr(trace.data, "spans", None) or [])
    root = next((s for s in spans if s.parent_id is None), None)
    question = question_of(root.inputs) if root is not None else None
    retrieved: list[dict[str, str | None]] = []
    for span in spans:
        kind = str(getattr(span, "span_type", "") or "")
        if kind.upper() == "RETRIEVER":
            retrieved = documents_of(span.outputs)
            break
    trace_id = str(getattr(info, "trace_id", None) or getattr(info, "request_id", ""))
    stamp = getattr(info, "request_time", None) or getattr(info, "timestamp_ms", None)
    return Row(question=question or "", source="trace", source_ref=trace_id,
               time=iso_time(stamp) if stamp else None, feedback=feedback_values(info),
               trace_id=trace_id, retrieved=retrieved)
