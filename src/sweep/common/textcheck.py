"""Control characters and line breaks in what becomes an id or a question.

A qid is a key in files, URLs, CSV cells and terminal lines: a NUL, an escape or a line break
in it ends a C string, drives a terminal or starts a second row. Questions are cleaned (such
characters become spaces); ids are refused with the character named.
"""

from __future__ import annotations

import unicodedata

# Line breaks that are not Unicode control characters (Cc covers NUL..US, DEL, and C1).
_BREAKS = frozenset("\u2028\u2029")


def control_char(text: str, *, whitespace_ok: bool = False) -> str | None:
    """The first control character or line break in ``text``, written ``U+000A``; None when
    there is none. With ``whitespace_ok``, tab, line feed and carriage return pass (free text
    may hold them; NUL, escapes and the other controls still do not)."""
    for ch in text:
        if ch in _BREAKS or unicodedata.category(ch) == "Cc":
            if whitespace_ok and ch in "\t\n\r":
                continue
            return f"U+{ord(ch):04X}"
    return None


def clean_text(text: str) -> str:
    """``text`` on one line: every control character and line break a space, runs of
    whitespace one space, no leading or trailing space."""
    if control_char(text) is not None:
        text = "".join(" " if ch in _BREAKS or unicodedata.category(ch) == "Cc" else ch
                       for ch in text)
    return " ".join(text.split())
