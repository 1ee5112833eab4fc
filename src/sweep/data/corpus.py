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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.common.errors import CacheUnusable, SweepError, one_line
from sweep.common.files import read_regular
from sweep.common.progress import Progress
from sweep.common.store import CacheTarget

# Re-exported: the document types and text rules live in sweep.data.documents.
from sweep.data.documents import (  # noqa: F401
    Document,
    Section,
    first_heading,
    markdown_headings,
    markdown_sections,
    normalize_text,
    parse_document,
    sections_from_headings,
    slugify_path,
    title_from,
    utf16_codec,
)

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
            except CacheUnusable:
                raise  # the cache folder failed, not this document: never skipped
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
                               title=parsed.title or first_heading(parsed.sections, rel),
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
