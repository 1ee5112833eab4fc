"""The corpus a golden set was labelled against, and how far the corpus has moved since.

A golden set's offsets and quotes point into one version of the documents. Beside
``golden.jsonl`` the sidecar ``golden.corpus.json`` records a fingerprint of every document's
text as it was when the labels were made:

    {"version": 1, "written_by": "sweep label", "at": "2026-12-02T10:00:00Z",
     "corpus": "data/demo/corpus",
     "documents": {"policy/refunds.md": {"sha256": "9f2c...", "chars": 1874}, ...}}

``sha256`` is over the document text a sweep scores on (the parser's output for PDF/HTML/DOCX),
so a re-saved file with the same text is not a change, and a parser that reads a file
differently is. `corpus_drift` compares the record with the documents a run loaded; `sweep
validate`, every sweep and the labelling page print its message as a warning (the numbers may
still be right: an edit after every passage moves nothing), and `sweep golden rebase` is the
way to act on it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, read_text_regular
from sweep.data.corpus import Document

RECORD_VERSION = 1


def record_path(golden_path: str | Path) -> Path:
    """``golden.jsonl`` -> ``golden.corpus.json``."""
    golden_path = Path(golden_path)
    return golden_path.with_name(golden_path.stem + ".corpus.json")


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def document_entries(docs: Iterable[Document]) -> dict[str, dict[str, Any]]:
    """``{source path: {"sha256", "chars"}}``, sorted by path."""
    return {d.source: {"sha256": text_digest(d.text), "chars": len(d.text)}
            for d in sorted(docs, key=lambda d: d.source)}


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_record(golden_path: str | Path, docs: Iterable[Document], corpus: str,
                 written_by: str, keep: Mapping[str, Any] | None = None) -> Path:
    """Write the sidecar for ``docs``; entries of ``keep`` (an existing record's documents)
    win over the current ones, so adding to an old set never hides that its documents moved."""
    entries = document_entries(docs)
    if keep:
        entries.update({k: v for k, v in keep.items() if k in entries})
    path = record_path(golden_path)
    record = {"version": RECORD_VERSION, "written_by": written_by, "at": now_iso(),
              "corpus": corpus, "documents": dict(sorted(entries.items()))}
    atomic_write(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    return path


def read_record(golden_path: str | Path) -> dict[str, Any] | None:
    """The sidecar of ``golden_path`` (None when there is none); a malformed one is a one-line
    `SweepError` naming the file and the field."""
    path = record_path(golden_path)
    if not path.is_file():
        return None
    try:
        record = json.loads(read_text_regular(path))
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SweepError(f"{path}: not valid UTF-8 (offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise SweepError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(record, dict):
        raise SweepError(f"{path}: must be a JSON object")
    docs = record.get("documents")
    if not isinstance(docs, dict):
        raise SweepError(f"{path}: documents: must be an object of path -> fingerprint")
    for source, entry in docs.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise SweepError(f"{path}: documents.{source}.sha256: must be a string")
    return record


@dataclass(frozen=True)
class Drift:
    """Documents of the record that changed or are gone, and documents new since."""

    record: str
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    added: tuple[str, ...]

    @property
    def n_moved(self) -> int:
        return len(self.changed) + len(self.removed)

    @property
    def message(self) -> str:
        n = self.n_moved
        parts = [f"{len(self.changed)} edited"] if self.changed else []
        parts += [f"{len(self.removed)} gone"] if self.removed else []
        parts += [f"{len(self.added)} new"] if self.added else []
        return (f"{n} document{'s' if n != 1 else ''} changed since these labels were made "
                f"({', '.join(parts)}; {self.record}); run sweep golden rebase")

    def as_dict(self) -> dict[str, Any]:
        return {"record": self.record, "changed": list(self.changed),
                "removed": list(self.removed), "added": list(self.added),
                "message": self.message}


def compare(record: Mapping[str, Any], docs: Iterable[Document], where: str) -> Drift:
    recorded = record["documents"]
    current = document_entries(docs)
    changed = tuple(s for s in recorded if s in current
                    and current[s]["sha256"] != recorded[s]["sha256"])
    removed = tuple(s for s in recorded if s not in current)
    added = tuple(s for s in current if s not in recorded)
    return Drift(where, changed, removed, added)


def corpus_drift(golden_path: str | Path, docs: Iterable[Document]) -> Drift | None:
    """How the corpus moved since the labels were made: None when the set has no record or
    when no recorded document changed or went away (new documents alone move no label)."""
    record = read_record(golden_path)
    if record is None:
        return None
    drift = compare(record, docs, str(record_path(golden_path)))
    return drift if drift.n_moved else None
