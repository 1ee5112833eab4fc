"""The golden file as the labelling page writes it: append one line, or rewrite safely.

Two guarantees, because a golden set is hours of hand work:

* Adding an item appends one line with a single ``write`` on an ``O_APPEND`` descriptor,
  then ``fsync``. Earlier lines are never read back and rewritten; if the write fails part
  way (disk full), the file is truncated back to its old length, so no torn line is left.
* Editing or deleting an item writes the whole new file to a temporary file in the same
  folder, ``fsync``s it, and ``os.replace``s it over the old one (then ``fsync``s the
  folder). A crash at any point leaves either the old file or the new one, never a mix.

Every write (append, edit, delete) holds a lock on ``.<name>.lock`` beside the real file, taken
by every process (`filelock`), and reads the file again under it: two ``sweep label`` pages on
one golden file, or a page and a script using this class, never drop each other's lines (an
edit that read the file before another process appended and then replaced it would).

Every other line is kept byte for byte, malformed ones included: the page must not "clean
up" what it does not understand. Edits name the line they change by its qid and a digest of
its text as the page saw it, so a line changed on disk in the meantime is not overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, fsync_dir, read_bytes_regular
from sweep.data.golden import KNOWN_FIELDS, dump_line, parse_golden_lines

# Seconds a write waits for another process's write to the same file before giving up.
LOCK_TIMEOUT_S = 30

class StaleError(SweepError):
    """The line the page wanted to change is no longer what it was when the page was loaded."""


@dataclass(frozen=True)
class Entry:
    """One non-blank line of the golden file, as bytes on disk and as parsed (when it is an
    object)."""

    lineno: int
    raw: bytes
    obj: dict[str, Any] | None
    qid: str | None
    digest: str


def line_digest(raw: bytes) -> str:
    return hashlib.sha256(raw.rstrip(b"\r")).hexdigest()[:16]


def append_bytes(path: Path, data: bytes) -> None:
    """Append ``data`` in one write; on failure the file is cut back to its previous length."""
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        # A last line without its newline (a hand edit) must not get our line glued to it.
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            os.fsync(fd)
        except BaseException:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)


class GoldenFile:
    """Read, append to, and rewrite one golden JSONL file (thread-safe within a process)."""

    def __init__(self, path: str | Path) -> None:
        # Through a symlink, the target is what gets replaced, not the link.
        self.path = Path(os.path.realpath(path))
        self.shown_path = Path(path)
        self._lock = threading.Lock()
        # On the real path, so two processes reaching the file through different links share it.
        self._file_lock = FileLock(str(self.path.with_name(f".{self.path.name}.lock")),
                                   timeout=LOCK_TIMEOUT_S)
        if self.path.is_dir():
            raise SweepError(f"golden.path is a folder, not a JSONL file: {path}")
        if not self.path.parent.is_dir():
            raise SweepError(f"golden file's folder does not exist: {self.path.parent}")

    # ------------------------------------------------------------------ reading

    def read_bytes(self) -> bytes:
        try:
            return read_bytes_regular(self.path)
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise SweepError(f"{self.shown_path}: cannot read ({exc.strerror})") from None

    def entries(self) -> list[Entry]:
        out = []
        data = self.read_bytes()
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        for lineno, raw in enumerate(data.split(b"\n"), start=1):
            if not raw.strip():
                continue
            obj: Any = None
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
                obj = None
            if not isinstance(obj, dict):
                obj = None
            qid = obj.get("qid") if obj else None
            qid = str(qid) if isinstance(qid, str | int) and not isinstance(qid, bool) else None
            out.append(Entry(lineno, raw, obj, qid, line_digest(raw)))
        return out

    def qids(self) -> set[str]:
        return {e.qid for e in self.entries() if e.qid is not None}

    def next_qid(self) -> str:
        """The next id in the file's main style (``q050`` -> ``q051``, even when a few
        ``x001``-style ids of a special category follow), else ``q001``."""
        entries = self.entries()
        taken = {e.qid for e in entries if e.qid}
        prefix, width, top = "q", 3, 0
        numbered = [m for e in entries if e.qid and (m := re.fullmatch(r"(.*?)(\d+)", e.qid))]
        if numbered:
            counts = Counter(m.group(1) for m in numbered)
            # The most used prefix; on a tie, the one used last.
            prefix = max(reversed([m.group(1) for m in numbered]), key=counts.__getitem__)
            mine = [m for m in numbered if m.group(1) == prefix]
            width = len(mine[-1].group(2))
            top = max(int(m.group(2)) for m in mine)
        n = top + 1
        while f"{prefix}{n:0{width}d}" in taken:
            n += 1
        return f"{prefix}{n:0{width}d}"

    # ------------------------------------------------------------------ writing

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Held around every write: this process's threads, then every other process."""
        with self._lock:
            try:
                self._file_lock.acquire()
            except Timeout:
                raise SweepError(f"{self.shown_path}: another process has been writing it for "
                                 f"{LOCK_TIMEOUT_S} s; nothing was saved, try again") from None
            try:
                yield
            finally:
                self._file_lock.release()

    def _check(self, obj: dict[str, Any]) -> str:
        """The line for ``obj``, or a `SweepError` with the first problem the parser finds."""
        unknown = sorted(set(obj) - KNOWN_FIELDS)
        if unknown:
            raise SweepError(f"unknown field {unknown[0]!r}")
        line = dump_line(obj)
        _, problems = parse_golden_lines(line, str(self.shown_path))
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            p = errors[0]
            raise SweepError(f"{p.field}: {p.message}" if p.field else p.message)
        return line

    def append(self, obj: dict[str, Any]) -> Entry:
        """Add one item at the end; its qid must be new."""
        line = self._check(obj)
        with self._writing():
            if str(obj["qid"]) in self.qids():
                raise SweepError(f"qid {obj['qid']!r} is already in {self.shown_path}")
            append_bytes(self.path, line.encode("utf-8") + b"\n")
            return self.entries()[-1]

    def _find(self, entries: list[Entry], qid: str, digest: str) -> Entry:
        for entry in entries:
            if entry.qid == qid and entry.digest == digest:
                return entry
        if any(e.qid == qid for e in entries):
            raise StaleError(f"item {qid!r} changed in {self.shown_path} since this page was "
                             "loaded; reload the page")
        raise StaleError(f"item {qid!r} is no longer in {self.shown_path}; reload the page")

    def _rewrite(self, target: Entry, new_raw: bytes | None) -> None:
        data = self.read_bytes()
        lines = data.split(b"\n")
        # Line numbers count from after a BOM the same way `entries` does.
        bom = data.startswith(b"\xef\xbb\xbf")
        index = target.lineno - 1
        current = lines[index][3:] if bom and index == 0 else lines[index]
        if current != target.raw:
            raise StaleError(f"{self.shown_path} changed while saving; reload the page")
        if new_raw is None:
            del lines[index]
        else:
            lines[index] = (b"\xef\xbb\xbf" if bom and index == 0 else b"") + new_raw
        atomic_write(self.path, b"\n".join(lines))

    def replace(self, qid: str, digest: str, obj: dict[str, Any]) -> Entry:
        """Rewrite the line of ``qid`` (as seen with ``digest``) with ``obj``."""
        line = self._check(obj)
        with self._writing():
            entries = self.entries()
            target = self._find(entries, qid, digest)
            new_qid = str(obj["qid"])
            if new_qid != qid and new_qid in {e.qid for e in entries}:
                raise SweepError(f"qid {new_qid!r} is already in {self.shown_path}")
            self._rewrite(target, line.encode("utf-8"))
            for entry in self.entries():
                if entry.lineno == target.lineno:
                    return entry
        raise AssertionError("rewritten line vanished")  # pragma: no cover

    def delete(self, qid: str, digest: str) -> None:
        """Remove the line of ``qid`` (as seen with ``digest``)."""
        with self._writing():
            target = self._find(self.entries(), qid, digest)
            self._rewrite(target, None)
