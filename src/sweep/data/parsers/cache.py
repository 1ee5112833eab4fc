"""Parsed documents on disk, so each file is parsed once per parser, whatever the sweep.

Key: sha256 of (file content sha256, parser name, its settings, the versions of the libraries
it uses, a digest of our rendering code). Value: one JSON file (text, sections, pages), written
atomically, so a sweep killed mid-write leaves no half entry. An unreadable entry is a miss.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from sweep.common.files import atomic_write
from sweep.data.documents import Section
from sweep.data.parsers.base import Parsed

log = logging.getLogger(__name__)

FORMAT = 1


class ParseCache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root) / "parsed"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Parsed | None:
        path = self._path(key)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("cache_format") != FORMAT:
                return None
            return Parsed(
                text=raw["text"],
                sections=tuple(Section(s[0], s[1], s[2], tuple(s[3])) for s in raw["sections"]),
                pages=tuple(raw["pages"]), title=raw["title"], notes=tuple(raw["notes"]))
        except FileNotFoundError:
            return None
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
        atomic_write(self._path(key), json.dumps(payload, ensure_ascii=False))
