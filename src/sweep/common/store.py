"""Where the caches keep their rows: a SQLite file per cache in ``cache.dir`` (one machine), or
one PostgreSQL database that every node of a cluster reaches (``cache.backend=postgres``).

The caches speak one small SQL: ``?`` placeholders, ``{marks}`` for a batch of keys, tables
declared as `Table` (so each dialect gets its own DDL), inserts through `Store.insert` (first
write wins, or the last one replaces). Both stores keep the SQLite cache's promises: a batch
is one transaction (a crash leaves all of it or none), and a reader sees a row whole or not
at all. PostgreSQL adds what several machines writing at once need: the upsert
(``ON CONFLICT``) writes a text once whoever races for it, the rows of a batch are sent in key
order (two writers of overlapping batches take their row locks in the same order, so they
cannot deadlock), and a connection dropped mid-batch is opened again and the batch sent again
(the transaction it was in was rolled back by the server, and an upsert is idempotent).

The password is never in the config: ``cache.password_env`` names the variable that holds it,
and a URL with a password in it is refused.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from sweep.common.errors import SweepError
from sweep.common.paths import resolve_user_path
from sweep.common.secret import scrub, scrub_urls, url_has_secret_query
from sweep.common.sqlite import (
    BUSY_TIMEOUT_S,
    cache_error,
    key_batches,
    prepare,
)

log = logging.getLogger(__name__)

BACKENDS = ("sqlite", "postgres")


@dataclass(frozen=True)
class CacheTarget:
    """Where the caches live. ``dir`` is always a local folder: the SQLite files (backend
    sqlite), and what is never shared (model exports, BM25 index folders, served ledgers)."""

    dir: Path
    backend: str = "sqlite"
    url: str = ""
    password_env: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "dir", Path(self.dir))
        if self.backend not in BACKENDS:
            raise SweepError(f"cache.backend: {self.backend!r} is not one of "
                             f"{', '.join(BACKENDS)}")
        if self.backend == "postgres":
            check_url(self.url)

    @property
    def shared(self) -> bool:
        return self.backend == "postgres"

    def resolved(self) -> CacheTarget:
        """This target with ``dir`` absolute: the key of the one-per-process cache objects."""
        return replace(self, dir=resolve_user_path(self.dir, "cache.dir"))


def as_target(where: CacheTarget | str | Path) -> CacheTarget:
    return where if isinstance(where, CacheTarget) else CacheTarget(Path(where))


@dataclass(frozen=True)
class Table:
    """A table in the neutral schema: columns as (name, type) with type one of TEXT, BLOB,
    INTEGER, REAL, optionally followed by ``NULL`` (nullable); ``key`` is the primary key."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)


_PG_TYPES = {"TEXT": "TEXT", "BLOB": "BYTEA", "INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION"}


def _ddl(table: Table, dialect: str) -> str:
    cols = []
    for name, kind in table.columns:
        base, _, null = kind.partition(" ")
        typ = _PG_TYPES[base] if dialect == "postgres" else base
        cols.append(f"{name} {typ}" + ("" if null == "NULL" else " NOT NULL"))
    body = ", ".join([*cols, f"PRIMARY KEY ({', '.join(table.key)})"])
    tail = " WITHOUT ROWID" if dialect == "sqlite" else ""
    return f"CREATE TABLE IF NOT EXISTS {table.name} ({body}){tail}"


class Store(Protocol):
    location: str  # a file path, or the URL without its password: what messages name
    dialect: str

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple]: ...

    def select_keys(self, sql: str, params: Sequence[object], keys: Sequence[bytes]
                    ) -> Iterator[tuple]: ...

    def write_rows(self, sql: str, rows: Iterable[tuple]) -> None: ...

    def insert(self, table: Table, rows: Iterable[tuple], *, replace: bool) -> None: ...

    def close(self) -> None: ...


class SQLiteStore:
    """A SQLite file in WAL mode (readers never wait for the writer; a busy writer is waited
    for up to two minutes), autocommit outside the batches."""

    dialect = "sqlite"

    def __init__(self, path: Path, tables: Sequence[Table], what: str) -> None:
        self.path = path
        self.location = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            prepare(self.db, ";\n".join(_ddl(t, "sqlite") for t in tables) + ";")
        except (OSError, sqlite3.Error) as exc:
            raise cache_error(exc, path, what) from None
        self.what = what

    def _error(self, exc: BaseException) -> SweepError:
        # a cache damaged or made read-only after it was opened: one line with the real cause
        return cache_error(exc, self.path, self.what)

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        try:
            return self.db.execute(sql, list(params)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None

    def select_keys(self, sql: str, params: Sequence[object], keys: Sequence[bytes]
                    ) -> Iterator[tuple]:
        for part in key_batches(keys):
            try:
                rows = self.db.execute(sql.format(marks=",".join("?" * len(part))),
                                       [*params, *part]).fetchall()
            except sqlite3.DatabaseError as exc:
                raise self._error(exc) from None
            yield from rows

    def write_rows(self, sql: str, rows: Iterable[tuple]) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise self._error(exc) from None
        try:
            self.db.executemany(sql, rows)
            self.db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise self._error(exc) from None
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def insert(self, table: Table, rows: Iterable[tuple], *, replace: bool) -> None:
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        marks = ", ".join("?" * len(table.columns))
        self.write_rows(f"{verb} INTO {table.name} ({', '.join(table.names)}) VALUES ({marks})",
                        rows)

    def close(self) -> None:
        self.db.close()


_USER_ONLY = re.compile(r"^postgres(?:ql)?://(?P<user>[^:/?#@\s]+)@(?P<rest>[^@\s]*)$")


def check_url(url: str) -> None:
    """``postgresql://USER@HOST:PORT/DB``: a role, no password (the variable named by
    ``cache.password_env`` holds it). The message never repeats a URL that held one."""
    if not url:
        raise SweepError("cache.url: empty; cache.backend=postgres needs "
                         "cache.url=postgresql://USER@HOST:PORT/DB")
    if not re.match(r"^postgres(?:ql)?://", url):
        raise SweepError("cache.url: not a postgresql:// URL (postgresql://USER@HOST:PORT/DB)")
    if ("@" in url and _USER_ONLY.match(url) is None) or url_has_secret_query(url):
        raise SweepError("cache.url: holds a password (user:password@ or ?password=); put the "
                         "password in an environment variable and name it with "
                         "cache.password_env")


def _conn_error(exc: BaseException, location: str, password: str | None) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    # libpq's first line is "connection failed: connection to server at ... failed: FATAL: ..."
    # or "... Connection refused"; the FATAL line is the reason when there is one.
    reason = next((ln for ln in lines if "FATAL" in ln), lines[0] if lines else type(exc).__name__)
    # the one scrubber: libpq may cut the password, and a cut password is still most of it
    return scrub(reason, password or "")


class PostgresStore:
    """One PostgreSQL connection (autocommit outside the batches); see the module doc."""

    dialect = "postgres"
    RETRIES = 3  # dropped connections or deadlocks survived per batch before giving up

    def __init__(self, url: str, password_env: str, tables: Sequence[Table], what: str) -> None:
        check_url(url)
        self.url = url
        self.location = scrub_urls(url)
        self.what = what
        self.password_env = password_env
        self._tables = tables
        self.db: Any = None
        self._connect()
        with self.db.transaction():
            # Several nodes may create the tables at once: the advisory lock makes it one.
            self.db.execute("SELECT pg_advisory_xact_lock(hashtext('chunk-sweep schema'))")
            for table in tables:
                self.db.execute(_ddl(table, "postgres"))

    def _password(self) -> str | None:
        if not self.password_env:
            return None
        value = os.environ.get(self.password_env)
        if value is None:
            raise SweepError(f"cache.password_env: the variable {self.password_env} is not set "
                             f"(it holds the password for {self.url})")
        return value

    def _connect(self) -> None:
        import psycopg

        password = self._password()
        try:
            kwargs: dict[str, Any] = {"autocommit": True, "connect_timeout": 10}
            if password is not None:
                kwargs["password"] = password
            self.db = psycopg.connect(self.url, **kwargs)
        except psycopg.Error as exc:
            raise SweepError(f"cache.url: cannot connect the {self.what} to {self.url} "
                             f"({_conn_error(exc, self.url, password)})",
                             hint="check the server, cache.url and the variable named by "
                             "cache.password_env") from None

    def _sql(self, sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    def _run(self, work: Any) -> Any:
        """``work(connection)``, with the connection opened again after it dropped and the
        work repeated after a deadlock (PostgreSQL aborted one of the two transactions)."""
        import psycopg
        from psycopg import errors

        for attempt in range(self.RETRIES + 1):
            try:
                if self.db is None or self.db.closed:
                    self._connect()
                return work(self.db)
            except (errors.DeadlockDetected, errors.SerializationFailure):
                if attempt == self.RETRIES:
                    raise
                time.sleep(0.05 * (attempt + 1))
            except psycopg.OperationalError as exc:
                if self.db is not None and not self.db.closed and not self.db.broken:
                    raise
                if attempt == self.RETRIES:
                    raise SweepError(f"cache.url: the {self.what} lost its connection to "
                                     f"{self.url} ({_conn_error(exc, self.url, None)})") \
                        from None
                log.warning("%s: connection to %s dropped (%s); connecting again", self.what,
                            self.url, _conn_error(exc, self.url, None))
                self.db = None
        raise AssertionError("unreachable")

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        def work(db: Any) -> list[tuple]:
            cur = db.execute(self._sql(sql), list(params))
            return cur.fetchall() if cur.description is not None else []

        return self._run(work)

    def select_keys(self, sql: str, params: Sequence[object], keys: Sequence[bytes]
                    ) -> Iterator[tuple]:
        for part in key_batches(keys):
            yield from self.execute(sql.format(marks=",".join("?" * len(part))),
                                    [*params, *part])

    def write_rows(self, sql: str, rows: Iterable[tuple]) -> None:
        batch = list(rows)  # kept whole so a batch can be sent again after a dropped connection
        if not batch:
            return
        statement = self._sql(sql)

        def work(db: Any) -> None:
            with db.transaction(), db.cursor() as cur:
                cur.executemany(statement, batch)

        self._run(work)

    def insert(self, table: Table, rows: Iterable[tuple], *, replace: bool) -> None:
        positions = [table.names.index(k) for k in table.key]
        # Key order: two writers of overlapping batches lock rows in one order (no deadlock).
        # One row per key, the one SQLite would keep (an upsert touching a row twice in one
        # statement is an error in PostgreSQL).
        by_key: dict[tuple, tuple] = {}
        for row in rows:
            k = tuple(row[p] for p in positions)
            if replace or k not in by_key:  # else the first write wins, as INSERT OR IGNORE
                by_key[k] = row
        ordered = [by_key[k] for k in sorted(by_key)]
        names = ", ".join(table.names)
        marks = ", ".join("?" * len(table.columns))
        if replace:
            rest = [c for c in table.names if c not in table.key]
            conflict = (f"ON CONFLICT ({', '.join(table.key)}) DO UPDATE SET "
                        + ", ".join(f"{c} = EXCLUDED.{c}" for c in rest))
        else:
            conflict = "ON CONFLICT DO NOTHING"
        self.write_rows(f"INSERT INTO {table.name} ({names}) VALUES ({marks}) {conflict}",
                        ordered)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


_STORES: dict[tuple, Store] = {}


def open_store(target: CacheTarget, file_name: str, tables: Sequence[Table], what: str
               ) -> Store:
    """The store for one cache: ``cache.dir/<file_name>`` (SQLite), or the database at
    ``cache.url`` (one connection per process and URL, shared by every cache)."""
    if target.backend == "sqlite":
        return SQLiteStore(resolve_user_path(target.dir / file_name, "cache.dir"), tables, what)
    # The pid: a connection is never shared with a forked child.
    key = (os.getpid(), target.url, target.password_env, tuple(t.name for t in tables))
    if key not in _STORES:
        _STORES[key] = PostgresStore(target.url, target.password_env, tables, what)
    return _STORES[key]
