"""The judge's verdicts, cached on disk so a re-run pays nothing."""

from __future__ import annotations

from pathlib import Path

from sweep.common.paths import resolve_user_path
from sweep.common.sqlite import open_db, parts_key


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
    return JudgeCache(resolve_user_path(Path(folder) / "judge.sqlite", "cache.dir"))

