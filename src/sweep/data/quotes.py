"""Find a quote in parser output, in levels, and map the match back to the parser's offsets.

A golden quote is usually copied from a browser or a PDF viewer; the text a sweep scores on is
what a parser made of the file. Three levels, tried in order, the first that matches counted:

- ``exact``: the quote is a substring of the text.
- ``normalised``: every run of whitespace is one space, on both sides (line wraps, NBSP-free
  indentation); the quote is NFC-normalised.
- ``loose``: on both sides, NFKC (ligatures such as ``ﬁ`` expanded, NBSP and full-width forms
  folded), typographic quotes folded to ASCII, every hyphen and dash dropped (so soft hyphens,
  end-of-line hyphenation ``di-⏎rectly`` and real hyphens split at a line end
  ``time-⏎consuming`` all match), markdown markup a converter adds ignored (table pipes and
  separator rows, list bullets and numbers and ``#``/``>`` at a line start, ``*``, ``_`` and
  backticks, ``[``/``]`` and link targets ``](url "title")``, the brackets of an autolink
  ``<https://...>``, backslash escapes), and all whitespace
  removed (PDF extractors that drop the spaces between words, "Therearetwomethods...").
- ``blocks``: the loose level across a block boundary, for a quote copied as one passage from
  a sentence into the code block after it ("... configure it as: # dpkg-reconfigure locales"):
  also ignored, on both sides, a code fence's whole line (its language tag is no visible text)
  and a shell or REPL prompt (``$``, ``#``, ``%``, ``>>>`` standing alone before a blank,
  wherever it is: the quote has it mid-line where the page had it at a line start). Tried last,
  so a quote found at an earlier level keeps its match.

Each normalised view is built with an index map (view position -> text offset), so a match is
returned as a span of the original text: every metric stays a character-span metric.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

LEVELS: tuple[str, ...] = ("exact", "normalised", "loose", "blocks")
MAX_PLACES = 50  # occurrences counted per quote (enough to say "not unique")

_QUOTES = str.maketrans({c: '"' for c in "\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb"}
                        | {c: "'" for c in "\u2018\u2019\u201a\u201b\u2032"})
_DROP_CHARS = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u00ad|*_`[]\\")
# Markup a converter adds, dropped as whole matches (on the text and on the quote alike), but
# for a group named "keep".
# a table's separator row: only pipes, dashes, colons and blanks (`_loose_view` wants a
# pipe and three dashes); one character class, so linear on a line of a million spaces
_TABLE_SEPARATOR = re.compile(r"^[ \t|:-]*$", re.MULTILINE)
_MARKUP = [
    _TABLE_SEPARATOR,
    re.compile(r"^[ \t]*(?:[-*+\u2022\u25cf\u25e6\u2023]|\d{1,3}[.)]|#{1,6}|>+)(?=[ \t])",
               re.MULTILINE),
    # ](target "title") of a link; the title may hold escaped quotes (markdownify writes
    # `"2.5.3. Archive level \\"Release\\" files"` for a DocBook cross-reference)
    re.compile(r"\]\([^()\s]*(?:\s+\"(?:[^\"\\\n]|\\.)*\")?\)"),
    # the angle brackets of an autolink <https://...> (markitdown writes a link whose text is
    # its URL so); the URL itself is visible text
    re.compile(r"<(?P<keep>(?:https?|ftp|mailto):[^\s<>]+)>", re.IGNORECASE),
    re.compile(r"!(?=\[)"),  # the ! of an image
]
# The `blocks` level's additions: a fence line (```` ```sh ````, ``~~~``) and a prompt token.
_BLOCK_MARKUP = [
    *_MARKUP,
    re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*$", re.MULTILINE),
    re.compile(r"(?<!\S)(?:[$#%]|>>>)(?=[ \t])"),
]


@dataclass(frozen=True)
class Place:
    doc_id: str
    start: int
    end: int


def _normalised_view(text: str) -> tuple[str, list[int]]:
    out: list[str] = []
    index: list[int] = []
    in_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not in_space:
                out.append(" ")
                index.append(i)
            in_space = True
        else:
            out.append(ch)
            index.append(i)
            in_space = False
    return "".join(out), index


def _loose_view(text: str, markup: Sequence[re.Pattern[str]] = _MARKUP
                ) -> tuple[str, list[int]]:
    keep = bytearray(b"\x01") * len(text)
    for pattern in markup:
        for m in pattern.finditer(text):
            if pattern is _TABLE_SEPARATOR and ("|" not in m.group() or "---" not in m.group()):
                continue
            keep[m.start():m.end()] = bytes(m.end() - m.start())
            if "keep" in pattern.groupindex:
                keep[m.start("keep"):m.end("keep")] = b"\x01" * (m.end("keep") - m.start("keep"))
    out: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if not keep[i]:
            continue
        folded = unicodedata.normalize("NFKC", ch) if ord(ch) > 127 else ch
        for c in folded.translate(_QUOTES):
            if c.isspace() or c in _DROP_CHARS:
                continue
            out.append(c)
            index.append(i)
    return "".join(out), index


def _blocks_view(text: str) -> tuple[str, list[int]]:
    return _loose_view(text, _BLOCK_MARKUP)


_VIEWS = {"normalised": _normalised_view, "loose": _loose_view, "blocks": _blocks_view}


def quote_key(quote: str, level: str) -> str:
    """The quote as it is searched at ``level``."""
    if level == "exact":
        return quote
    quote = unicodedata.normalize("NFC", quote)
    if level == "normalised":
        return _normalised_view(quote.strip())[0]
    return _VIEWS[level](quote)[0]


class QuoteIndex:
    """The documents' texts and their normalised views (built on first use)."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = dict(texts)
        self._views: dict[tuple[str, str], tuple[str, list[int]]] = {}

    def _view(self, doc_id: str, level: str) -> tuple[str, list[int] | None]:
        if level == "exact":
            return self.texts[doc_id], None
        key = (doc_id, level)
        if key not in self._views:
            self._views[key] = _VIEWS[level](self.texts[doc_id])
        return self._views[key]

    def find(self, quote: str, doc_ids: Iterable[str] | None = None
             ) -> tuple[str | None, list[Place]]:
        """``(level, places)``: the first level at which ``quote`` occurs in any of
        ``doc_ids`` (every document when None), and every place it occurs at that level
        (document order, then offset; at most `MAX_PLACES`). ``(None, [])`` when not found."""
        ids: Sequence[str] = sorted(self.texts) if doc_ids is None else list(doc_ids)
        for level in LEVELS:
            needle = quote_key(quote, level)
            if not needle:
                return None, []
            places: list[Place] = []
            for doc_id in ids:
                hay, index = self._view(doc_id, level)
                pos = hay.find(needle)
                while pos >= 0 and len(places) < MAX_PLACES:
                    if index is None:
                        places.append(Place(doc_id, pos, pos + len(needle)))
                    else:
                        places.append(Place(doc_id, index[pos], index[pos + len(needle) - 1] + 1))
                    pos = hay.find(needle, pos + 1)
            if places:
                return level, places
        return None, []


def parser_keeps(levels: Mapping[str, Mapping[str, Sequence[str]]]) -> list[str]:
    """``q35: lost by html:trafilatura; kept by html:markitdown``: per question with a quote
    some parser lost, which parsers found all of its quotes. ``levels``: ``{parser column:
    {qid: [level or "missing" per quote]}}`` (what ``sweep validate --quotes`` tabulates)."""
    out = []
    for qid in dict.fromkeys(q for column in levels.values() for q in column):
        lost = [c for c, by_qid in levels.items() if "missing" in by_qid.get(qid, ())]
        if not lost:
            continue
        kept = [c for c, by_qid in levels.items()
                if by_qid.get(qid) and "missing" not in by_qid[qid]]
        out.append(f"{qid}: lost by {', '.join(lost)}; "
                   + (f"kept by {', '.join(kept)}" if kept
                      else "kept by none of these parsers (check the quote against the file)"))
    return out
