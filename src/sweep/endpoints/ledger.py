"""The spend ledger: what the served vectors now in the embedding cache cost to fetch, and how
many texts the cache has answered since, per model fingerprint (``served.sqlite`` beside the
cache file; `sweep cache info` prints it, `sweep cache clear` empties it)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from sweep.common.sqlite import open_db

_LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS served_spend (
    fingerprint TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    texts INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS served_hits (
    fingerprint TEXT PRIMARY KEY,
    texts INTEGER NOT NULL
) WITHOUT ROWID;
"""
_LEDGERS: dict[Path, Any] = {}
_LEDGER_LOCK = threading.Lock()


def _ledger(cache_path: Path) -> Any:
    path = Path(cache_path).with_name("served.sqlite")
    with _LEDGER_LOCK:
        if path not in _LEDGERS:
            _LEDGERS[path] = open_db(path, _LEDGER_SCHEMA, "served-model ledger")
        return _LEDGERS[path]


def record_spend(cache_path: Path, fingerprint: str, model: str, texts: int, tokens: int,
                 cost: float) -> None:
    """Add what the vectors now in the cache cost to fetch (so `sweep cache info` can say what
    each later cache hit saved)."""
    db = _ledger(cache_path)
    with _LEDGER_LOCK:
        db.execute("INSERT INTO served_spend VALUES (?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO "
                   "UPDATE SET texts = texts + excluded.texts, tokens = tokens + "
                   "excluded.tokens, cost_usd = cost_usd + excluded.cost_usd",
                   (fingerprint, model, texts, tokens, cost))


def record_hits(cache_path: Path, fingerprint: str, texts: int) -> None:
    if texts <= 0:
        return
    db = _ledger(cache_path)
    with _LEDGER_LOCK:
        db.execute("INSERT INTO served_hits VALUES (?, ?) ON CONFLICT(fingerprint) DO UPDATE "
                   "SET texts = texts + excluded.texts", (fingerprint, texts))


def clear_ledger(cache_path: Path) -> None:
    """Forget what the cached served vectors cost (`sweep cache clear` removed them)."""
    if Path(cache_path).with_name("served.sqlite").exists():
        db = _ledger(cache_path)
        with _LEDGER_LOCK:
            db.execute("DELETE FROM served_spend")
            db.execute("DELETE FROM served_hits")


def ledger_summary(cache_path: Path) -> list[dict[str, Any]]:
    """Per served model: texts/tokens/dollars paid for, and texts (and, at the same mean
    tokens per text, dollars) the cache has served instead of the endpoint since."""
    path = Path(cache_path).with_name("served.sqlite")
    if not path.exists():
        return []
    rows = _ledger(cache_path).execute(
        "SELECT s.fingerprint, s.model, s.texts, s.tokens, s.cost_usd, COALESCE(h.texts, 0) "
        "FROM served_spend s LEFT JOIN served_hits h USING (fingerprint) ORDER BY s.model"
    ).fetchall()
    out = []
    for fp, model, texts, tokens, cost, hits in rows:
        per_text = tokens / texts if texts else 0.0
        out.append({"fingerprint": fp, "model": model, "texts_paid": texts,
                    "tokens_paid": tokens, "cost_usd_paid": cost, "texts_from_cache": hits,
                    "tokens_saved": hits * per_text,
                    "cost_usd_saved": hits * (cost / texts if texts else 0.0)})
    return out
