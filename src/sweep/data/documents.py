"""The document types and the text rules every reader shares: `Section`, `Document`, text
normalisation, slugs, markdown headings and sections, titles, UTF-16 detection.

Both the corpus loader (`sweep.data.corpus`) and the format parsers (`sweep.data.parsers`)
import these, so they live apart from both: the parsers no longer import the loader that calls
them (the circle data.corpus <-> data.parsers). Pure functions over strings.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    """A markdown section: from its heading line to the next heading of any level.

    ``heading_path`` holds the titles of the enclosing headings, outermost first, ending with
    this section's own title; the text before the first heading has an empty path.
    """

    start: int
    end: int
    level: int
    heading_path: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str
    sections: tuple[Section, ...]
    source: str  # path relative to the corpus root, with forward slashes
    parser: str = ""  # the parser that produced ``text`` ("" = read as markdown / text)
    pages: tuple[int, ...] = ()  # PDF: offset where each page starts, page 1 first

    def page_at(self, offset: int) -> int | None:
        """1-based page of a character offset (PDFs), else None."""
        if not self.pages:
            return None
        from bisect import bisect_right

        return max(1, bisect_right(self.pages, offset))

    def section_at(self, offset: int) -> Section | None:
        for section in self.sections:
            if section.start <= offset < section.end:
                return section
        return None


# Linear on any line: a lazy title followed by [ \t]*$ (or a [ \t]+#+$ search) is quadratic
# on a long run of spaces, and a line of a million spaces in a .md file hung the loader.
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def normalize_text(text: str) -> str:
    """NFC, no BOM, ``\\n`` line ends: offsets are then stable whatever editor wrote the file."""
    # lstrip, not one character: a file saved twice by BOM-adding tools starts with two
    text = text.lstrip("\ufeff")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def slugify_path(relative_path: str) -> str:
    """A stable id from a path relative to the corpus root.

    Each folder level is kept (joined with ``/``) so ids stay readable and unique; each part is
    lowercased with runs of anything but letters, digits, ``.`` and ``_`` turned into ``-``;
    the file extension is dropped. ``Returns/Refund Policy.md`` -> ``returns/refund-policy``.
    """
    parts = Path(relative_path.replace("\\", "/")).with_suffix("").parts
    slugs = []
    for part in parts:
        slug = re.sub(r"[^\w.]+", "-", part.lower(), flags=re.UNICODE).strip("-.")
        slugs.append(slug or "_")
    return "/".join(slugs)


def markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of each ATX heading outside fenced code blocks.

    Setext (underlined) headings are not recognised; they are rare in help-centre style docs and
    ambiguous with tables and horizontal rules.
    """
    headings: list[tuple[int, int, str]] = []
    fence: str | None = None
    offset = 0
    for line in text.split("\n"):
        fence_match = _FENCE.match(line)
        if fence is None and fence_match:
            fence = fence_match.group(1)
        elif fence is not None:
            # A fence closes with the same character, at least as long, and nothing after it.
            if fence_match and fence_match.group(1)[0] == fence[0] and len(
                fence_match.group(1)
            ) >= len(fence) and not line.strip().lstrip(fence[0]):
                fence = None
        else:
            match = _HEADING.match(line)
            if match:
                title = _without_closing_hashes((match.group(2) or "").strip(" \t")).strip()
                headings.append((offset, len(match.group(1)), title))
        offset += len(line) + 1
    return headings


def _without_closing_hashes(title: str) -> str:
    """``Title ##`` -> ``Title``: a closing run of ``#`` after a space or tab is dropped."""
    bare = title.rstrip("#")
    if bare != title and bare[-1:] in (" ", "\t"):
        return bare.rstrip(" \t")
    return title


def markdown_sections(text: str) -> tuple[Section, ...]:
    """Sections covering the whole text, in order; a non-blank preamble is a section too."""
    headings = markdown_headings(text)
    if not headings:
        return (Section(0, len(text), 0, ()),) if text.strip() else ()
    return sections_from_headings(text, headings)


def sections_from_headings(text: str, headings: Sequence[tuple[int, int, str]]
                           ) -> tuple[Section, ...]:
    """Sections from ``(offset, level, title)`` headings in order: each runs to the next
    heading, its path the titles above it; a non-blank preamble is a section too. Of two
    headings at one offset (a PDF outline can place them so) the later one holds the text."""
    sections: list[Section] = []
    if text[: headings[0][0]].strip():
        sections.append(Section(0, headings[0][0], 0, ()))
    stack: list[tuple[int, str]] = []
    for i, (start, level, title) in enumerate(headings):
        end = headings[i + 1][0] if i + 1 < len(headings) else len(text)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        if end > start:
            sections.append(Section(start, end, level, tuple(t for _, t in stack)))
    return tuple(sections)


def title_from(text: str, relative_path: str) -> str:
    for _, _, title in markdown_headings(text):
        if title:
            return title
    return _stem_title(relative_path)


def parse_document(relative_path: str, raw_text: str, *, markdown: bool = True) -> Document:
    text = normalize_text(raw_text)
    sections = markdown_sections(text) if markdown else (
        (Section(0, len(text), 0, ()),) if text.strip() else ()
    )
    return Document(
        doc_id=slugify_path(relative_path),
        title=title_from(text, relative_path) if markdown else _stem_title(relative_path),
        text=text,
        sections=sections,
        source=relative_path.replace("\\", "/"),
    )


def first_heading(sections: Iterable[Section], relative_path: str) -> str:
    for section in sections:
        if section.heading_path and section.heading_path[-1]:
            return section.heading_path[-1]
    return _stem_title(relative_path)


def _stem_title(relative_path: str) -> str:
    return Path(relative_path).stem.replace("-", " ").replace("_", " ").strip() or relative_path


def utf16_codec(data: bytes) -> str | None:
    """``utf-16`` for bytes with a UTF-16 BOM; ``utf-16-le``/``-be`` for bytes without one
    whose first 4 KiB have a NUL in every other byte on one side only (ASCII-heavy text, as
    Notepad's "Unicode" writes it); else None (UTF-8, another encoding, or binary data)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    head = data[:4096]
    if len(head) < 4 or len(head) % 2:
        head = head[: len(head) - len(head) % 2]
    if len(head) < 4:
        return None
    even, odd = head[0::2], head[1::2]
    pairs = len(head) // 2
    if odd.count(0) >= 0.3 * pairs and even.count(0) == 0:
        return "utf-16-le"
    if even.count(0) >= 0.3 * pairs and odd.count(0) == 0:
        return "utf-16-be"
    return None
