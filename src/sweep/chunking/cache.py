"""Token starts on disk: a document is tokenised once per tokenizer, not once per process.

Tokenising the corpus was the first job's largest warm cost (COVID-QA's 2.4 MB: its chunk stage
took 1.38 s of a 2.35 s job, every vector cached; 0.26 s with this cache), and its result
depends only on the text and the tokenizer.
Key: (tokenizer fingerprint, sha256 of the document text). Value: the starts as raw int32 or
int64 bytes. A row is checked when read (its length, its order, its last start inside the
text) and tokenised again, with a warning, when the check fails.
Storage: ``token_starts.sqlite`` in ``cache.dir``, WAL mode, one transaction per write, as the
embedding cache.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sweep.common.sqlite import open_db, select_keys, text_key, write_rows

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS token_starts (
    tokenizer TEXT NOT NULL,
    key BLOB NOT NULL,
    dtype TEXT NOT NULL,
    n INTEGER NOT NULL,
    starts BLOB NOT NULL,
    PRIMARY KEY (tokenizer, key)
) WITHOUT ROWID;
"""
_DTYPES = {"int32": np.int32, "int64": np.int64}
FILE_NAME = "token_starts.sqlite"


def plausible(starts: np.ndarray, text_len: int) -> bool:
    """Starts a tokenizer can have given a text of ``text_len`` characters: sorted, within it."""
    if starts.size == 0:
        return True
    return bool(starts[0] >= 0 and starts[-1] < text_len and np.all(starts[1:] >= starts[:-1]))


class TokenStartsCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, _SCHEMA, "token starts cache")

    def get_many(self, tokenizer: str, texts: Sequence[str]) -> dict[int, np.ndarray]:
        """Starts found for ``texts`` (by position); rows that fail the check are left out."""
        where: dict[bytes, list[int]] = {}
        for i, t in enumerate(texts):
            where.setdefault(text_key(t), []).append(i)
        found: dict[int, np.ndarray] = {}
        bad = 0
        for key, dtype, n, blob in select_keys(
                self._db, "SELECT key, dtype, n, starts FROM token_starts WHERE tokenizer = ? "
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
            write_rows(self._db, "INSERT OR REPLACE INTO token_starts VALUES (?, ?, ?, ?, ?)",
                       rows)

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM token_starts").fetchone()[0])

    def clear(self) -> int:
        n = self.count()
        self._db.execute("DELETE FROM token_starts")
        self._db.execute("VACUUM")
        return n


_CACHES: dict[Path, TokenStartsCache] = {}


def get_starts_cache(folder: str | Path) -> TokenStartsCache:
    path = (Path(folder) / FILE_NAME).resolve()
    if path not in _CACHES:
        _CACHES[path] = TokenStartsCache(path)
    return _CACHES[path]
