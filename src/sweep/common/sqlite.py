"""SQLite files for the caches, and the content keys they are indexed by."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
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



# Keys per SELECT ... IN (...) (SQLite's variable limit is far above).
KEYS_PER_SELECT = 500


def select_keys(db: sqlite3.Connection, sql: str, params: Sequence[object],
                keys: Sequence[bytes]) -> Iterator[tuple]:
    """The rows of ``sql`` for every distinct key, a batch of keys per statement: ``sql`` ends
    in ``key IN ({marks})``, ``params`` are its parameters before the keys."""
    unique = list(dict.fromkeys(keys))
    for lo in range(0, len(unique), KEYS_PER_SELECT):
        part = unique[lo : lo + KEYS_PER_SELECT]
        yield from db.execute(sql.format(marks=",".join("?" * len(part))), [*params, *part])


def write_rows(db: sqlite3.Connection, sql: str, rows: Iterable[tuple]) -> None:
    """``sql`` over ``rows`` in one transaction: a crash leaves all of them or none."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.executemany(sql, rows)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
