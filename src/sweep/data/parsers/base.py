"""What every parser returns, and the checks shared by all of them.

A parser turns the bytes of one file into `Parsed`: the text a sweep chunks and scores on, its
heading sections (character span + heading path, like a markdown file's) and, for PDFs, the
offset where each page starts. Parsers raise `SweepError` with a one-line message naming the
file; they never return an empty text.
"""

from __future__ import annotations

import zipfile
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from io import BytesIO
from pathlib import PurePosixPath
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.documents import Section, markdown_sections, normalize_text, utf16_codec


@dataclass(frozen=True)
class Parsed:
    text: str
    sections: tuple[Section, ...]
    pages: tuple[int, ...] = ()  # offset of each page's first character (PDF), page 1 first
    title: str = ""  # "" = let the loader pick one (first heading, else the file name)
    notes: tuple[str, ...] = ()  # how the structure was found, for the log

    def page_at(self, offset: int) -> int | None:
        return page_at(self.pages, offset)


def page_at(pages: tuple[int, ...], offset: int) -> int | None:
    """1-based page holding ``offset``, or None without a page map."""
    if not pages:
        return None
    return max(1, bisect_right(pages, offset))


ParseFn = Callable[[bytes, str], Parsed]


@dataclass(frozen=True)
class Parser:
    """A parser (the implementation of one entry of its format's registry): the function, the
    libraries whose versions key the cache, and the settings it runs with (they change the
    text, so they key the cache and the corpus fingerprint too)."""

    name: str
    fmt: str
    fn: ParseFn
    libraries: tuple[str, ...]  # distributions whose versions key the parse cache
    settings: dict[str, Any] = field(default_factory=dict)


def from_markdown(markdown: str, source: str, what: str) -> Parsed:
    """The parsed result of a converter that writes markdown: headings become sections."""
    text = normalize_text(markdown)
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n") + "\n"
    if not text.strip():
        raise SweepError(f"{source}: {what} found no text in this file",
                         hint="check the file in a viewer, or set corpus.on_error=skip")
    # Converters keep the NBSP of "Chapter&#160;1." in headings; a heading path is a label.
    sections = tuple(replace(s, heading_path=tuple(" ".join(t.split()) for t in s.heading_path))
                     for s in markdown_sections(text))
    return Parsed(text, sections)


def converter_error(source: str, what: str, exc: BaseException) -> SweepError:
    """One line for a converter library that raised: its own message is often several lines
    (markitdown lists every converter it tried), so the innermost first line is kept."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    lines = [line.strip(" -") for line in str(exc).splitlines() if line.strip(" -")]
    return SweepError(f"{source}: {what} cannot convert this file ({type(exc).__name__}: "
                      f"{(lines or [''])[-1][:160]})",
                      hint="check the file in a viewer, or set corpus.on_error=skip")


def sniff(data: bytes) -> str:
    """What the bytes are, whatever the file is called: pdf, docx, zip, html, text, binary
    or empty. Used to refuse a file whose extension lies about its content."""
    if not data:
        return "empty"
    if b"%PDF-" in data[:1024]:  # the spec allows junk before the header
        return "pdf"
    if data[:4] == b"PK\x03\x04":
        try:
            names = zipfile.ZipFile(BytesIO(data)).namelist()
        except zipfile.BadZipFile:
            return "badzip"
        return "docx" if "word/document.xml" in names else "zip"
    codec = utf16_codec(data)
    if codec is not None:  # UTF-16 text or HTML: sniffed as what it decodes to
        head = data[:8192].decode(codec, errors="replace").lstrip("\ufeff")
        return sniff(head.encode("utf-8")) if head else "empty"
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html", b"<?xml")) or b"<html" in head[:512]:
        return "html"
    if b"\x00" in data[:8192]:
        return "binary"
    return "text"


def check_content(data: bytes, fmt: str, source: str) -> None:
    """Refuse bytes that are not the format the extension names (a one-line `SweepError`)."""
    kind = sniff(data)
    if kind == "empty":
        raise SweepError(f"{source}: empty file")
    if fmt == kind or (fmt == "html" and kind == "text"):  # an HTML fragment has no <html>
        return
    if fmt == "docx" and kind == "badzip":
        raise SweepError(f"{source}: truncated or corrupt Word document (not a readable zip "
                         "archive)")
    if fmt == "docx" and kind == "zip":
        raise SweepError(f"{source}: a zip archive without word/document.xml, not a Word "
                         "document")
    shown = {"pdf": "a PDF", "docx": "a Word document", "html": "HTML", "zip": "a zip archive",
             "badzip": "a damaged zip archive", "text": "plain text",
             "binary": "binary data"}[kind]
    suffix = PurePosixPath(source).suffix or f".{fmt}"
    raise SweepError(f"{source}: named {suffix} but its content is {shown}",
                     hint="rename the file to its real extension, or remove it")
