"""Content-addressed embedding cache on disk: a text embedded once is never embedded again.

Key: (model fingerprint, sha256 of the exact text sent to the model, prefix included). Value:
the float32 vector as raw bytes (no pickle); beside it, under the same key, the text's length
in model tokens (what the truncation check needs, so a warm run never re-tokenises).
Storage: one SQLite file in WAL mode; every write is a transaction, so a crash leaves either
the whole batch or none of it, and several jobs may read and write at once (SQLite serialises
the writers; a busy writer is waited for).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from .errors import SweepError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    key BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS token_lengths (
    model TEXT NOT NULL,
    key BLOB NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (model, key)
) WITHOUT ROWID;
"""
_BATCH = 500  # keys per SELECT (SQLite's variable limit is far above)


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


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


class EmbeddingCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, _SCHEMA, "embedding cache")

    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for key, dim, blob in self._select("dim, vector", "embeddings", model, keys):
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] == dim:  # a torn value can only be ignored, never trusted
                found[bytes(key)] = vec
        return found

    def put_many(self, model: str, items: Iterable[tuple[bytes, np.ndarray]]) -> int:
        rows = [(model, key, int(vec.shape[0]), np.asarray(vec, dtype=np.float32).tobytes())
                for key, vec in items]
        return self._insert("INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?, ?)", rows)

    def get_lengths(self, model: str, keys: Sequence[bytes]) -> dict[bytes, int]:
        return {bytes(key): int(n)
                for key, n in self._select("n", "token_lengths", model, keys)}

    def _select(self, columns: str, table: str, model: str, keys: Sequence[bytes]
                ) -> Iterator[tuple]:
        unique = list(dict.fromkeys(keys))
        for lo in range(0, len(unique), _BATCH):
            part = unique[lo : lo + _BATCH]
            marks = ",".join("?" * len(part))
            yield from self._db.execute(
                f"SELECT key, {columns} FROM {table} WHERE model = ? AND key IN ({marks})",
                [model, *part])

    def put_lengths(self, model: str, items: Iterable[tuple[bytes, int]]) -> int:
        rows = [(model, key, int(n)) for key, n in items]
        return self._insert("INSERT OR IGNORE INTO token_lengths VALUES (?, ?, ?)", rows)

    def _insert(self, sql: str, rows: list[tuple]) -> int:
        if not rows:
            return 0
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(sql, rows)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return len(rows)

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


class JudgeCache:
    """Verdicts already paid for: key = sha256 of (judge model, prompt version, question,
    answer, reference), value = the judge's raw reply. A re-run of the same sweep asks the judge
    nothing. Same SQLite/WAL arrangement as the embedding cache; used from one thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, "CREATE TABLE IF NOT EXISTS verdicts (key BLOB PRIMARY "
                           "KEY, reply TEXT NOT NULL) WITHOUT ROWID", "judge cache")

    @staticmethod
    def key(*parts: str) -> bytes:
        return parts_key(parts)

    def get(self, key: bytes) -> str | None:
        row = self._db.execute("SELECT reply FROM verdicts WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: bytes, reply: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?)", (key, reply))


def get_judge_cache(folder: str | Path) -> JudgeCache:
    return JudgeCache((Path(folder) / "judge.sqlite").resolve())
