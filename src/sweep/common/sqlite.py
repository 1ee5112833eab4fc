"""SQLite files for the caches, and the content keys they are indexed by."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from sweep.common.errors import SweepError


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@functools.cache
def source_key(path: str) -> str:
    """sha256 of a module's source file: part of a cache key wherever that module's code
    decides the cached value, so that changing the code can never serve a stale value (no
    version number to remember to bump)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def parts_key(parts: Iterable[str]) -> bytes:
    """sha256 of a sequence of strings, each length-prefixed, so ("ab", "c") and ("a", "bc")
    differ."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "big") + data)
    return h.digest()


def open_db(path: Path, schema: str, what: str) -> sqlite3.Connection:
    """A SQLite file in WAL mode (readers never wait for the writer; a busy writer is waited
    for up to two minutes), autocommit, with ``schema`` applied."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), timeout=120, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(schema)
    except (OSError, sqlite3.Error) as exc:
        raise SweepError(f"cache.dir: cannot open the {what} {path} ({exc})",
                         hint="set cache.dir to a writable folder or cache.enabled=false") \
            from None
    return db

