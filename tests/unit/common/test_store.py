"""The cache stores' settings (sweep.common.store): what a cache.url may hold, and the SQL each
dialect gets from one table declaration."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.common.secret import find_secrets, url_has_userinfo
from sweep.common.store import CacheTarget, Table, _ddl, check_url


def test_a_role_only_postgres_url_is_no_secret_but_a_password_is() -> None:
    assert not url_has_userinfo("postgresql://sweep@db.internal:5432/cache")
    assert not url_has_userinfo("postgres://sweep@127.0.0.1/cache?sslmode=require")
    assert url_has_userinfo("postgresql://sweep:hunter2@db.internal:5432/cache")
    assert url_has_userinfo("https://token@example.org/")  # other schemes: any userinfo
    tree = {"cache": {"url": "postgresql://sweep:hunter2@h/db"}}
    assert [k for k, _ in find_secrets(tree)] == ["cache.url"]
    assert list(find_secrets({"cache": {"url": "postgresql://sweep@h/db"}})) == []


@pytest.mark.parametrize(("url", "says"), [
    ("", "empty"),
    ("mysql://u@h/db", "not a postgresql:// URL"),
    ("postgresql://u:pw@h/db", "holds a password"),
])
def test_bad_cache_urls_are_one_line_without_the_password(url: str, says: str) -> None:
    with pytest.raises(SweepError) as err:
        check_url(url)
    assert says in str(err.value) and "pw" not in str(err.value).replace("password", "")


def test_target_checks_backend_and_url() -> None:
    with pytest.raises(SweepError, match=r"cache\.backend"):
        CacheTarget("/tmp", "redis")
    with pytest.raises(SweepError, match=r"cache\.url"):
        CacheTarget("/tmp", "postgres")
    assert CacheTarget("/tmp", "postgres", "postgresql://u@h:1/db").shared
    assert not CacheTarget("/tmp").shared


def test_one_table_two_dialects() -> None:
    t = Table("t", (("k", "BLOB"), ("n", "INTEGER"), ("v", "REAL"), ("c", "BLOB NULL")),
              ("k",))
    assert _ddl(t, "sqlite") == ("CREATE TABLE IF NOT EXISTS t (k BLOB NOT NULL, n INTEGER NOT "
                                 "NULL, v REAL NOT NULL, c BLOB, PRIMARY KEY (k)) WITHOUT ROWID")
    assert _ddl(t, "postgres") == ("CREATE TABLE IF NOT EXISTS t (k BYTEA NOT NULL, n BIGINT "
                                   "NOT NULL, v DOUBLE PRECISION NOT NULL, c BYTEA, PRIMARY KEY "
                                   "(k))")


def _open_at_once(kind: str, folder: str, go: object, out: object) -> None:
    from sweep.common.sqlite import open_db
    from sweep.common.store import SQLiteStore
    path = Path(folder) / "cache.sqlite"
    go.wait(60)  # type: ignore[attr-defined]  # every process opens the new file together
    try:
        if kind == "store":
            SQLiteStore(path, [Table("t", (("key", "BLOB"), ("v", "INTEGER")), ("key",))],
                        "test cache").close()
        else:
            open_db(path, "CREATE TABLE IF NOT EXISTS t (key BLOB PRIMARY KEY, v INTEGER);",
                    "test cache").close()
        out.put("ok")  # type: ignore[attr-defined]
    except Exception as exc:  # the parent asserts on what each one met
        out.put(str(exc))  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["store", "open_db"])
def test_jobs_opening_one_new_cache_together_all_get_it(tmp_path: Path, kind: str) -> None:
    # Four jobs switching a new file to WAL at once: SQLite told the losers "database is
    # locked" without waiting (about half of such rounds failed before the retry), and the
    # message claimed a two-minute wait that never happened.
    ctx = mp.get_context("spawn")
    for trial in range(6):
        folder = tmp_path / str(trial)
        go, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(kind, str(folder), go, out))
                 for _ in range(4)]
        for p in procs:
            p.start()
        met = [out.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(30)
        assert met == ["ok"] * 4, (trial, met)


def test_select_keys_answers_each_key_once_a_sorted_batch_at_a_time(tmp_path: Path) -> None:
    """Keys past one batch, repeated and in random order: every stored key comes back once
    (and a missing one not at all), each statement's keys in key order."""
    import random

    from sweep.common import sqlite as sq
    from sweep.common.sqlite import KEYS_PER_SELECT
    from sweep.common.store import SQLiteStore

    table = Table("t", (("key", "BLOB"), ("v", "INTEGER")), ("key",))
    store = SQLiteStore(tmp_path / "s.sqlite", [table], "test cache")
    stored = [i.to_bytes(4, "big") for i in range(0, 2 * KEYS_PER_SELECT + 7, 1)]
    store.insert(table, [(k, int.from_bytes(k, "big")) for k in stored], replace=False)
    asked = stored[::-1] + stored[:40] + [b"absent"]
    random.Random(3).shuffle(asked)
    sent: list[list[bytes]] = []
    trace = store.db.execute

    def execute(sql: str, params: list) -> object:
        sent.append(params)
        return trace(sql, params)

    store.db = type("Spy", (), {"execute": staticmethod(execute)})()  # type: ignore[assignment]
    rows = list(store.select_keys("SELECT key, v FROM t WHERE key IN ({marks})", [], asked))
    assert sorted((bytes(k), v) for k, v in rows) == [(k, int.from_bytes(k, "big"))
                                                      for k in stored]
    assert [k for part in sent for k in part] == sorted(set(asked))
    assert all(len(part) <= KEYS_PER_SELECT for part in sent) and len(sent) == 3
    with sq.open_db(tmp_path / "f.sqlite", "CREATE TABLE t (key BLOB PRIMARY KEY, v INTEGER);",
                    "test cache") as db:
        db.executemany("INSERT INTO t VALUES (?, ?)",
                       [(k, int.from_bytes(k, "big")) for k in stored])
        got = list(sq.select_keys(db, "SELECT key, v FROM t WHERE key IN ({marks})", [], asked))
        assert sorted((bytes(k), v) for k, v in got) == sorted((bytes(k), v) for k, v in rows)
