"""Load a folder of documents into `Document` records.

Markdown and text are read here; PDF, HTML and Word files go through the parser chosen for
their format (`sweep.data.parsers`). Everything here except `load_corpus` is a pure function
over strings, so the parsing rules (slugs, titles, sections, fenced code) are testable without
touching the disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep.common.errors import SweepError

log = logging.getLogger(__name__)

DEFAULT_EXTENSIONS = (".md", ".markdown", ".txt", ".pdf", ".html", ".htm", ".docx")
# A file this large is almost always a mistake (a log, a dump) and would dominate the sweep.
HUGE_FILE_BYTES = 50_000_000
# Files over this size are refused before they are read (corpus.max_file_mb): a 200 MB PDF
# would be read whole into memory and parsed for many minutes, for a document that is almost
# certainly a scan or a dump, not help text.
DEFAULT_MAX_FILE_MB = 100.0


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


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"[ \t]+#+$")
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
                title = _CLOSING_HASHES.sub("", (match.group(2) or "").strip()).strip()
                headings.append((offset, len(match.group(1)), title))
        offset += len(line) + 1
    return headings


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


def _first_heading(sections: Iterable[Section], relative_path: str) -> str:
    for section in sections:
        if section.heading_path and section.heading_path[-1]:
            return section.heading_path[-1]
    return _stem_title(relative_path)


def _stem_title(relative_path: str) -> str:
    return Path(relative_path).stem.replace("-", " ").replace("_", " ").strip() or relative_path


def decode_file(path: Path, data: bytes) -> str:
    """UTF-8 (with or without BOM) or a `SweepError` saying where decoding failed."""
    if b"\x00" in data[:8192]:
        raise SweepError(f"{path}: binary file (contains NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SweepError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            hint="re-save the file as UTF-8 or set corpus.on_error=skip",
        ) from None


def _real(path: Path) -> Path | str:
    try:
        return path.resolve()
    except OSError as exc:
        return f"an unresolvable target ({exc.strerror})"


def _inside(path: Path, real_root: Path) -> bool:
    real = _real(path)
    return isinstance(real, Path) and real.is_relative_to(real_root)


def load_corpus(
    root: str | Path,
    *,
    extensions: Iterable[str] = DEFAULT_EXTENSIONS,
    on_error: str = "raise",
    parsers: Mapping[str, str] | None = None,
    cache_dir: str | Path | None = None,
    parse_log: list | None = None,
    max_file_mb: float = DEFAULT_MAX_FILE_MB,
) -> list[Document]:
    """Every file under ``root`` (recursively) with one of ``extensions``, sorted by path.

    ``.pdf``, ``.html``/``.htm`` and ``.docx`` files are read by the parser ``parsers`` names
    for their format (``{"pdf": "pypdf"}``; the default otherwise), through the parse cache in
    ``cache_dir`` when given; one `ParseRecord` per such file is appended to ``parse_log``.
    ``on_error="skip"`` turns unreadable, undecodable or unparsable files into warnings; empty
    files are always skipped with a warning (they can hold no evidence). A file over
    ``max_file_mb`` megabytes (10^6 bytes; 0 = no limit) is refused, or skipped with
    ``on_error="skip"``, from its size alone: it is never read.
    """
    from sweep.data.parsers import FORMATS, ParseCache, get_parser, parse_file, sniff

    root = Path(root)
    if not root.exists():
        raise SweepError(f"corpus folder not found: {root}", hint="set corpus.path=DIR")
    if not root.is_dir():
        raise SweepError(f"corpus.path is not a folder: {root}")
    exts = {e.lower() for e in extensions}
    real_root = root.resolve()
    parsers = dict(parsers or {})
    chosen = {fmt: get_parser(fmt, parsers.get(fmt)) for fmt in sorted(set(FORMATS.values()))}
    cache = ParseCache(cache_dir) if cache_dir is not None else None
    paths = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in exts)
    docs: list[Document] = []
    seen: dict[str, str] = {}
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in Path(rel).parts):
            continue
        if not _inside(path, real_root):
            # One rule for runs and the labelling page: a symlink out of the corpus folder (a
            # home folder, /etc) is never indexed, scored or shown.
            log.warning("skipped %s: a symlink to %s, outside the corpus folder", path,
                        _real(path))
            continue
        fmt = FORMATS.get(path.suffix.lower())
        try:
            size = path.stat().st_size
            if max_file_mb and size > max_file_mb * 1e6:
                raise SweepError(f"{path}: {size / 1e6:,.0f} MB ({size:,} bytes) is over the "
                                 f"size limit corpus.max_file_mb={max_file_mb:g}",
                                 hint="raise corpus.max_file_mb, remove the file, or set "
                                 "corpus.on_error=skip")
            if size > HUGE_FILE_BYTES:
                log.warning("%s: %.0f MB is unusually large for a corpus document", path, size / 1e6)
            data = path.read_bytes()
            if fmt is None:
                kind = sniff(data)
                if kind in ("pdf", "docx", "zip", "badzip"):
                    raise SweepError(f"{path}: named {path.suffix} but its content is "
                                     f"{'a PDF' if kind == 'pdf' else 'a zip / Word file'}",
                                     hint="rename the file to its real extension")
                text = decode_file(path, data)
            elif not data.strip():
                log.warning("skipped %s: empty file", path)
                continue
            else:
                parsed, record = parse_file(data, str(path), chosen[fmt], cache, rel)
                if parse_log is not None:
                    parse_log.append(record)
        except (OSError, SweepError) as exc:
            message = str(exc) if isinstance(exc, SweepError) else f"{path}: cannot read ({exc})"
            if on_error == "skip":
                log.warning("skipped %s", message)
                continue
            raise SweepError(message) from None
        if fmt is not None:
            doc = Document(doc_id=slugify_path(rel),
                           title=parsed.title or _first_heading(parsed.sections, rel),
                           text=parsed.text, sections=parsed.sections, source=rel,
                           parser=chosen[fmt].name, pages=parsed.pages)
        else:
            if not text.strip():
                log.warning("skipped %s: empty file", path)
                continue
            doc = parse_document(rel, text, markdown=path.suffix.lower() != ".txt")
        if doc.doc_id in seen:
            raise SweepError(
                f"{path}: doc_id {doc.doc_id!r} is also the id of {seen[doc.doc_id]}",
                hint="rename one of the two files",
            )
        seen[doc.doc_id] = rel
        docs.append(doc)
    if not docs:
        raise SweepError(
            f"corpus folder {root} has no readable {'/'.join(sorted(exts))} files",
            hint="point corpus.path at a folder of documents",
        )
    return docs


def corpus_fingerprint(docs: Iterable[Document]) -> str:
    """sha256 over ids and texts: two runs with the same fingerprint saw the same corpus.

    A parsed document (PDF, HTML, DOCX) adds its parser and its structure (sections, pages),
    which the text alone does not fix: the parser choice is part of what a run saw. A
    markdown / text document hashes as it always did, so a markdown-only corpus keeps its
    fingerprint whatever the parser settings.
    """
    h = hashlib.sha256()
    for doc in sorted(docs, key=lambda d: d.doc_id):
        h.update(doc.doc_id.encode())
        h.update(b"\x00")
        h.update(doc.text.encode())
        h.update(b"\x01")
        if doc.parser:
            structure = [doc.parser, [[s.start, s.end, s.level, list(s.heading_path)]
                                      for s in doc.sections], list(doc.pages)]
            h.update(json.dumps(structure, ensure_ascii=False).encode())
            h.update(b"\x02")
    return h.hexdigest()[:16]
