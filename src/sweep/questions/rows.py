"""Questions as rows, read one at a time from a log file or an OpenTelemetry export.

A log is read as a stream (gzip through ``gzip.open``): a file of several GB holds one row in
memory at a time, and the caller aggregates. Every problem with the file is one `SweepError`
naming the file, the line and the field.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from sweep.common.errors import SweepError
from sweep.common.files import open_regular
from sweep.common.registry import Entry, Registry

SOURCES = ("log", "trace", "synthetic")


@dataclass(frozen=True)
class Limits:
    """How much of a log is held at once, in characters: one row (a line; a CSV row over
    several lines), one field of it, and an OpenTelemetry file that is one JSON document.
    A log is read a bounded line at a time, so a 300 MB line in a 300 KB gzip costs
    ``row`` characters of memory before it is refused, not 300 MB."""

    row: int = 16 << 20
    field: int = 4 << 20
    document: int = 256 << 20


DEFAULT_LIMITS = Limits()


class _Lines:
    """The lines of ``fh``, each read with a bound (``readline(limit)``); a line or a CSV
    row longer than the row limit is one `SweepError` naming the file and the line."""

    def __init__(self, path: Path, fh: IO[str], limits: Limits) -> None:
        self.path, self.fh, self.limits = path, fh, limits
        self.lineno = 0
        self.row_chars = 0  # of the row being read (a CSV row may span lines)

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self.fh.readline(self.limits.row + 1)
        if not line:
            raise StopIteration
        self.lineno += 1
        self.row_chars += len(line)
        if self.row_chars > self.limits.row:
            raise SweepError(f"{self.path}:{self.lineno}: the row is longer than "
                             f"{self.limits.row:,} characters (the per-row limit); nothing "
                             "was written", hint="a log holds one question a row; raise the "
                             "limit with --max-row-chars if this row is real")
        return line

    def row_done(self) -> None:
        self.row_chars = 0


def _field_limit(path: Path, line: int, name: str, value: Any, limits: Limits) -> None:
    if isinstance(value, str) and len(value) > limits.field:
        raise SweepError(f"{path}:{line}: {name}: {len(value):,} characters, more than the "
                         f"per-field limit of {limits.field:,}; nothing was written",
                         hint="raise it with --max-field-chars if this field is real")


@dataclass
class Row:
    """One asked question, as read; nothing is redacted or normalised yet."""

    question: str
    source: str  # log | trace | synthetic
    source_ref: str  # "file:line", or the trace id
    time: str | None = None  # ISO 8601, UTC
    feedback: list[Any] = field(default_factory=list)  # raw values (a trace may hold several)
    trace_id: str | None = None
    row_id: str | None = None
    retrieved: list[dict[str, str | None]] = field(default_factory=list)
    passage: dict[str, Any] | None = None


@dataclass(frozen=True)
class Columns:
    """Which column holds what (None: none); for CSV/TSV headers and JSONL keys."""

    question: str | None = None
    id: str | None = None
    time: str | None = None
    feedback: str | None = None


# Names a column is recognised by when no --*-column is given (compared lower-cased, with
# spaces and dashes as underscores). Only one match per role is taken as obvious.
GUESSES: Mapping[str, tuple[str, ...]] = {
    "question": ("question", "query", "user_query", "user_question", "question_text",
                 "search_query", "q", "prompt", "user_input", "input", "utterance",
                 "message", "request"),
    "id": ("id", "qid", "query_id", "question_id", "request_id", "trace_id", "message_id",
           "event_id"),
    "time": ("timestamp", "time", "ts", "datetime", "date", "created_at", "created",
             "asked_at", "request_time", "event_time"),
    "feedback": ("feedback", "rating", "thumbs", "thumb", "vote", "score", "user_feedback",
                 "helpful", "reaction", "user_rating", "satisfaction"),
}


def _key(name: str) -> str:
    return re.sub(r"[\s-]+", "_", name.strip().lower())


def pick_columns(available: Sequence[str], given: Columns, where: str) -> Columns:
    """The columns to read: each given one must exist (else one line listing the columns);
    the others are guessed from their names. The question column is required."""
    present = list(available)
    shown = ", ".join(present) or "none"
    chosen: dict[str, str | None] = {}
    for role in ("question", "id", "time", "feedback"):
        name = getattr(given, role)
        if name is not None:
            if name not in present:
                raise SweepError(f"{where}: --{role}-column {name!r} is not a column "
                                 f"(columns: {shown})")
            chosen[role] = name
            continue
        by_key = {_key(c): c for c in present}
        chosen[role] = next((by_key[g] for g in GUESSES[role] if g in by_key), None)
    if chosen["question"] is None:
        if len(present) == 1:
            chosen["question"] = present[0]
        else:
            raise SweepError(f"{where}: no question column (columns: {shown})",
                             hint="name it with --question-column")
    taken = [v for v in chosen.values() if v is not None]
    if len(taken) != len(set(taken)):
        raise SweepError(f"{where}: one column was picked for two roles ({chosen}); name each "
                         "with --question-column/--id-column/--time-column/--feedback-column")
    return Columns(**chosen)


# --------------------------------------------------------------------------- time

_EPOCH_MS = 10**11  # a number above this is in milliseconds (year 5138 in seconds)


def iso_time(value: Any) -> str | None:
    """An ISO 8601 UTC string from an ISO string or epoch seconds/milliseconds; None when
    blank; ValueError when it is neither."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        text = str(value).strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            stamp = datetime.fromisoformat(text.replace("Z", "+00:00", 1)
                                           if text.endswith("Z") else text)
            if stamp.tzinfo is None:
                stamp = stamp.replace(tzinfo=UTC)  # a log without a zone: taken as UTC
            return stamp.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    if not math.isfinite(number):
        raise ValueError(value)
    seconds = number / 1000 if number > _EPOCH_MS else number
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


# --------------------------------------------------------------------------- files

def detect_format(path: Path) -> str:
    """From the name (``.gz`` looked through), by `LOG_FORMATS`: of the formats that claim the
    suffix, one whose ``sniff`` recognises the file's first 4 KiB (a ``.json``/``.jsonl``
    whose first record holds ``resourceSpans`` is an OpenTelemetry export), else the one
    without a ``sniff``."""
    name = path.name.lower().removesuffix(".gz")
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    claiming = [e.impl for e in LOG_FORMATS.values()
                if e.impl is not None and suffix in e.impl.suffixes]
    if any(f.sniff is not None for f in claiming):
        with open_text(path) as fh:
            head = fh.read(4096)
        for f in claiming:
            if f.sniff is not None and f.sniff(head):
                return f.name
    for f in claiming:
        if f.sniff is None:
            return f.name
    raise SweepError(f"{path}: cannot tell the format from the name (.{suffix})",
                     hint=f"use --format {'|'.join(FORMATS)}")


def open_text(path: Path) -> IO[str]:
    try:
        # the caller closes it: read_rows holds it in a with block
        # _is_gzip opens through open_regular first: a FIFO or a device as the log is
        # refused there instead of blocking
        raw: IO[bytes] = gzip.open(path, "rb") if _is_gzip(path) else open_regular(path)  # noqa: SIM115
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


def _is_gzip(path: Path) -> bool:
    try:
        with open_regular(path) as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror or exc})") from None


class Progress:
    """Bytes of the file read so far (compressed bytes for gzip), for a progress bar."""

    def __init__(self, path: Path, fh: IO[str]) -> None:
        self.total = os.path.getsize(path)
        buffer = getattr(fh, "buffer", None)
        self._raw = getattr(buffer, "fileobj", None) or buffer  # gzip's underlying file

    def position(self) -> int:
        try:
            return int(self._raw.tell()) if self._raw is not None else 0
        except (OSError, ValueError):
            return 0


def read_rows(path: str | Path, *, fmt: str | None = None, columns: Columns = Columns(),
              on_progress: Callable[[int, int], None] | None = None,
              chosen: Callable[[Columns], None] | None = None,
              limits: Limits = DEFAULT_LIMITS) -> Iterator[Row]:
    """Every row of a log file, in file order. ``chosen`` is told which columns were picked
    (before the first row); ``on_progress(bytes_read, total)`` is called every few thousand
    rows. Blank questions are yielded as "" for the caller to count."""
    p = Path(path)
    if not p.is_file():
        raise SweepError(f"{p}: no such file")
    fmt = fmt or detect_format(p)
    if fmt not in LOG_FORMATS:
        raise SweepError(f"--format {fmt!r} is not one of {', '.join(LOG_FORMATS)}")
    with open_text(p) as fh:
        progress = Progress(p, fh)
        try:
            lines = _Lines(p, fh, limits)
            read = LOG_FORMATS.impl(fmt).read
            for n, row in enumerate(read(p, lines, fmt, columns, chosen), 1):
                if on_progress is not None and n % 2000 == 0:
                    on_progress(progress.position(), progress.total)
                yield row
        except UnicodeDecodeError as exc:
            raise SweepError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start} of a "
                             "block)") from None
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise SweepError(f"{p}: cannot read ({type(exc).__name__}: {exc})") from None
        if on_progress is not None:
            on_progress(progress.total, progress.total)


def _ref(path: Path, line: int, row_id: str | None) -> str:
    """``log.csv:12``, with the row's own id when the log has one: ``log.csv:12 (id 8812)``."""
    return f"{path.name}:{line}" + (f" (id {row_id[:80]})" if row_id else "")


def _time_or_fail(value: Any, where: str, column: str) -> str | None:
    try:
        return iso_time(value)
    except (ValueError, OverflowError, OSError):
        raise SweepError(f"{where}: {column}: {str(value)[:40]!r} is not a time (ISO 8601 or "
                         "epoch seconds/milliseconds)") from None


def _table_rows(path: Path, fh: _Lines, fmt: str, columns: Columns,
                chosen: Callable[[Columns], None] | None) -> Iterator[Row]:
    limits = fh.limits
    # The csv module's own limit is process-wide: it is only ever raised (to the row limit,
    # which bounds a field's memory); the per-field limit is checked on each value, by name.
    csv.field_size_limit(max(csv.field_size_limit(), limits.row))
    try:
        reader = csv.reader(fh, delimiter="\t" if fmt == "tsv" else ",")
        header = next(reader, None)
    except csv.Error as exc:
        raise SweepError(f"{path}:1: {exc}") from None
    fh.row_done()
    if header is None:
        raise SweepError(f"{path}: empty file (no header, no rows)")
    header = [h.strip() for h in header]
    cols = pick_columns(header, columns, str(path))
    if chosen is not None:
        chosen(cols)
    index = {name: header.index(name) for name in header}
    qi = index[cols.question]  # type: ignore[index]
    rows_seen = 0
    while True:
        try:
            values = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise SweepError(f"{path}:{reader.line_num}: {exc}") from None
        fh.row_done()
        if not values:
            continue
        where = f"{path}:{reader.line_num}"
        rows_seen += 1
        if len(values) != len(header):
            raise SweepError(f"{where}: {len(values)} fields, the header has {len(header)}",
                             hint="a quote left open or a stray delimiter")
        for name, value in zip(header, values, strict=True):
            _field_limit(path, reader.line_num, name, value, limits)

        def get(col: str | None, vals: list[str] = values) -> str | None:
            return vals[index[col]] if col is not None else None

        fb = get(cols.feedback)
        rid = get(cols.id) or None
        yield Row(question=values[qi], source="log",
                  source_ref=_ref(path, reader.line_num, rid),
                  time=_time_or_fail(get(cols.time), where, cols.time or ""),
                  feedback=[fb] if fb not in (None, "") else [], row_id=rid)
    if rows_seen == 0:
        raise SweepError(f"{path}: no rows under the header")


def _dotted(obj: Mapping[str, Any], name: str) -> Any:
    """``obj[name]``, or a nested value for ``a.b`` when there is no key ``a.b``."""
    if name in obj:
        return obj[name]
    node: Any = obj
    for part in name.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _jsonl_rows(path: Path, fh: _Lines, fmt: str, columns: Columns,
                chosen: Callable[[Columns], None] | None) -> Iterator[Row]:
    cols: Columns | None = None
    seen = 0
    for lineno, line in enumerate(fh, 1):
        fh.row_done()
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SweepError(f"{path}:{lineno}: not JSON ({exc.msg}, column {exc.colno})"
                             ) from None
        if not isinstance(obj, dict):
            raise SweepError(f"{path}:{lineno}: a line must be a JSON object, got "
                             f"{type(obj).__name__}")
        where = f"{path}:{lineno}"
        if cols is None:
            cols = pick_columns(list(_paths(obj)), columns, f"{path}:{lineno}")
            if chosen is not None:
                chosen(cols)
        seen += 1
        question = _dotted(obj, cols.question)  # type: ignore[arg-type]
        if question is not None and not isinstance(question, str):
            raise SweepError(f"{where}: {cols.question}: must be a string, got "
                             f"{type(question).__name__}")
        fb = _dotted(obj, cols.feedback) if cols.feedback else None
        rid = _dotted(obj, cols.id) if cols.id else None
        for name, value in ((cols.question, question), (cols.feedback, fb), (cols.id, rid)):
            _field_limit(path, lineno, str(name), value, fh.limits)
        yield Row(question=question or "", source="log",
                  source_ref=_ref(path, lineno, None if rid is None else str(rid)),
                  time=_time_or_fail(_dotted(obj, cols.time), where, cols.time)
                  if cols.time else None,
                  feedback=[fb] if fb not in (None, "") else [],
                  row_id=None if rid is None else str(rid))
    if seen == 0:
        raise SweepError(f"{path}: empty log (no JSON objects)")


def _paths(obj: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Top-level keys, and the dotted paths of one level of nesting (``request.question``)."""
    for key, value in obj.items():
        yield prefix + key
        if not prefix and isinstance(value, Mapping):
            yield from _paths(value, f"{key}.")


# A line of a text log may begin with its time: "2024-05-01T10:00:00Z how do I ...",
# "2024-05-01 10:00:00 | how do I ...", or a tab between them.
_STAMPED = re.compile(r"^(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                      r"(?:Z|[+-]\d{2}:?\d{2})?)\s*(?:\||\t|\s)\s*(.*)$")


def _text_rows(path: Path, fh: _Lines, fmt: str, columns: Columns,
               chosen: Callable[[Columns], None] | None) -> Iterator[Row]:
    if any(v is not None for v in (columns.question, columns.id, columns.time,
                                   columns.feedback)):
        raise SweepError(f"{path}: a text log has no columns (one question a line); "
                         "--*-column applies to CSV, TSV and JSONL")
    seen = 0
    for lineno, line in enumerate(fh, 1):
        fh.row_done()
        text = line.strip()
        if not text:
            continue
        _field_limit(path, lineno, "question", text, fh.limits)
        seen += 1
        stamp = None
        m = _STAMPED.match(text)
        if m:
            stamp = _time_or_fail(m.group(1), f"{path}:{lineno}", "time")
            text = m.group(2)
        yield Row(question=text, source="log", source_ref=f"{path.name}:{lineno}", time=stamp)
    if seen == 0:
        raise SweepError(f"{path}: empty log (no lines)")


# --------------------------------------------------------------------------- OpenTelemetry

def _otel_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` ({"stringValue": ...}, ...) as a plain value."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_otel_value(v) for v in value["arrayValue"].get("values", [])]
    return None


def _attributes(span: Mapping[str, Any]) -> dict[str, Any]:
    attrs = span.get("attributes") or []
    if isinstance(attrs, Mapping):
        return dict(attrs)
    return {a.get("key"): _otel_value(a.get("value")) for a in attrs if isinstance(a, Mapping)}


def question_of(inputs: Any) -> str | None:
    """The user's question in a root span's inputs: a string, the value of the only string
    field, a field named like a question, or the last user message of a chat."""
    if isinstance(inputs, str):
        text = inputs.strip()
        if text.startswith(("{", "[")):
            try:
                return question_of(json.loads(text))
            except json.JSONDecodeError:
                return text
        return text or None
    if isinstance(inputs, list):  # chat messages
        for msg in reversed(inputs):
            if isinstance(msg, Mapping) and msg.get("role") == "user":
                return question_of(msg.get("content"))
        return None
    if not isinstance(inputs, Mapping):
        return None
    keyed = {_key(k): v for k, v in inputs.items()}
    for name in GUESSES["question"]:
        if isinstance(keyed.get(name), str) and keyed[name].strip():
            return keyed[name].strip()
    if isinstance(keyed.get("messages"), list):
        return question_of(keyed["messages"])
    strings = [v for v in inputs.values() if isinstance(v, str) and v.strip()]
    if len(strings) == 1:
        return strings[0].strip()
    nested = [v for v in inputs.values() if isinstance(v, Mapping | list)]
    return question_of(nested[0]) if len(nested) == 1 else None


def documents_of(outputs: Any, limit: int = 10) -> list[dict[str, str | None]]:
    """A RETRIEVER span's documents as ``{"doc_id", "text"}`` (MLflow `Document` dicts,
    LangChain-style ``page_content``/``metadata``, or OpenInference ``document.*``)."""
    if isinstance(outputs, str):
        try:
            outputs = json.loads(outputs)
        except json.JSONDecodeError:
            return []
    if isinstance(outputs, Mapping):
        outputs = outputs.get("documents") or outputs.get("results") or []
    out: list[dict[str, str | None]] = []
    for doc in outputs if isinstance(outputs, list) else []:
        if not isinstance(doc, Mapping):
            continue
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
        doc_id = (meta.get("doc_uri") or meta.get("doc_id") or meta.get("source")
                  or doc.get("id") or meta.get("chunk_id"))
        text = doc.get("page_content") or doc.get("content") or doc.get("text")
        out.append({"doc_id": None if doc_id is None else str(doc_id),
                    "text": None if text is None else str(text)})
        if len(out) == limit:
            break
    return out


def _otel_rows(path: Path, fh: _Lines, fmt: str, columns: Columns,
               chosen: Callable[[Columns], None] | None) -> Iterator[Row]:
    """OTLP JSON (the OpenTelemetry collector's file exporter: one ExportTraceServiceRequest
    a line, or one document) with OpenInference attributes, as Phoenix and Langfuse record
    them: the root span's ``input.value`` is the question, a ``RETRIEVER`` span's
    ``retrieval.documents.N.document.*`` its documents, a ``feedback``/``user_feedback``
    attribute or span annotation its feedback. Spans are grouped by trace in memory."""
    # Spans are grouped by trace, so the file is held whole: bounded by the document limit
    # (and each line by the row limit, as in every log).
    parts: list[str] = []
    size = 0
    for line in fh:
        fh.row_done()
        size += len(line)
        if size > fh.limits.document:
            raise SweepError(f"{path}:{fh.lineno}: the export is longer than "
                             f"{fh.limits.document:,} characters (the per-file limit of an "
                             "OpenTelemetry export); nothing was written",
                             hint="split the export (one ExportTraceServiceRequest a line)")
        parts.append(line)
    text = "".join(parts)
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        docs = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    docs.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SweepError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
    traces: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        for rs in (doc.get("resourceSpans") or doc.get("resource_spans") or []
                   if isinstance(doc, Mapping) else []):
            for ss in rs.get("scopeSpans") or rs.get("scope_spans") or []:
                for span in ss.get("spans") or []:
                    tid = str(span.get("traceId") or span.get("trace_id") or "")
                    traces.setdefault(tid, []).append(span)
    if not traces:
        raise SweepError(f"{path}: no spans (resourceSpans[].scopeSpans[].spans[] is empty)")
    for tid, spans in traces.items():
        roots = [s for s in spans if not (s.get("parentSpanId") or s.get("parent_span_id"))]
        if not roots:
            continue
        root = roots[0]
        attrs = _attributes(root)
        question = question_of(attrs.get("input.value")) or ""
        retrieved: list[dict[str, str | None]] = []
        feedback: list[Any] = []
        for span in spans:
            a = _attributes(span)
            if a.get("openinference.span.kind") == "RETRIEVER" and not retrieved:
                n = 0
                while f"retrieval.documents.{n}.document.content" in a or \
                        f"retrieval.documents.{n}.document.id" in a:
                    retrieved.append({"doc_id": a.get(f"retrieval.documents.{n}.document.id"),
                                      "text": a.get(f"retrieval.documents.{n}.document.content")})
                    n += 1
            for key in ("feedback", "user_feedback", "user.feedback", "feedback.value"):
                if a.get(key) not in (None, ""):
                    feedback.append(a[key])
        start = root.get("startTimeUnixNano") or root.get("start_time_unix_nano")
        stamp = None
        if start not in (None, ""):
            stamp = _time_or_fail(int(start) / 1e6, f"{path}: trace {tid}", "startTimeUnixNano")
        yield Row(question=question, source="trace", source_ref=f"{path.name}:{tid}",
                  time=stamp, feedback=feedback, trace_id=tid, retrieved=retrieved)


@dataclass(frozen=True)
class LogFormat:
    """One format of question logs: its name (``--format``), its reader, the file suffixes it
    claims (`detect_format`) and, when it shares them, how it recognises its files."""

    name: str
    read: Callable[[Path, _Lines, str, Columns, Callable[[Columns], None] | None],
                   Iterator[Row]]
    suffixes: tuple[str, ...]
    sniff: Callable[[str], bool] | None = None  # from the first 4 KiB of text


def _otel_head(head: str) -> bool:
    return '"resourceSpans"' in head or '"resource_spans"' in head


# The formats `read_rows` reads, in the order --format lists them: a new one is its reader
# and one entry here (on the project's Registry, as the importers and the axes are).
LOG_FORMATS: Registry[LogFormat] = Registry("questions.format", [
    Entry(f.name, f, doc=doc) for f, doc in (
        (LogFormat("csv", _table_rows, ("csv",)), "comma-separated, a header row"),
        (LogFormat("tsv", _table_rows, ("tsv", "tab")), "tab-separated, a header row"),
        (LogFormat("jsonl", _jsonl_rows, ("jsonl", "ndjson", "json")), "one JSON object a line"),
        (LogFormat("text", _text_rows, ("txt", "log", "text", "")), "one question a line"),
        (LogFormat("otel", _otel_rows, ("jsonl", "ndjson", "json"), _otel_head),
         "an OpenTelemetry JSON export of spans"),
    )])
FORMATS = LOG_FORMATS.names()
