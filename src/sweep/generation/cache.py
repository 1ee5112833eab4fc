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



class AnswerCache:
    """Answers already received (``generation.cache_answers``): key = sha256 of (model name,
    system prompt, user prompt, temperature, max_tokens), value = the text and the tokens the
    endpoint reported. Each answer is stored the moment it arrives, so a run stopped by a dead
    server keeps what it finished and the same command asks only for the rest. The model name
    is the whole model identity here: generation=local serves the file under a name that
    carries its sha256 prefix (servers/llm_serve.py). Used from one thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db = open_db(self.path, "CREATE TABLE IF NOT EXISTS answers (key BLOB PRIMARY "
                           "KEY, text TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, "
                           "completion_tokens INTEGER NOT NULL, reported INTEGER NOT NULL) "
                           "WITHOUT ROWID", "answer cache")

    @staticmethod
    def key(model: str, messages: list[dict[str, str]], temperature: float, max_tokens: int
            ) -> bytes:
        flat = [model, repr(float(temperature)), str(int(max_tokens))]
        for m in messages:
            flat += [m["role"], m["content"]]
        return parts_key(flat)

    def get(self, key: bytes) -> tuple[str, int, int, bool] | None:
        row = self._db.execute("SELECT text, prompt_tokens, completion_tokens, reported FROM "
                               "answers WHERE key = ?", (key,)).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), int(row[2]), bool(row[3]))

    def put(self, key: bytes, text: str, prompt_tokens: int, completion_tokens: int,
            reported: bool) -> None:
        self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?)",
                         (key, text, prompt_tokens, completion_tokens, int(reported)))


def get_answer_cache(folder: str | Path) -> AnswerCache:
    return AnswerCache((Path(folder) / "answers.sqlite").resolve())
