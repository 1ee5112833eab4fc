"""Content-addressed embedding cache on disk: a text embedded once is never embedded again.

Key: (model fingerprint, sha256 of the exact text sent to the model, prefix included). Value:
the float32 vector as raw bytes (no pickle) and a checksum of (fingerprint, text hash, vector),
so a row overwritten with another valid vector is a miss, with a warning; beside it, under the
same key, the text's length in model tokens (what the truncation check needs, so a warm run
never re-tokenises), and other facts measured once per text: where the model stops reading a
truncated text, and the time a query took through the model on this machine (kind
``query_ms@<machine>``).
Storage: one SQLite file in WAL mode; every write is a transaction, so a crash leaves either
the whole batch or none of it, and several jobs may read and write at once (SQLite serialises
the writers; a busy writer is waited for).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from sweep.common.sqlite import open_db, parts_key, select_keys, write_rows

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    key BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    checksum BLOB,
    PRIMARY KEY (model, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS token_lengths (
    model TEXT NOT NULL,
    key BLOB NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS facts (
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    key BLOB NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (model, kind, key)
) WITHOUT ROWID;
"""


def checksum(model: str, key: bytes, vector: bytes) -> bytes:
    """Ties a stored vector to its (model fingerprint, text hash): a vector copied or written
    over another row's, still of a valid shape, no longer matches and is not used."""
    return parts_key([model, key.hex(), vector.hex()])[:16]


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, _SCHEMA, "embedding cache")
        self._migrate()

    def _migrate(self) -> None:
        """Cache files written before the checksum column: add it and fill it once for the
        rows already there (they were trusted before; from now on they are checked)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(embeddings)")}
        if "checksum" in columns:
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(embeddings)")}
            if "checksum" not in columns:  # another process may have migrated meanwhile
                self._db.execute("ALTER TABLE embeddings ADD COLUMN checksum BLOB")
                rows = self._db.execute("SELECT model, key, vector FROM embeddings").fetchall()
                self._db.executemany(
                    "UPDATE embeddings SET checksum = ? WHERE model = ? AND key = ?",
                    [(checksum(m, bytes(k), bytes(v)), m, k) for m, k, v in rows])
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        bad: list[tuple[str, bytes, bytes]] = []
        for key, dim, blob, check in self._select("dim, vector, checksum", "embeddings", model,
                                                  keys):
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] != dim:  # a torn value can only be ignored, never trusted
                continue
            if check is None or bytes(check) != checksum(model, bytes(key), bytes(blob)):
                bad.append((model, bytes(key), bytes(blob)))
                continue
            found[bytes(key)] = vec
        if bad:
            log.warning("embedding cache %s: %d vectors fail their checksum (overwritten or "
                        "corrupted); they are embedded again", self.path, len(bad))
            # Dropped (only if still the bad value), so that the fresh vector can be stored.
            self._insert("DELETE FROM embeddings WHERE model = ? AND key = ? AND vector = ?",
                        bad)
        return found

    def put_many(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> int:
        def rows() -> Iterator[tuple]:
            # Made as SQLite takes them: a list of every blob was a second copy of all the
            # vectors (100 MB for the 69k chunks of a 52 MB document).
            for key, vec in items:
                blob = np.asarray(vec, dtype=np.float32).tobytes()
                yield model, key, int(vec.shape[0]), blob, checksum(model, key, blob)

        if not items:
            return 0
        self._insert("INSERT OR IGNORE INTO embeddings (model, key, dim, vector, checksum) "
                     "VALUES (?, ?, ?, ?, ?)", rows())
        return len(items)

    def get_lengths(self, model: str, keys: Sequence[bytes]) -> dict[bytes, int]:
        return {bytes(key): int(n)
                for key, n in self._select("n", "token_lengths", model, keys)}

    def _select(self, columns: str, table: str, model: str, keys: Sequence[bytes]
                ) -> Iterator[tuple]:
        return select_keys(self._db, f"SELECT key, {columns} FROM {table} WHERE model = ? AND "
                           "key IN ({marks})", [model], keys)

    def put_lengths(self, model: str, items: Iterable[tuple[bytes, int]]) -> int:
        rows = [(model, key, int(n)) for key, n in items]
        return self._insert("INSERT OR IGNORE INTO token_lengths VALUES (?, ?, ?)", rows)

    def get_facts(self, model: str, kind: str, keys: Sequence[bytes]) -> dict[bytes, float]:
        return {bytes(key): float(value) for key, value in select_keys(
            self._db, "SELECT key, value FROM facts WHERE model = ? AND kind = ? AND key IN "
            "({marks})", [model, kind], keys)}

    def put_facts(self, model: str, kind: str, items: Iterable[tuple[bytes, float]]) -> int:
        rows = [(model, kind, key, float(v)) for key, v in items]
        return self._insert("INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?)", rows)

    def _insert(self, sql: str, rows: Sequence[tuple] | Iterator[tuple]) -> int:
        """Run ``sql`` over ``rows`` in one transaction; returns how many rows (-1 for an
        iterator, which is not counted: its caller knows)."""
        if isinstance(rows, Sequence) and not rows:
            return 0
        write_rows(self._db, sql, rows)
        return len(rows) if isinstance(rows, Sequence) else -1

    def info(self) -> dict[str, object]:
        models = self._db.execute(
            "SELECT model, COUNT(*), SUM(LENGTH(vector)) FROM embeddings GROUP BY model"
        ).fetchall()
        lengths = self._db.execute("SELECT COUNT(*) FROM token_lengths").fetchone()[0]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return {"path": str(self.path), "bytes_on_disk": size,
                "models": {m: {"vectors": n, "vector_bytes": b} for m, n, b in models},
                "vectors": sum(n for _, n, _ in models), "token_lengths": int(lengths)}

    def clear(self) -> int:
        n = self._db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        self._db.execute("DELETE FROM embeddings")
        self._db.execute("DELETE FROM token_lengths")
        self._db.execute("DELETE FROM facts")
        self._db.execute("VACUUM")
        return int(n)

    def close(self) -> None:
        self._db.close()


_CACHES: dict[Path, EmbeddingCache] = {}


def get_cache(folder: str | Path) -> EmbeddingCache:
    path = (Path(folder) / "embeddings.sqlite").resolve()
    if path not in _CACHES:
        _CACHES[path] = EmbeddingCache(path)
    return _CACHES[path]


