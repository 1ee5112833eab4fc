"""The labelling queue on disk: the queue itself (JSONL in priority order), the decisions
taken on it (an append-only JSONL beside it, written by the label page) and the import report.

    queue:      {"cid", "question", "count", "source", "source_ref", "reason", "priority",
                 "feedback", "negative_count", "trace_id", "variants", "first_seen",
                 "last_seen", "retrieved", "passage"}
    decisions:  <queue stem>.decisions.jsonl, {"cid", "decision", "qid", "at", "reason"};
                the last decision for a cid wins
    report:     <queue stem>.import_report.json
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, read_text_regular
from sweep.common.secret import scrub_tree
from sweep.questions.merge import SOURCE_RANK, Candidate

DECISIONS = ("labelled", "rejected", "skipped")
FINAL = frozenset({"labelled", "rejected"})  # never back in the queue


def decisions_path(queue: Path) -> Path:
    return queue.with_name(f"{queue.stem}.decisions.jsonl")


def report_path(queue: Path) -> Path:
    return queue.with_name(f"{queue.stem}.import_report.json")


def candidate_json(c: Candidate) -> dict[str, Any]:
    return {"cid": c.cid, "question": c.question, "count": c.count, "source": c.source,
            "source_ref": c.source_ref, "reason": c.reason, "priority": c.priority,
            "feedback": c.feedback, "negative_count": c.negative_count,
            "trace_id": c.trace_id, "variants": list(c.variants),
            "first_seen": c.first_seen, "last_seen": c.last_seen,
            "retrieved": list(c.retrieved), "passage": c.passage}


def write_queue(path: Path, cands: Sequence[Candidate]) -> None:
    """The whole queue, replaced atomically: a crash leaves the old queue or the new one."""
    atomic_write(path, "".join(json.dumps(candidate_json(c), ensure_ascii=False) + "\n"
                               for c in cands))


def _need(obj: dict[str, Any], name: str, types: type | tuple[type, ...], where: str,
          optional: bool = False) -> Any:
    value = obj.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        raise SweepError(f"{where}: {name}: expected {getattr(types, '__name__', types)}, got "
                         f"{value!r}"[:200])
    return value


def read_queue(path: Path) -> list[Candidate]:
    """The candidates of an existing queue file, in its order (nothing when it is absent)."""
    if not path.exists():
        return []
    try:
        text = read_text_regular(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"{path}: cannot read the queue ({exc})") from None
    out: list[Candidate] = []
    seen: set[str] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SweepError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise SweepError(f"{where}: a queue line must be a JSON object")
        cid = _need(obj, "cid", str, where)
        if cid in seen:
            raise SweepError(f"{where}: cid: {cid} appears twice in the queue")
        seen.add(cid)
        source = _need(obj, "source", str, where)
        if source not in SOURCE_RANK:
            raise SweepError(f"{where}: source: {source!r} is not one of "
                             f"{', '.join(SOURCE_RANK)}")
        variants = obj.get("variants") or []
        retrieved = obj.get("retrieved") or []
        if not isinstance(variants, list) or not isinstance(retrieved, list):
            raise SweepError(f"{where}: variants and retrieved must be lists")
        negative = _need(obj, "negative_count", int, where, optional=True) or 0
        c = Candidate(cid=cid, question=_need(obj, "question", str, where),
                      count=_need(obj, "count", int, where), source=source,
                      source_ref=str(obj.get("source_ref") or ""), negative_count=negative,
                      positive_count=1 if obj.get("feedback") == "positive" else 0,
                      trace_id=obj.get("trace_id"),
                      variants=[v for v in variants if isinstance(v, str)],
                      first_seen=obj.get("first_seen"), last_seen=obj.get("last_seen"),
                      retrieved=retrieved, passage=obj.get("passage"), existing=True,
                      priority=int(obj.get("priority") or 0), reason=str(obj.get("reason") or ""))
        out.append(c)
    return out


def read_decisions(queue: Path) -> dict[str, str]:
    """``{cid: decision}`` from the decisions file beside ``queue``: the last line for a cid
    wins. A damaged line is one error naming it (the file is the label page's record)."""
    path = decisions_path(queue)
    if not path.exists():
        return {}
    out: dict[str, str] = {}
    try:
        lines = read_text_regular(path).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"{path}: cannot read the decisions ({exc})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if lineno == len(lines):  # a line cut by a crash while it was appended
                continue
            raise SweepError(f"{where}: not JSON") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("cid"), str):
            raise SweepError(f"{where}: cid: a decision names its candidate's cid")
        if obj.get("decision") not in DECISIONS:
            raise SweepError(f"{where}: decision: {obj.get('decision')!r} is not one of "
                             f"{', '.join(DECISIONS)}")
        out[obj["cid"]] = obj["decision"]
    return out


def write_report(queue: Path, report: dict[str, Any]) -> Path:
    path = report_path(queue)
    # a --tracking-uri with a password in it is named in the sources, redaction on or off
    atomic_write(path, json.dumps(scrub_tree(report), indent=2, ensure_ascii=False) + "\n")
    return path
