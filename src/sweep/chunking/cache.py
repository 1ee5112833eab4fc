"""Token starts and chunk spans on disk: a document is tokenised once per tokenizer, and cut
once per boundary, size and overlap, not once per process.

Tokenising the corpus was the first job's largest warm cost (COVID-QA's 2.4 MB: its chunk stage
took 1.38 s of a 2.35 s job, every vector cached; 0.26 s with this cache), and its result
depends only on the text and the tokenizer.
Key: (tokenizer fingerprint, sha256 of the document text). Value: the starts as raw int32 or
int64 bytes. A row is checked when read (its length, its order, its last start inside the
text) and tokenised again, with a warning, when the check fails.
Spans (table ``chunk_spans``): a tiling boundary's cuts of one document, keyed by
`chunkers.spans_key` (the document, the boundary, size and overlap, the tokenizer's
fingerprint, the source of the modules that cut); cutting COVID-QA's 98 papers six ways took
0.6-0.8 s of a warm 12-configuration sweep.
Storage: ``token_starts.sqlite`` in ``cache.dir``, WAL mode, one transaction per write, as the
embedding cache; or, with ``cache.backend=postgres``, two tables of the shared database.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sweep.common.sqlite import text_key
from sweep.common.store import CacheTarget, SQLiteStore, Table, as_target, open_store

log = logging.getLogger(__name__)

TABLES = (
    Table("token_starts", (("tokenizer", "TEXT"), ("key", "BLOB"), ("dtype", "TEXT"),
                           ("n", "INTEGER"), ("starts", "BLOB")), ("tokenizer", "key")),
    Table("chunk_spans", (("key", "BLOB"), ("n", "INTEGER"), ("spans", "BLOB")), ("key",)),
)
_DTYPES = {"int32": np.int32, "int64": np.int64}
FILE_NAME = "token_starts.sqlite"


def plausible(starts: np.ndarray, text_len: int) -> bool:
    """Starts a tokenizer can have given a text of ``text_len`` characters: sorted, within it."""
    if starts.size == 0:
        return True
    return bool(starts[0] >= 0 and starts[-1] < text_len and np.all(starts[1:] >= starts[:-1]))


class TokenStartsCache:
    def __init__(self, where: str | Path | CacheTarget) -> None:
        """``where``: a SQLite file path, or a `CacheTarget` (its backend decides)."""
        if isinstance(where, CacheTarget):
            self._db = open_store(where, FILE_NAME, TABLES, "token starts cache")
        else:
            self._db = SQLiteStore(Path(where), TABLES, "token starts cache")
        self.path = self._db.location  # what messages name: a file, or the database URL

    def get_many(self, tokenizer: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """Starts found for ``texts`` (by position); rows that fail the check are left out."""
        where: dict[bytes, list[int]] = {}
        for i, t in enumerate(texts):
            where.setdefault(text_key(t), []).append(i)
        found: dict[int, np.ndarray] = {}
        bad = 0
        for key, dtype, n, blob in self._db.select_keys(
                "SELECT key, dtype, n, starts FROM token_starts WHERE tokenizer = ? "
                "AND key IN ({marks})", [tokenizer], list(where)):
            kind = _DTYPES.get(dtype)
            if kind is None or len(blob) != n * np.dtype(kind).itemsize:
                bad += 1
                continue
            starts = np.frombuffer(blob, dtype=kind)
            for i in where[bytes(key)]:
                if plausible(starts, len(texts[i])):
                    found[i] = starts
                else:
                    bad += 1
        if bad:
            log.warning("token starts cache %s: %d rows fail their check; those documents are "
                        "tokenised again", self.path, bad)
        return found

    def put_many(self, tokenizer: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        rows = []
        for text, starts in items:
            arr = np.ascontiguousarray(starts)
            if arr.dtype.name not in _DTYPES:
                arr = arr.astype(np.int64)
            rows.append((tokenizer, text_key(text), arr.dtype.name, int(arr.size), arr.tobytes()))
        if rows:
            self._db.insert(TABLES[0], rows, replace=True)

    def get_spans(self, keys: Sequence[bytes], text_lens: Sequence[int]
                  ) -> dict[int, list[tuple[int, int]]]:
        """Spans found for ``keys`` (by position; `chunkers.spans_key`), each row checked
        against its document's length (within it, each span's end after its start, starts in
        order); rows that fail are left out, with a warning."""
        where: dict[bytes, list[int]] = {}
        for i, key in enumerate(keys):
            where.setdefault(key, []).append(i)
        found: dict[int, list[tuple[int, int]]] = {}
        bad = 0
        for key, n, blob in self._db.select_keys(
                "SELECT key, n, spans FROM chunk_spans WHERE key IN ({marks})", [],
                list(where)):
            if len(blob) != 16 * n:
                bad += len(where[bytes(key)])
                continue
            flat = np.frombuffer(blob, dtype=np.int64)
            starts, ends = flat[0::2], flat[1::2]
            for i in where[bytes(key)]:
                if n and not (starts[0] >= 0 and np.all(ends >= starts)
                              and ends.max() <= text_lens[i]
                              and np.all(starts[1:] >= starts[:-1])):
                    bad += 1
                    continue
                found[i] = list(zip(starts.tolist(), ends.tolist(), strict=True))
        if bad:
            log.warning("chunk spans cache %s: %d rows fail their check; those documents are "
                        "cut again", self.path, bad)
        return found

    def put_spans(self, items: Sequence[tuple[bytes, Sequence[tuple[int, int]]]]) -> None:
        rows = [(key, len(spans), np.asarray(spans, dtype=np.int64).reshape(-1).tobytes())
                for key, spans in items]
        if rows:
            self._db.insert(TABLES[1], rows, replace=True)

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM token_starts")[0][0])

    def count_spans(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM chunk_spans")[0][0])

    def clear(self) -> int:
        """Every row of both tables; the number of documents whose token starts it held."""
        n = self.count()
        self._db.execute("DELETE FROM token_starts")
        self._db.execute("DELETE FROM chunk_spans")
        self._db.execute("VACUUM")
        return n


_CACHES: dict[CacheTarget, TokenStartsCache] = {}


def get_starts_cache(where: str | Path | CacheTarget) -> TokenStartsCache:
    """The cache of ``where`` (a ``cache.dir`` folder, or a `CacheTarget`), one per process."""
    target = as_target(where).resolved()
    if target not in _CACHES:
        _CACHES[target] = TokenStartsCache(target)
    return _CACHES[target]
