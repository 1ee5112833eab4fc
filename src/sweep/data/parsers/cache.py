"""Parsed documents on disk, so each file is parsed once per parser, whatever the sweep.

Key: sha256 of (file content sha256, parser name, its settings, the versions of the libraries
it uses, a digest of our rendering code). Value: one JSON file (text, sections, pages), written
atomically, so a sweep killed mid-write leaves no half entry. An unreadable entry is a miss.
With ``cache.backend=postgres`` the same JSON is a row of the shared database's ``parsed``
table (one transaction per entry: a reader never sees half of one).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from sweep.common.errors import CacheUnusable
from sweep.common.files import atomic_write, read_text_regular
from sweep.common.store import CacheTarget, Table, as_target, open_store
from sweep.data.documents import Section
from sweep.data.parsers.base import Parsed

log = logging.getLogger(__name__)

FORMAT = 1
TABLE = Table("parsed", (("key", "TEXT"), ("payload", "BLOB")), ("key",))


class ParseCache:
    def __init__(self, where: str | Path | CacheTarget) -> None:
        target = as_target(where)
        self.root = target.dir / "parsed"
        # The shared database, or None: JSON files under cache.dir/parsed.
        self._db = (open_store(target, "", (TABLE,), "parse cache") if target.shared
                    else None)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _read(self, key: str) -> str | None:
        if self._db is None:
            try:
                return read_text_regular(self._path(key))
            except FileNotFoundError:
                return None
        rows = self._db.execute("SELECT payload FROM parsed WHERE key = ?", [key])
        return bytes(rows[0][0]).decode("utf-8") if rows else None

    def get(self, key: str) -> Parsed | None:
        path = self._path(key) if self._db is None else f"{self._db.location} parsed/{key}"
        try:
            text = self._read(key)
            if text is None:
                return None
            raw = json.loads(text)
            if raw.get("cache_format") != FORMAT:
                return None
            return Parsed(
                text=raw["text"],
                sections=tuple(Section(s[0], s[1], s[2], tuple(s[3])) for s in raw["sections"]),
                pages=tuple(raw["pages"]), title=raw["title"], notes=tuple(raw["notes"]))
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            log.warning("parse cache entry %s unreadable (%s): parsing again", path, exc)
            return None

    def put(self, key: str, parsed: Parsed, meta: dict[str, Any]) -> None:
        payload = {
            **meta, "cache_format": FORMAT, "text": parsed.text,
            "sections": [[s.start, s.end, s.level, list(s.heading_path)]
                         for s in parsed.sections],
            "pages": list(parsed.pages), "title": parsed.title, "notes": list(parsed.notes),
        }
        text = json.dumps(payload, ensure_ascii=False)
        if self._db is None:
            try:
                atomic_write(self._path(key), text)
            except OSError as exc:
                # The document parsed; the cache folder is what failed (a read-only cache.dir
                # must not read as "cannot read" the PDF, nor get a good PDF skipped).
                raise CacheUnusable(
                    f"cache.dir: cannot write the parse cache in {self.root} "
                    f"({exc.strerror or exc})",
                    hint="make the folder writable, set cache.dir to another folder or "
                         "cache.enabled=false") from None
        else:
            self._db.insert(TABLE, [(key, text.encode("utf-8"))], replace=True)
