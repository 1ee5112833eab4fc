"""SQLite files for the caches, and the content keys they are indexed by."""

from __future__ import annotations

import functools
import hashlib
import random
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sweep.common.errors import CacheUnusable, SweepError


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


@functools.cache
def source_key(path: str) -> str:
    """sha256 of a module's source file: part of a cache key wherever that module's code
    decides the cached value, so that changing the code can never serve a stale value (no
    version number to remember to bump)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def parts_key(parts: Iterable[str | bytes]) -> bytes:
    """sha256 of a sequence of strings (as UTF-8) or bytes, each length-prefixed, so ("ab",
    "c") and ("a", "bc") differ."""
    return feed_parts(hashlib.sha256(), parts).digest()


def feed_parts(h: Any, parts: Iterable[str | bytes]) -> Any:
    """``parts`` added to the running hash ``h`` as `parts_key` lays them out, and ``h``: a
    copy of a hash fed a common head (``h.copy()``) then finishes many keys of one layout."""
    for part in parts:
        data = part.encode("utf-8") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h


class CacheDB(sqlite3.Connection):
    """A connection that knows which cache file it is, so an error met mid-run (a cache
    damaged after it was opened, a folder made read-only) names the file and its real cause."""

    where: Path
    what: str


def cache_error(exc: BaseException, path: Path, what: str) -> CacheUnusable:
    """One line for a cache that cannot be used, naming the cause SQLite (or the OS) gives:
    a damaged file is not a permission problem, and a read-only folder is not damage."""
    text = str(exc)
    low = text.lower()
    if isinstance(exc, sqlite3.DatabaseError) and any(
            s in low for s in ("malformed", "not a database", "disk i/o error")):
        # A file cut short (a copy or sync interrupted, half of it deleted) or written over:
        # every value in it is derived, so the fix is to drop it, never to trust part of it.
        return CacheUnusable(f"cache.dir: the {what} {path} is damaged ({text}): cut short or "
                          "written over", hint=f"delete {path} and its -wal/-shm files (it "
                          "is rebuilt) or set cache.enabled=false")
    if "locked" in low or "busy" in low:
        return CacheUnusable(f"cache.dir: the {what} {path} stayed locked by another process "
                          f"for over {BUSY_TIMEOUT_S} s ({text})",
                          hint="let the other sweep finish, or give this one its own cache.dir")
    if isinstance(exc, PermissionError) or any(
            s in low for s in ("readonly", "read-only", "unable to open", "permission denied")):
        return CacheUnusable(f"cache.dir: cannot write the {what} {path} ({text}): the folder or "
                          "the file is read-only (SQLite writes the file and a -wal/-shm beside "
                          "it, even to read)",
                          hint="set cache.dir to a writable folder or cache.enabled=false")
    return CacheUnusable(f"cache.dir: cannot use the {what} {path} ({text})",
                      hint="set cache.dir to another folder or cache.enabled=false")


BUSY_TIMEOUT_S = 120


def _locked(exc: sqlite3.Error) -> bool:
    low = str(exc).lower()
    return "locked" in low or "busy" in low


def prepare(db: sqlite3.Connection, schema: str) -> None:
    """WAL mode and ``schema`` on a fresh connection, waiting (up to ``BUSY_TIMEOUT_S``) while
    another process holds the file.

    Several jobs opening one new cache at once (parallel Hydra jobs, Ray workers) race to
    switch it to WAL and create its tables; SQLite answers the loser "database is locked" at
    once, without its busy handler (a writer waiting on a reader that waits on it would
    deadlock), so the wait is ours: retried with a growing, jittered pause."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(schema)
            return
        except sqlite3.OperationalError as exc:
            if not _locked(exc) or time.monotonic() + pause > deadline:
                raise
            if db.in_transaction:
                db.execute("ROLLBACK")
        time.sleep(pause * (1 + random.random()))
        pause = min(pause * 2, 0.5)


def open_db(path: Path, schema: str, what: str) -> sqlite3.Connection:
    """A SQLite file in WAL mode (readers never wait for the writer; a busy writer is waited
    for up to two minutes), autocommit, with ``schema`` applied."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                             factory=CacheDB)
        db.where, db.what = path, what
        prepare(db, schema)
    except (OSError, sqlite3.Error) as exc:
        raise cache_error(exc, path, what) from None
    return db


def _raise_for(db: sqlite3.Connection, exc: sqlite3.Error) -> SweepError:
    if isinstance(db, CacheDB):
        return cache_error(exc, db.where, db.what)
    return cache_error(exc, Path("?"), "cache")


# Keys per SELECT ... IN (...) (SQLite's variable limit and PostgreSQL's 65,535 are above).
KEYS_PER_SELECT = 500


def key_batches(keys: Sequence[bytes]) -> Iterator[list[bytes]]:
    """The distinct ``keys`` in batches of `KEYS_PER_SELECT`, in key order: each batch then
    covers one stretch of the primary key's B-tree, so the pages one lookup reads serve the
    next. Hash keys in arrival order sent every batch all over the file: reading the 19k cached
    vectors of a warm sweep took 0.34 s, 0.11 s sorted (callers key the rows they get by key,
    never by position)."""
    unique = sorted(set(keys))
    for lo in range(0, len(unique), KEYS_PER_SELECT):
        yield unique[lo : lo + KEYS_PER_SELECT]


def select_keys(db: sqlite3.Connection, sql: str, params: Sequence[object],
                keys: Sequence[bytes]) -> Iterator[tuple]:
    """The rows of ``sql`` for every distinct key, a batch of keys per statement: ``sql`` ends
    in ``key IN ({marks})``, ``params`` are its parameters before the keys."""
    for part in key_batches(keys):
        try:
            rows = db.execute(sql.format(marks=",".join("?" * len(part))),
                              [*params, *part]).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _raise_for(db, exc) from None
        yield from rows


def write_rows(db: sqlite3.Connection, sql: str, rows: Iterable[tuple]) -> None:
    """``sql`` over ``rows`` in one transaction: a crash leaves all of them or none."""
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.DatabaseError as exc:
        raise _raise_for(db, exc) from None
    try:
        db.executemany(sql, rows)
        db.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise _raise_for(db, exc) from None
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
