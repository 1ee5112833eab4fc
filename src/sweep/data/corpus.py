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
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.common.errors import SweepError, one_line
from sweep.common.files import read_regular
from sweep.common.progress import Progress
from sweep.common.store import CacheTarget

if TYPE_CHECKING:
    from sweep.data.parsers.limits import ParseLimits

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


def _first_heading(sections: Iterable[Section], relative_path: str) -> str:
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


def decode_file(path: Path, data: bytes) -> str:
    """UTF-8 (with or without BOM), or UTF-16 (with a BOM, or recognised without one, with a
    warning), or a `SweepError` saying where decoding failed. No other encoding is guessed:
    a latin-1 file is an error naming its first undecodable byte, not silently mojibake."""
    codec = utf16_codec(data)
    if codec is not None:
        try:
            text = data.decode(codec)
        except UnicodeDecodeError as exc:
            raise SweepError(f"{path}: not valid {codec.upper()} (offset {exc.start})",
                             hint="re-save the file as UTF-8 or set corpus.on_error=skip"
                             ) from None
        if codec != "utf-16":
            log.warning("%s: no byte order mark; read as %s (its NUL bytes say so)", path,
                        codec.upper())
        return text
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
    except (OSError, RuntimeError) as exc:  # 3.11 raises RuntimeError on a symlink loop
        return f"an unresolvable target ({getattr(exc, 'strerror', None) or exc})"


def _corpus_files(root: Path, exts: set[str]) -> tuple[list[Path], list[str]]:
    """Files under ``root`` with one of ``exts`` (hidden folders not entered), and a message
    for each folder that could not be listed: `Path.rglob` passes over an unreadable folder
    without a word, and its documents would silently be missing from every run."""
    found: list[Path] = []
    unreadable: list[str] = []

    def failed(exc: OSError) -> None:
        unreadable.append(f"{one_line(str(exc.filename))}: cannot list this folder "
                          f"({exc.strerror or exc})")

    for folder, dirs, files in os.walk(root, onerror=failed):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(folder) / f for f in files
                     if not f.startswith(".") and Path(f).suffix.lower() in exts)
    return sorted(found), unreadable


def load_corpus(
    root: str | Path,
    *,
    extensions: Iterable[str] = DEFAULT_EXTENSIONS,
    on_error: str = "raise",
    parsers: Mapping[str, str] | None = None,
    cache_dir: str | Path | CacheTarget | None = None,
    parse_log: list | None = None,
    max_file_mb: float = DEFAULT_MAX_FILE_MB,
    limits: ParseLimits | None = None,
    skipped: dict[str, str] | None = None,
) -> list[Document]:
    """Every file under ``root`` (recursively) with one of ``extensions``, sorted by path.

    ``.pdf``, ``.html``/``.htm`` and ``.docx`` files are read by the parser ``parsers`` names
    for their format (``{"pdf": "pypdf"}``; the default otherwise), through the parse cache in
    ``cache_dir`` when given; one `ParseRecord` per such file is appended to ``parse_log``.
    ``on_error="skip"`` turns unreadable, undecodable or unparsable files into warnings; empty
    files are always skipped with a warning (they can hold no evidence). A file over
    ``max_file_mb`` megabytes (10^6 bytes; 0 = no limit) is refused, or skipped with
    ``on_error="skip"``, from its size alone: it is never read. ``limits`` bounds what one
    parsed file may cost (`ParseLimits`: PDF pages, inflated bytes, HTML characters and depth).
    A folder that cannot be listed, a FIFO, a device or a symlink loop with a corpus
    extension is refused like an unreadable file (or skipped with a warning). Each file
    skipped for a fault is recorded in ``skipped`` (its doc_id and its path -> the reason), so
    a golden item that names it is an orphan with that reason, not "not in the corpus".
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
    paths, unlisted = _corpus_files(root, exts)
    for message in unlisted:
        if on_error != "skip":
            raise SweepError(message, hint="fix its permissions or set corpus.on_error=skip")
        log.warning("skipped %s", message)
    docs: list[Document] = []
    seen: dict[str, str] = {}
    # one PDF under pdfplumber can take ten minutes: a log line every 30 s says which file
    with Progress("parse corpus", total=len(paths), unit="files", bar=False) as parsing:
        for i, path in enumerate(paths):
            rel = path.relative_to(root).as_posix()
            parsing.done, parsing.note = i, one_line(rel)
            shown = one_line(str(path))  # a name may hold a line break: never a second line
            real = _real(path)
            if isinstance(real, Path) and not real.is_relative_to(real_root):
                # One rule for runs and the labelling page: a symlink out of the corpus folder (a
                # home folder, /etc) is never indexed, scored or shown.
                log.warning("skipped %s: a symlink to %s, outside the corpus folder", shown,
                            one_line(str(real)))
                continue
            fmt = FORMATS.get(path.suffix.lower())
            try:
                try:
                    size = path.stat().st_size
                except (OSError, RuntimeError):
                    size = 0  # a symlink loop or a dangling link: read_regular names it
                if max_file_mb and size > max_file_mb * 1e6:
                    raise SweepError(f"{shown}: {size / 1e6:,.0f} MB ({size:,} bytes) is over the "
                                     f"size limit corpus.max_file_mb={max_file_mb:g}",
                                     hint="raise corpus.max_file_mb, remove the file, or set "
                                     "corpus.on_error=skip")
                if size > HUGE_FILE_BYTES:
                    log.warning("%s: %.0f MB is unusually large for a corpus document", shown,
                                size / 1e6)
                data = read_regular(path, shown)
                if fmt is None:
                    kind = sniff(data)
                    if kind in ("pdf", "docx", "zip", "badzip"):
                        raise SweepError(f"{shown}: named {path.suffix} but its content is "
                                         f"{'a PDF' if kind == 'pdf' else 'a zip / Word file'}",
                                         hint="rename the file to its real extension")
                    text = decode_file(Path(shown), data)
                elif not data.strip():
                    log.warning("skipped %s: empty file", shown)
                    continue
                else:
                    parsed, record = parse_file(data, shown, chosen[fmt], cache, rel, limits)
                    if parse_log is not None:
                        parse_log.append(record)
            except (OSError, SweepError) as exc:
                message = str(exc) if isinstance(exc, SweepError) else (
                    f"{shown}: cannot read ({one_line(str(exc))})")
                if on_error == "skip":
                    log.warning("skipped %s", message)
                    if skipped is not None:
                        reason = message.removeprefix(f"{shown}: ")
                        skipped[slugify_path(rel)] = skipped[rel] = f"{rel} was skipped: {reason}"
                    continue
                raise SweepError(message) from None
            if fmt is not None:
                doc = Document(doc_id=slugify_path(rel),
                               title=parsed.title or _first_heading(parsed.sections, rel),
                               text=parsed.text, sections=parsed.sections, source=rel,
                               parser=chosen[fmt].name, pages=parsed.pages)
            else:
                if not text.strip():
                    log.warning("skipped %s: empty file", shown)
                    continue
                doc = parse_document(rel, text, markdown=path.suffix.lower() != ".txt")
            if doc.doc_id in seen:
                raise SweepError(
                    f"{shown}: doc_id {doc.doc_id!r} is also the id of {seen[doc.doc_id]}",
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
