"""Questions the corpus cannot answer (issue 27): ``abstentions.jsonl`` beside the golden file.

The labelling page appends one when a queued candidate is rejected as "not answerable from the
corpus": ``{"qid", "question", "source", "source_ref", "cid", "at"}``. A sweep scores them as
"should retrieve nothing relevant" (`sweep.evaluation.abstention`): they have no evidence, so
they cannot be scored like golden items; what can be measured is whether the retriever's
confidence tells them apart from the answerable questions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sweep.common.errors import SweepError
from sweep.common.files import read_bytes_regular

ABSTENTIONS_NAME = "abstentions.jsonl"


def abstentions_path(golden: str | Path) -> Path:
    """``abstentions.jsonl`` in the golden file's folder."""
    return Path(golden).with_name(ABSTENTIONS_NAME)


@dataclass(frozen=True)
class Abstention:
    qid: str
    question: str
    source: str | None
    line: int


def parse_abstentions(data: bytes, file: str) -> list[Abstention]:
    """Every line an object with a non-empty ``qid`` and ``question``; the first bad line is
    one `SweepError` naming the file, the line and the field."""
    out: list[Abstention] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        where = f"{file}:{lineno}"
        try:
            obj = json.loads(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise SweepError(f"{where}: not a JSON line") from None
        if not isinstance(obj, dict):
            raise SweepError(f"{where}: each line must be a JSON object")
        qid, question, source = obj.get("qid"), obj.get("question"), obj.get("source")
        if not isinstance(qid, str) or not qid.strip():
            raise SweepError(f"{where}: qid: missing or not a non-empty string: {qid!r}")
        if qid in seen:
            raise SweepError(f"{where}: qid: duplicate {qid!r} (first on line {seen[qid]})")
        if not isinstance(question, str) or not question.strip():
            raise SweepError(f"{where}: question: missing or not a non-empty string")
        if source is not None and not isinstance(source, str):
            raise SweepError(f"{where}: source: must be a string, got {source!r}")
        seen[qid] = lineno
        out.append(Abstention(qid, question, source, lineno))
    return out


def load_abstentions(golden: str | Path) -> tuple[list[Abstention], bytes]:
    """The abstentions beside ``golden`` (none when there is no file) and the file's bytes
    (part of the golden set's fingerprint: they change what a sweep reports)."""
    path = abstentions_path(golden)
    try:
        data = read_bytes_regular(path)
    except FileNotFoundError:
        return [], b""
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_abstentions(data, str(path)), data
