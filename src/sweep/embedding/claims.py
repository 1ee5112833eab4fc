"""Claims on the embedding work a sweep's configurations share, kept beside the cache.

Before a sweep fans out, its parent writes the texts that more than one configuration needs as
*units* (a few hundred texts of one model each) into the ``prewarm_units`` table of the cache's
store: a SQLite file in ``cache.dir`` (one machine), or the PostgreSQL database of
``cache.backend=postgres`` (every node of a cluster). Each job then takes part before its own
work: it claims a unit nobody holds, embeds it into the cache, marks it done, and repeats;
when every unit of its model is held or done it waits for the holders. Jobs that start together
split the units between them, and each text is embedded once in total.

A claim is a lease: ``holder`` and ``expires`` (epoch seconds), set by one compare-and-set
``UPDATE ... WHERE holder IS NULL OR expires < now`` (two jobs racing for a unit: one row
changes, one job gets it), renewed by a thread of the holder every quarter lease while it
embeds the unit. A holder that dies stops renewing; once its lease is over the unit is claimable again and the next job takes it.
The clock is each node's own (``time.time()``): clocks kept by NTP differ by far less than
a lease.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from sweep.common.progress import Progress
from sweep.common.store import CacheTarget, PostgresStore, SQLiteStore, Store, Table, open_store

log = logging.getLogger(__name__)

UNITS = Table("prewarm_units", (
    ("plan", "TEXT"), ("unit", "INTEGER"), ("model", "TEXT"), ("query", "INTEGER"),
    ("texts", "TEXT"), ("holder", "TEXT NULL"), ("expires", "REAL"), ("done", "INTEGER"),
), ("plan", "unit"))
FILE_NAME = "claims.sqlite"
# How long a dead holder's unit waits for another job; the living holder renews it every 30 s.
LEASE_S = 120.0
POLL_S = 1.0


@dataclass(frozen=True)
class Unit:
    plan: str
    unit: int
    model: str
    query: bool  # embedded as questions (the model's query prefix), else as documents
    texts: tuple[str, ...]


def new_holder() -> str:
    """Who holds a claim, as the table shows it: the host, the process and a nonce."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ClaimBoard:
    """The ``prewarm_units`` table of one cache target, seen by one holder."""

    def __init__(self, target: CacheTarget, *, holder: str | None = None,
                 lease_s: float = LEASE_S) -> None:
        self.target = target
        self._db = open_store(target, FILE_NAME, (UNITS,), "prewarm claims")
        self.location = self._db.location
        self.holder = holder or new_holder()
        self.lease_s = lease_s

    def publish(self, plan: str, units: Iterable[tuple[str, bool, Sequence[str]]]) -> int:
        """Write ``(model, query, texts)`` units under ``plan``, unclaimed; returns how many.
        Publishing a plan again adds nothing (first write wins)."""
        rows = [(plan, i, model, int(query), json.dumps(list(texts)), None, 0.0, 0)
                for i, (model, query, texts) in enumerate(units)]
        if rows:
            self._db.insert(UNITS, rows, replace=False)
        return len(rows)

    def claim(self, plan: str, model: str) -> Unit | None:
        """A unit of ``model`` nobody holds (or whose holder's lease ran out), now ours."""
        now = time.time()
        free = self._db.execute(
            "SELECT unit FROM prewarm_units WHERE plan = ? AND model = ? AND done = 0 AND "
            "(holder IS NULL OR expires < ?) ORDER BY unit", [plan, model, now])
        for (unit,) in free:
            got = self._db.execute(
                "UPDATE prewarm_units SET holder = ?, expires = ? WHERE plan = ? AND unit = ? "
                "AND done = 0 AND (holder IS NULL OR expires < ?) RETURNING query, texts",
                [self.holder, now + self.lease_s, plan, unit, now])
            if got:  # else another job took it between the SELECT and here: the next one
                query, texts = got[0]
                return Unit(plan, int(unit), model, bool(query), tuple(json.loads(texts)))
        return None

    def renew(self, unit: Unit, db: Store | None = None) -> None:
        (db or self._db).execute("UPDATE prewarm_units SET expires = ? WHERE plan = ? AND unit = ? "
                         "AND holder = ?", [time.time() + self.lease_s, unit.plan, unit.unit,
                                            self.holder])

    def heartbeat(self, unit: Unit) -> threading.Event:
        """Renew ``unit``'s lease every quarter lease from a thread of its own (with its own
        connection) until the returned event is set: a model that takes minutes to load, or a
        slow slice, never lets the lease run out while this process lives."""
        stop = threading.Event()

        def beat() -> None:
            db: Store = (SQLiteStore(Path(self.location), (UNITS,), "prewarm claims")
                         if self._db.dialect == "sqlite" else
                         PostgresStore(self.target.url, self.target.password_env, (UNITS,),
                                       "prewarm claims"))
            try:
                while not stop.wait(self.lease_s / 4):
                    self.renew(unit, db)
            except Exception as exc:  # the lease then runs out: another job redoes the unit
                log.warning("prewarm claims: the lease of unit %d was not renewed (%s)",
                            unit.unit, exc)
            finally:
                db.close()

        threading.Thread(target=beat, daemon=True, name=f"lease {unit.unit}").start()
        return stop

    def finish(self, unit: Unit) -> None:
        # Whoever holds it now: its texts are in the cache, so it is done for everyone.
        self._db.execute("UPDATE prewarm_units SET done = 1 WHERE plan = ? AND unit = ?",
                         [unit.plan, unit.unit])

    def counts(self, plan: str, model: str | None = None) -> tuple[int, int]:
        """(units, units done) of ``plan``, of one model or of all."""
        where, params = "plan = ?", [plan]
        if model is not None:
            where, params = "plan = ? AND model = ?", [plan, model]
        rows = self._db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(done), 0) FROM prewarm_units WHERE {where}", params)
        return int(rows[0][0]), int(rows[0][1])

    def drop(self, plan: str) -> None:
        """Forget ``plan`` (the sweep ended: its texts are in the cache)."""
        self._db.execute("DELETE FROM prewarm_units WHERE plan = ?", [plan])

    def close(self) -> None:
        if self._db.dialect == "sqlite":  # a PostgreSQL connection is the process's, shared
            self._db.close()


Encode = Callable[[list[str], bool], int]  # (texts, as queries) -> texts sent to the model


def take_part(board: ClaimBoard, plan: str, model: str, encode: Encode, *,
              poll_s: float = POLL_S, progress: bool = True) -> dict[str, float]:
    """Embed units of ``model`` until every one is done: claimed here and embedded, or done by
    another job (waited for). Returns what this job did: units, texts encoded, seconds waited."""
    total, done = board.counts(plan, model)
    mine = encoded = 0
    waited = 0.0
    if total == done:
        return {"units": 0.0, "texts_encoded": 0.0, "wait_s": 0.0}
    desc = f"shared texts of the sweep ({total} units of this model)"
    with Progress(desc, bar=False) if progress else nullcontext() as bar:
        while True:
            unit = board.claim(plan, model)
            if unit is not None:
                beating = board.heartbeat(unit)
                try:
                    encoded += encode(list(unit.texts), unit.query)
                finally:
                    beating.set()
                board.finish(unit)
                mine += 1
            else:
                total, done = board.counts(plan, model)
                if done >= total:
                    break
                # Held by other jobs: their texts arrive in the cache; a dead holder's lease
                # runs out and the next claim() takes its unit.
                time.sleep(poll_s)
                waited += poll_s
            if bar is not None:
                total, done = board.counts(plan, model)
                bar.note = (f"{done} of {total} units done, {mine} here ({encoded:,} texts "
                            "encoded here)")
    return {"units": float(mine), "texts_encoded": float(encoded), "wait_s": waited}
