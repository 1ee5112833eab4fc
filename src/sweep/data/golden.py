"""The golden set: one JSON object a line, in the seed article's format.

    {"qid": "q001", "question": "how long do i have to send something back",
     "relevant_chunk_ids": ["policy-refunds#3"], "answer_must_mention": ["30 days"],
     "relevant_doc_ids": ["policy-refunds"],                       # optional
     "evidence": [{"doc_id": "policy-refunds", "quote": "..."},    # optional
                  {"path": "policy/refunds.md", "start": 120, "end": 188}]}

Parsing never stops at the first fault: every problem is collected with its file, line and
field, so `sweep validate` can list them all and the sweep can refuse to start with a precise
one-line error.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sweep.common.errors import SweepError
from sweep.common.files import read_regular, read_text_regular
from sweep.common.textcheck import control_char
from sweep.data.abstentions import load_abstentions

KNOWN_FIELDS = {
    "qid", "question", "relevant_chunk_ids", "answer_must_mention", "relevant_doc_ids",
    "evidence", "notes", "tags", "rebase", "source", "source_ref", "cid", "needs",
}
# `rebase.status` of an item carried to a new corpus version by `sweep golden rebase`
# (sweep.evaluation.rebase): the PENDING ones wait for a human (`sweep label --review`) and are never
# scored; the rest are scored. "unplaced": its evidence could not be placed in the old corpus
# either, so there was nothing to carry.
PENDING_STATUSES = ("edited", "removed", "unplaced")
REBASE_STATUSES = ("unchanged", "moved", *PENDING_STATUSES, "accepted", "reselected")

# Where a question came from (issue 27), best first as the seed ranks them: a user's logged
# question, a traced one, a domain owner's, a generated one, a public benchmark's. Scored apart
# (evaluation/sources.py) because synthetic questions borrow their passage's words.
SOURCES = ("log", "trace", "owner", "synthetic", "benchmark")
# How several evidence passages make the answer (issue 28): ``all`` of them together, or ``any``
# one of them alone (alternatives). Absent: ``all`` (see `sweep.evaluation.relevance.passages`).
NEEDS = ("all", "any")


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    field: str
    message: str
    severity: str = "error"  # or "warning"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass(frozen=True)
class EvidenceRef:
    """Where the answer lives: a document (by ``doc_id`` or corpus-relative ``path``) and
    either a ``[start, end)`` character span or a ``quote``; a quote may name no document (it
    is then searched in every one)."""

    doc_id: str | None = None
    path: str | None = None
    start: int | None = None
    end: int | None = None
    quote: str | None = None


@dataclass(frozen=True)
class GoldenItem:
    qid: str
    question: str
    relevant_chunk_ids: tuple[str, ...] = ()
    answer_must_mention: tuple[str, ...] = ()
    relevant_doc_ids: tuple[str, ...] = ()
    evidence: tuple[EvidenceRef, ...] = ()
    line: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    source: str | None = None  # one of SOURCES; None = not said
    source_ref: str | None = None  # the import file and line, or the trace id
    needs: str | None = None  # one of NEEDS; None when the item does not say (= "all")


@dataclass
class GoldenSet:
    path: str
    items: list[GoldenItem]
    problems: list[Problem]
    fingerprint: str
    reference: dict[str, Any] | None = None  # the chunking its chunk ids were labelled with
    # Items a rebase left for review (`rebase.status` edited / removed / unplaced): kept in the
    # file with their old text, left out of `items`, so no sweep scores them; each has a
    # warning in `problems`.
    pending: list[GoldenItem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]


def _field_name(key: str) -> str:
    """A key as it can be printed on one line: quoted when it is not a plain name."""
    return key if re.fullmatch(r"[\w.-]+", key) else json.dumps(key)


def _str_list(value: Any, name: str, add: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        add(name, f"must be a list of strings, got {type(value).__name__}")
        return ()
    out = []
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v.strip():
            add(f"{name}[{i}]", f"must be a non-empty string, got {v!r}")
        else:
            out.append(v)
    return tuple(out)


def _evidence(value: Any, add: Any) -> tuple[EvidenceRef, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        add("evidence", f"must be a list of objects, got {type(value).__name__}")
        return ()
    refs = []
    for i, ev in enumerate(value):
        name = f"evidence[{i}]"
        if not isinstance(ev, dict):
            add(name, f"must be an object, got {type(ev).__name__}")
            continue
        unknown = set(ev) - {"doc_id", "path", "start", "end", "quote", "text"}
        if unknown:
            add(f"{name}.{_field_name(sorted(unknown)[0])}", "unknown field (allowed: doc_id, "
                "path, start, end, quote, text)")
        doc_id, path = ev.get("doc_id"), ev.get("path")
        if doc_id is None and path is None and (
                ev.get("quote") is None or ev.get("start") is not None
                or ev.get("end") is not None):
            # A quote alone is searched in every document; a span needs its document.
            add(name, "needs `doc_id` or `path` to name its document (only a quote alone may "
                "leave it out)")
            continue
        ok = True
        for key, val in (("doc_id", doc_id), ("path", path)):
            if val is not None and (not isinstance(val, str) or not val.strip()):
                add(f"{name}.{key}", f"must be a non-empty string, got {val!r}")
                ok = False
        start, end, quote = ev.get("start"), ev.get("end"), ev.get("quote")
        has_span = start is not None or end is not None
        if has_span:
            for key, val in (("start", start), ("end", end)):
                if not isinstance(val, int) or isinstance(val, bool) or val < 0:
                    add(f"{name}.{key}", f"must be a non-negative integer, got {val!r}")
                    ok = False
            if ok and end <= start:
                add(f"{name}.end", f"must be greater than start ({start}), got {end}")
                ok = False
        if quote is not None and (not isinstance(quote, str) or not quote.strip()):
            add(f"{name}.quote", f"must be a non-empty string, got {quote!r}")
            ok = False
        if not has_span and quote is None:
            add(name, "needs `start`/`end` or a `quote`")
            ok = False
        if ok:
            refs.append(EvidenceRef(doc_id, path, start, end, quote))
    return tuple(refs)


def _rebase(value: Any, add: Any) -> None:
    """`rebase` is written by `sweep golden rebase`; only its status decides anything (whether
    the item is scored), so only the status is checked strictly."""
    if value is None:
        return
    if not isinstance(value, dict):
        add("rebase", f"must be an object, got {type(value).__name__}")
        return
    status = value.get("status")
    if status not in REBASE_STATUSES:
        add("rebase.status", f"must be one of {', '.join(REBASE_STATUSES)}, got {status!r}")
    elif status in PENDING_STATUSES:
        add("rebase.status", f"{status} by `sweep golden rebase`: not scored until reviewed "
            "(sweep label --review FILE)", "warning")


def is_pending(item: GoldenItem) -> bool:
    """Whether a rebase left ``item`` for a human (it is then never scored)."""
    rebase = item.extra.get("rebase")
    return isinstance(rebase, dict) and rebase.get("status") in PENDING_STATUSES


def _source(obj: dict[str, Any], add: Any) -> tuple[str | None, str | None]:
    """``source`` (one of `SOURCES`, or absent) and ``source_ref`` (a string, or absent)."""
    source, ref = obj.get("source"), obj.get("source_ref")
    if source is not None and source not in SOURCES:
        add("source", f"{source!r} is not one of {', '.join(SOURCES)}")
        source = None
    if ref is not None and (not isinstance(ref, str) or not ref.strip()):
        add("source_ref", f"must be a non-empty string, got {ref!r}")
        ref = None
    elif ref is not None and (bad := control_char(ref)) is not None:
        add("source_ref", f"holds a control character or line break ({bad})")
        ref = None
    cid = obj.get("cid")
    if cid is not None and (not isinstance(cid, str) or not cid.strip()):
        add("cid", f"must be a non-empty string (the queue candidate's id), got {cid!r}")
    return source, ref


def parse_golden_lines(text: str, file: str) -> tuple[list[GoldenItem], list[Problem]]:
    """Parse JSONL text into items and problems. Items with errors are left out of the list
    (their problems say why); structural warnings keep the item."""
    items: list[GoldenItem] = []
    problems: list[Problem] = []
    qid_lines: dict[str, int] = {}
    question_lines: dict[str, int] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        errors_before = len(problems)

        def add(field_: str, message: str, severity: str = "error", _ln: int = lineno) -> None:
            problems.append(Problem(file, _ln, field_, message, severity))

        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            add("", f"malformed JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:
            add("", "malformed JSON (nested too deeply)")
            continue
        if not isinstance(obj, dict):
            add("", f"each line must be a JSON object, got {type(obj).__name__}")
            continue
        qid = obj.get("qid")
        if not isinstance(qid, str | int) or isinstance(qid, bool) or not str(qid).strip():
            add("qid", f"missing or not a non-empty string: {qid!r}")
            qid = None
        elif (bad := control_char(str(qid))) is not None:
            add("qid", f"holds a control character or line break ({bad}); a qid is one "
                "printable line")
            qid = None
        else:
            qid = str(qid)
            if qid in qid_lines:
                add("qid", f"duplicate qid {qid!r} (first on line {qid_lines[qid]})")
            else:
                qid_lines[qid] = lineno
        question = obj.get("question")
        if not isinstance(question, str) or not question.strip():
            add("question", f"missing or not a non-empty string: {question!r}")
            question = None
        elif (bad := control_char(question, whitespace_ok=True)) is not None:
            add("question", f"holds a control character ({bad}); remove it (sweep label and "
                "sweep questions import drop such characters)")
            question = None
        else:
            norm = " ".join(question.lower().split())
            if norm in question_lines:
                add("question", f"same question as line {question_lines[norm]}", "warning")
            else:
                question_lines[norm] = lineno
        for key in sorted(set(obj) - KNOWN_FIELDS):
            add(_field_name(key), "unknown field (ignored)", "warning")
        chunk_ids = _str_list(obj.get("relevant_chunk_ids"), "relevant_chunk_ids", add)
        mentions = _str_list(obj.get("answer_must_mention"), "answer_must_mention", add)
        doc_ids = _str_list(obj.get("relevant_doc_ids"), "relevant_doc_ids", add)
        evidence = _evidence(obj.get("evidence"), add)
        _rebase(obj.get("rebase"), add)
        source, source_ref = _source(obj, add)
        needs = obj.get("needs")
        if needs is not None and needs not in NEEDS:
            add("needs", f"must be one of {', '.join(NEEDS)}, got {needs!r}")
        if (not chunk_ids and not evidence and not doc_ids
                and not any(p.severity == "error" for p in problems[errors_before:])):
            add("relevant_chunk_ids", "empty, and no `evidence` or `relevant_doc_ids`: "
                "nothing says where the answer lives")
        if any(p.severity == "error" for p in problems[errors_before:]):
            continue
        extra = {k: obj[k] for k in ("notes", "tags", "rebase", "cid") if k in obj}
        items.append(GoldenItem(qid, question, chunk_ids, mentions, doc_ids, evidence, lineno,
                                extra, source, source_ref, needs=needs))
    if not items and not problems:
        problems.append(Problem(file, 0, "", "no golden items (the file is empty)"))
    return items, problems


def reference_path(golden_path: Path) -> Path:
    """The sidecar declaring the chunking that ``relevant_chunk_ids`` refer to."""
    return golden_path.with_name(golden_path.stem + ".reference.yaml")


def load_golden(path: str | Path,
                check_reference: Callable[[dict[str, Any], Path], None] | None = None
                ) -> GoldenSet:
    """Read and parse a golden file (and its ``*.reference.yaml`` sidecar, if any).

    ``check_reference``: what data cannot check of the sidecar without importing the stages
    above it (the boundary names): `sweep.chunking.reference.load_golden` passes it, and the
    commands and the pipeline load the golden set through that."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise SweepError(f"golden file not found: {path}", hint="set golden.path=FILE")
    if path.is_dir():
        raise SweepError(f"golden.path is a folder, not a JSONL file: {path}")
    # A FIFO would block the read forever, a symlink loop looks "not found" to exists():
    # read_regular names what the path is instead.
    data = read_regular(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SweepError(f"{path}:{line}: not valid UTF-8 (offset {exc.start})") from None
    text = text.replace("\r\n", "\n")
    items, problems = parse_golden_lines(text, str(path))
    reference = None
    ref_path = reference_path(path)
    if ref_path.exists():
        reference = load_reference(ref_path)
        if check_reference is not None:
            check_reference(reference, ref_path)
    digest = hashlib.sha256(data)
    _, abstentions = load_abstentions(path)
    if abstentions:  # they add figures to a report, so they are part of the set's identity
        digest.update(b"\0abstentions\0" + abstentions)
    fingerprint = digest.hexdigest()[:16]
    pending = [item for item in items if is_pending(item)]
    items = [item for item in items if not is_pending(item)]
    if pending and not items:
        problems.append(Problem(str(path), 0, "", f"all {len(pending)} items await review after "
                                "`sweep golden rebase` (sweep label --review FILE): none can "
                                "be scored"))
    return GoldenSet(str(path), items, problems, fingerprint, reference, pending)


REFERENCE_KEYS = {"boundary", "size", "overlap", "tokenizer"}


def load_reference(ref_path: Path) -> dict[str, Any]:
    """Read and check a ``*.reference.yaml`` sidecar: ``chunk: {boundary, size, overlap,
    tokenizer}``. Every fault is a one-line `SweepError` naming the sidecar. The boundary's
    name is checked above data, by `sweep.chunking.reference.check_reference` (a key left
    out takes the stage's default, which is valid, so only the keys given are checked)."""
    if not ref_path.is_file():
        raise SweepError(f"{ref_path}: not a file (the reference chunking sidecar)")
    try:
        reference = yaml.safe_load(read_text_regular(ref_path)) or {}
    except OSError as exc:
        raise SweepError(f"{ref_path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SweepError(f"{ref_path}: not valid UTF-8 (offset {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{ref_path}:{mark.line + 1}" if mark is not None else str(ref_path)
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise SweepError(f"{where}: not valid YAML ({problem})") from None
    chunk = reference.get("chunk") if isinstance(reference, dict) else None
    if not isinstance(chunk, dict):
        raise SweepError(f"{ref_path}: chunk: must be a mapping with boundary/size/overlap")
    unknown = sorted(str(k) for k in set(chunk) - REFERENCE_KEYS)
    if unknown:
        raise SweepError(f"{ref_path}: chunk.{_field_name(unknown[0])}: unknown key (allowed: "
                         f"{', '.join(sorted(REFERENCE_KEYS))})")
    for key in ("size", "overlap"):
        value = chunk.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool):
            raise SweepError(f"{ref_path}: chunk.{key}: must be an integer, got {value!r}")
    if not isinstance(chunk.get("tokenizer", ""), str):
        raise SweepError(f"{ref_path}: chunk.tokenizer: must be a string")
    return reference


def raise_first_error(problems: Sequence[Problem]) -> None:
    """Raise the first error among ``problems`` as a one-line `SweepError` (pointing at
    `sweep validate` for the rest); warnings alone pass."""
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        more = f" (and {len(errors) - 1} more: run `sweep validate`)" if len(errors) > 1 else ""
        raise SweepError(f"{errors[0]}{more}")


def require_valid(golden: GoldenSet) -> GoldenSet:
    """The golden set, or its first error as a one-line `SweepError`."""
    raise_first_error(golden.problems)
    return golden


# Field order of a written line: the seed format first, as in data/demo/golden.jsonl.
FIELD_ORDER = ("qid", "question", "relevant_chunk_ids", "answer_must_mention",
               "relevant_doc_ids", "evidence", "notes", "tags")


def dump_line(obj: dict[str, Any]) -> str:
    """One JSON line, fields in the project's order, non-ASCII kept readable."""
    ordered = {k: obj[k] for k in FIELD_ORDER if k in obj}
    ordered.update({k: v for k, v in obj.items() if k not in ordered})
    return json.dumps(ordered, ensure_ascii=False)
