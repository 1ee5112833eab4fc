"""Content-addressed embedding cache on disk: a text embedded once is never embedded again.

Key: (model fingerprint, sha256 of the exact text sent to the model, prefix included). Value:
the float32 vector as raw bytes (no pickle) and a checksum of (fingerprint, text hash, vector),
so a row overwritten with another valid vector is a miss, with a warning; beside it, under the
same key, the text's length in model tokens (what the truncation check needs, so a warm run
never re-tokenises), and other facts measured once per text: where the model stops reading a
truncated text, and the time a query took through the model on this machine (kind
``query_ms@<machine>``).
Storage (`sweep.common.store`): one SQLite file in WAL mode (``cache.backend=sqlite``), or the
tables of a PostgreSQL database every node reaches (``cache.backend=postgres``); every write is
a transaction, so a crash leaves either the whole batch or none of it, and several jobs may read
and write at once (SQLite serialises the writers; PostgreSQL's upsert writes a text once).
"""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from sweep.common.files import atomic_write, read_bytes_regular
from sweep.common.sqlite import feed_parts, parts_key, text_key
from sweep.common.store import CacheTarget, SQLiteStore, Table, as_target, open_store

log = logging.getLogger(__name__)

TABLES = (
    Table("embeddings", (("model", "TEXT"), ("key", "BLOB"), ("dim", "INTEGER"),
                         ("vector", "BLOB"), ("checksum", "BLOB NULL")), ("model", "key")),
    Table("token_lengths", (("model", "TEXT"), ("key", "BLOB"), ("n", "INTEGER")),
          ("model", "key")),
    Table("facts", (("model", "TEXT"), ("kind", "TEXT"), ("key", "BLOB"), ("value", "REAL")),
          ("model", "kind", "key")),
)
EMBEDDINGS, TOKEN_LENGTHS, FACTS = TABLES
FILE_NAME = "embeddings.sqlite"

# Packs: the vectors of one whole read (a job's chunks, a sweep's questions) as one file beside
# the database, read back in one go. A warm COVID-QA sweep read its 20,640 vectors row by row
# in ~0.2 s (a B-tree lookup and a checksum each); a pack is one read and one sha256.
PACKS_FOLDER = "vector_packs"
PACK_SUFFIX = ".f32"
PACK_MIN_KEYS = 1000  # smaller reads gain little and would only multiply the files
PACK_BUDGET_BYTES = 512 * 2**20  # the oldest packs go past this (each is a copy of rows)


def checksum(model: str, key: bytes, vector: bytes) -> bytes:
    """Ties a stored vector to its (model fingerprint, text hash): a vector copied or written
    over another row's, still of a valid shape, no longer matches and is not used. The hex
    forms are handed to `parts_key` as bytes: the same key as their strings, without making
    them (a warm job checks every vector it reads)."""
    return parts_key([model, binascii.hexlify(key), binascii.hexlify(vector)])[:16]


class _Checksums:
    """`checksum` of one model's rows, its model part hashed once: a warm job checks
    thousands of vectors a call. The same bytes are hashed in the same order, so each value
    equals `checksum`'s (a test compares them)."""

    def __init__(self, model: str) -> None:
        self._head = feed_parts(hashlib.sha256(), [model])

    def __call__(self, key: bytes, vector: bytes) -> bytes:
        return feed_parts(self._head.copy(), [binascii.hexlify(key),
                                              binascii.hexlify(vector)]).digest()[:16]


class EmbeddingCache:
    """``where``: a SQLite file path (the cache of one machine), or a `CacheTarget` (its
    backend decides: a file in ``cache.dir``, or the shared PostgreSQL database)."""

    def __init__(self, where: str | Path | CacheTarget) -> None:
        if isinstance(where, CacheTarget):
            self.target = where
            self._db = open_store(where, FILE_NAME, TABLES, "embedding cache")
        else:
            path = Path(where)
            self.target = CacheTarget(path.parent)
            self._db = SQLiteStore(path, TABLES, "embedding cache")
        # cache.dir: model exports and served ledgers stay on the local disk either way.
        self.folder = self.target.dir
        self.path = Path(self._db.location) if self._db.dialect == "sqlite" else None
        self.location = self._db.location
        if self._db.dialect == "sqlite":
            self._migrate()
        # The last read that missed some keys, until `put_many` stores them (its pack).
        self._partial: tuple[_Packs, dict[bytes, np.ndarray]] | None = None

    def _migrate(self) -> None:
        """Cache files written before the checksum column: add it and fill it once for the
        rows already there (they were trusted before; from now on they are checked)."""
        db = self._db.db  # a SQLite file only: PostgreSQL tables were made with the column
        columns = {row[1] for row in db.execute("PRAGMA table_info(embeddings)")}
        if "checksum" in columns:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            columns = {row[1] for row in db.execute("PRAGMA table_info(embeddings)")}
            if "checksum" not in columns:  # another process may have migrated meanwhile
                db.execute("ALTER TABLE embeddings ADD COLUMN checksum BLOB")
                rows = db.execute("SELECT model, key, vector FROM embeddings").fetchall()
                db.executemany(
                    "UPDATE embeddings SET checksum = ? WHERE model = ? AND key = ?",
                    [(checksum(m, bytes(k), bytes(v)), m, k) for m, k, v in rows])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def get_many(self, model: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The vectors of ``keys`` the cache holds, checked. A read of `PACK_MIN_KEYS` or
        more distinct keys is kept as a pack (`_Packs`), so that the same read later is one
        file: at once when every key was found, else once `put_many` stores exactly the keys
        it lacked (what `tiered` does next: the vectors computed for them)."""
        self._partial = None
        packs = _Packs(self.folder / PACKS_FOLDER, model, keys) \
            if len(keys) >= PACK_MIN_KEYS else None
        if packs is not None:
            packed = packs.read()
            if packed is not None:
                return packed
        found = self._get_rows(model, keys)
        if packs is not None:
            if len(found) == len(packs.keys):
                packs.write(found)
            else:
                self._partial = (packs, dict(found))
        return found

    def _get_rows(self, model: str, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        bad: list[tuple[str, bytes, bytes]] = []
        check_of = _Checksums(model)
        for key, dim, blob, check in self._select("dim, vector, checksum", "embeddings", model,
                                                  keys):
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape[0] != dim:  # a torn value can only be ignored, never trusted
                continue
            if check is None or bytes(check) != check_of(bytes(key), bytes(blob)):
                bad.append((model, bytes(key), bytes(blob)))
                continue
            found[bytes(key)] = vec
        if bad:
            log.warning("embedding cache %s: %d vectors fail their checksum (overwritten or "
                        "corrupted); they are embedded again", self.location, len(bad))
            # Dropped (only if still the bad value), so that the fresh vector can be stored.
            self._db.write_rows("DELETE FROM embeddings WHERE model = ? AND key = ? AND "
                                "vector = ?", bad)
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
        self._db.insert(EMBEDDINGS, rows(), replace=False)
        partial, self._partial = self._partial, None
        if partial is not None and partial[0].model == model:
            packs, found = partial
            found.update(items)
            if len(found) == len(packs.keys) and all(k in found for k in packs.keys):
                packs.write(found)
        return len(items)

    def get_lengths(self, model: str, keys: Sequence[bytes]) -> dict[bytes, int]:
        return {bytes(key): int(n)
                for key, n in self._select("n", "token_lengths", model, keys)}

    def _select(self, columns: str, table: str, model: str, keys: Sequence[bytes]
                ) -> Iterator[tuple]:
        return self._db.select_keys(f"SELECT key, {columns} FROM {table} WHERE model = ? AND "
                           "key IN ({marks})", [model], keys)

    def put_lengths(self, model: str, items: Iterable[tuple[bytes, int]]) -> int:
        rows = [(model, key, int(n)) for key, n in items]
        return self._insert(TOKEN_LENGTHS, rows, replace=False)

    def get_facts(self, model: str, kind: str, keys: Sequence[bytes]) -> dict[bytes, float]:
        return {bytes(key): float(value) for key, value in self._db.select_keys(
            "SELECT key, value FROM facts WHERE model = ? AND kind = ? AND key IN "
            "({marks})", [model, kind], keys)}

    def put_facts(self, model: str, kind: str, items: Iterable[tuple[bytes, float]]) -> int:
        rows = [(model, kind, key, float(v)) for key, v in items]
        return self._insert(FACTS, rows, replace=True)

    def _insert(self, table: Table, rows: Sequence[tuple], *, replace: bool) -> int:
        """``rows`` into ``table`` in one transaction; returns how many rows."""
        if not rows:
            return 0
        self._db.insert(table, rows, replace=replace)
        return len(rows)

    def info(self) -> dict[str, object]:
        models = self._db.execute(
            "SELECT model, COUNT(*), SUM(LENGTH(vector)) FROM embeddings GROUP BY model")
        lengths = self._db.execute("SELECT COUNT(*) FROM token_lengths")[0][0]
        if self.path is not None:
            size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        else:
            size = int(self._db.execute(
                "SELECT COALESCE(SUM(pg_total_relation_size(c)), 0) FROM unnest(ARRAY["
                + ", ".join(f"'{t.name}'" for t in TABLES) + "]::regclass[]) AS c")[0][0])
        return {"path": self.location, "backend": self._db.dialect, "bytes_on_disk": size,
                "models": {m: {"vectors": int(n), "vector_bytes": int(b)}
                           for m, n, b in models},
                "vectors": sum(int(n) for _, n, _ in models), "token_lengths": int(lengths)}

    def pack_files(self) -> list[Path]:
        """The packs kept beside this cache (`_Packs`)."""
        return _pack_files(self.folder / PACKS_FOLDER)

    def clear(self) -> int:
        shutil.rmtree(self.folder / PACKS_FOLDER, ignore_errors=True)
        n = self._db.execute("SELECT COUNT(*) FROM embeddings")[0][0]
        self._db.execute("DELETE FROM embeddings")
        self._db.execute("DELETE FROM token_lengths")
        self._db.execute("DELETE FROM facts")
        self._db.execute("VACUUM")
        return int(n)

    def close(self) -> None:
        if self._db.dialect == "sqlite":  # a shared connection stays open for the other caches
            self._db.close()


class _Packs:
    """The pack of one read: the vectors of ``keys`` (distinct, in their order) under
    ``model``, as one file named by a hash of both. The file holds a sha256 of (its name,
    model, the vectors' bytes) then the float32 rows; one that does not match is removed and
    the rows are read from the database, so a pack never serves another value than its rows
    did. Written only from rows that passed their checksums."""

    def __init__(self, folder: Path, model: str, keys: Sequence[bytes]) -> None:
        self.folder = folder
        self.model = model
        self.keys = list(dict.fromkeys(keys))
        # one part for all the keys (each with its length): a part per key cost ~10 ms a job
        every = b"".join(len(k).to_bytes(4, "big") + k for k in self.keys)
        name = parts_key([model, every]).hex()[:40]
        self.path = folder / f"{name}{PACK_SUFFIX}"

    def _seal(self, data: bytes | memoryview) -> bytes:
        return feed_parts(hashlib.sha256(), [self.path.name, self.model, data]).digest()

    def read(self) -> dict[bytes, np.ndarray] | None:
        try:
            raw = read_bytes_regular(self.path)
        except OSError:
            return None
        body = memoryview(raw)[32:]
        rows = len(self.keys)
        if (len(raw) < 32 or len(body) % (4 * rows) or not len(body)
                or raw[:32] != self._seal(body)):
            log.warning("embedding cache: pack %s is damaged; reading its rows instead",
                        self.path)
            self.path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):
            os.utime(self.path)  # the budget drops the packs read longest ago
        matrix = np.frombuffer(body, dtype=np.float32).reshape(rows, -1)
        return dict(zip(self.keys, matrix, strict=True))

    def write(self, found: dict[bytes, np.ndarray]) -> None:
        dims = {found[k].shape[0] for k in self.keys}
        if len(dims) != 1:  # one pack, one width
            return
        body = np.array([found[k] for k in self.keys], dtype=np.float32).tobytes()
        try:
            atomic_write(self.path, self._seal(body) + body)
            self._prune()
        except OSError as exc:  # the rows are read and right; only the saving is lost
            log.warning("embedding cache: cannot write pack %s (%s)", self.path,
                        exc.strerror or exc)

    def _prune(self) -> None:
        """Past `PACK_BUDGET_BYTES`, the packs read (or written) longest ago go."""
        packs = []
        for p in _pack_files(self.folder):
            with contextlib.suppress(OSError):
                st = p.stat()
                packs.append((st.st_mtime_ns, st.st_size, p))
        total = sum(size for _, size, _ in packs)
        for _, size, p in sorted(packs):
            if total <= PACK_BUDGET_BYTES or p == self.path:
                continue
            p.unlink(missing_ok=True)
            total -= size


def _pack_files(folder: Path) -> list[Path]:
    return list(folder.glob(f"*{PACK_SUFFIX}"))


_CACHES: dict[CacheTarget, EmbeddingCache] = {}


def get_cache(where: str | Path | CacheTarget) -> EmbeddingCache:
    """The cache of ``where`` (a ``cache.dir`` folder, or a `CacheTarget`), one per process."""
    target = as_target(where).resolved()
    if target not in _CACHES:
        _CACHES[target] = EmbeddingCache(target)
    return _CACHES[target]


V = TypeVar("V")

# `text_key` of the texts met lately (text -> key), up to KEY_MEMO_CHARS characters of text,
# then started afresh: a job hashes each chunk text for its vector and again for its token
# length, and every job hashes the same questions. The texts it holds are mostly held anyway
# (the process memo keeps each chunking's chunks).
KEY_MEMO_CHARS = 2**24
_KEYS: dict[str, bytes] = {}
_key_chars = 0


def text_keys(texts: Iterable[str]) -> list[bytes]:
    """`text_key` of each text, in order."""
    global _key_chars
    out = []
    for text in texts:
        key = _KEYS.get(text)
        if key is None:
            key = text_key(text)
            if _key_chars + len(text) > KEY_MEMO_CHARS:
                _KEYS.clear()
                _key_chars = 0
            _KEYS[text] = key
            _key_chars += len(text)
        out.append(key)
    return out


def tiered(texts: list[str], memory: dict[bytes, V],
           disk_get: Callable[[str, list[bytes]], dict[bytes, V]] | None,
           disk_put: Callable[[str, list[tuple[bytes, V]]], int] | None, model: str,
           compute: Callable[[list[str]], Sequence[V]]) -> list[bytes]:
    """Fill ``memory`` with a value for every text (keyed by `text_key`): what it lacks from
    the disk cache, what that lacks computed, each distinct text once, and written back to
    disk. Returns the texts' keys, in order. Both embedders (`models.LocalEmbedder`, `served.ServedEmbedder`) fill
    their caches this way."""
    keys = text_keys(texts)
    missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in memory}
    if missing and disk_get is not None:
        found = disk_get(model, list(missing))
        memory.update(found)
        for k in found:
            del missing[k]
    if missing:
        fresh = list(zip(missing, compute(list(missing.values())), strict=True))
        memory.update(fresh)
        if disk_put is not None:
            disk_put(model, fresh)
    return keys
