"""Bounds on what one file may cost to parse, checked before the parser runs.

A small file can ask a parser for gigabytes: a PDF content stream that inflates 1000:1, a Word
part that does the same, an HTML page whose text or nesting a converter handles in quadratic
time or drops beyond a depth. Each bound is checked on the file's own structure, in bounded
memory and before any parser library sees the file, so a bomb is refused by a number in one
line naming the file, never by running out of memory or time:

- ``max_pages``: pages of a PDF (pypdf counts them from the page tree; nothing is extracted).
- ``max_inflated_mb``: megabytes (10^6 bytes) the file's compressed parts inflate to. A PDF's
  Flate streams other than images (content streams, forms, fonts: what a text parser
  decodes) are inflated here piece by piece and counted, the output thrown away; a Word
  file's zip members by their declared sizes (Python's zipfile never inflates a member past
  its declared size: it stops there with a CRC error).
- ``max_html_chars``: characters of an HTML page once decoded. trafilatura's time grows faster
  than the page (1 MB of paragraphs: 4 s, 2 MB: 10 s, 4 MB: 45 s on a shared 2-core machine).
- ``max_html_depth``: elements nested in an HTML page. libxml2 (under lxml, hence both HTML
  parsers) silently drops everything of a page, deep text and all that follows, once elements
  nest 255 deep; so the bound is checked and cannot be set above `HTML_DEPTH_CEILING`.

0 turns a bound off (but ``max_html_depth``, which has a ceiling). Word parts that declare a
DTD are refused too: Word never writes one, and an external entity can name a local file.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from sweep.common.errors import SweepError

# libxml2 keeps 254 levels of elements under <html>; from 255 on the page is cut silently.
HTML_DEPTH_CEILING = 250


@dataclass(frozen=True)
class ParseLimits:
    max_pages: int = 5000
    max_inflated_mb: float = 500.0
    max_html_chars: int = 4_000_000
    max_html_depth: int = 200

    def validate(self) -> None:
        for name in ("max_pages", "max_inflated_mb", "max_html_chars"):
            value = getattr(self, name)
            if not value >= 0:  # also refuses NaN
                raise SweepError(f"corpus.{name}={value} must be >= 0 (0 = no limit)")
        if not 1 <= self.max_html_depth <= HTML_DEPTH_CEILING:
            raise SweepError(f"corpus.max_html_depth={self.max_html_depth} must be between 1 "
                             f"and {HTML_DEPTH_CEILING} (libxml2 drops a page's text silently "
                             "from 255 levels on)")


def _over(source: str, what: str, value: str, key: str, limit: str) -> SweepError:
    return SweepError(f"{source}: {what} {value}, over corpus.{key}={limit}",
                      hint=f"raise corpus.{key} if the file is genuine, or set "
                           "corpus.on_error=skip")


# --------------------------------------------------------------------------- PDF

_CHUNK = 1 << 20


def _inflate_count(raw: bytes, budget: int) -> int:
    """Bytes a zlib stream inflates to, counted in pieces of at most 1 MiB; stops once past
    ``budget`` (returns more than ``budget`` then). A damaged stream counts what came out."""
    d = zlib.decompressobj()
    total, data = 0, raw
    try:
        while data and total <= budget:
            out = d.decompress(data, _CHUNK)
            total += len(out)
            data = d.unconsumed_tail
        while total <= budget and not d.eof:
            out = d.flush(_CHUNK) if not data else b""
            if not out:
                break
            total += len(out)
    except zlib.error:
        pass  # pypdf and pdfminer recover what they can; the parser will say if it cannot
    return total


def _filters(stream: Any) -> list[str]:
    f = stream.get("/Filter")
    if f is None:
        return []
    f = f.get_object()
    items = f if isinstance(f, list) else [f]
    return [str(x.get_object()) for x in items]


_SHRINKING = {"/ASCIIHexDecode", "/AHx", "/ASCII85Decode", "/A85"}


def pdf_inflated_bytes(reader: Any, budget: int) -> int:
    """What the PDF's non-image streams inflate to, stopping once past ``budget``."""
    from pypdf.filters import decode_stream_data
    from pypdf.generic import IndirectObject, StreamObject

    total = 0
    ids = [(idnum, gen) for gen, table in reader.xref.items() for idnum in table]
    ids += [(idnum, 0) for idnum in reader.xref_objStm]
    for idnum, gen in ids:
        try:
            obj = IndirectObject(idnum, gen, reader).get_object()
        except Exception:
            continue  # an object pypdf cannot read: the parser's error, not a bound
        if not isinstance(obj, StreamObject) or obj.get("/Subtype") == "/Image":
            continue
        filters = _filters(obj)
        raw = obj._data
        if not filters:
            total += len(raw)
        elif filters[-1] in ("/FlateDecode", "/Fl") and set(filters[:-1]) <= _SHRINKING:
            if filters[:-1]:
                head = StreamObject()
                head._data = raw
                head[_name("/Filter")] = _array(filters[:-1])
                raw = decode_stream_data(head)
            total += _inflate_count(raw, budget - total)
        else:  # LZW, RunLength, ...: pypdf decodes them with its own output limit
            try:
                total += len(obj.get_data())
            except Exception:
                continue
        if total > budget:
            break
    return total


def _name(value: str) -> Any:
    from pypdf.generic import NameObject

    return NameObject(value)


def _array(values: list[str]) -> Any:
    from pypdf.generic import ArrayObject, NameObject

    return ArrayObject(NameObject(v) for v in values)


def check_pdf(reader: Any, data: bytes, source: str, limits: ParseLimits) -> None:
    """Pages and inflated bytes of an opened PDF against the bounds."""
    if limits.max_pages:
        n = len(reader.pages)
        if n > limits.max_pages:
            raise _over(source, "a PDF of", f"{n:,} pages", "max_pages", f"{limits.max_pages}")
    if limits.max_inflated_mb:
        budget = int(limits.max_inflated_mb * 1e6)
        if pdf_inflated_bytes(reader, budget) > budget:
            raise _over(source, "its streams inflate to more than",
                        f"{budget / 1e6:,.0f} MB ({len(data):,} bytes on disk)",
                        "max_inflated_mb", f"{limits.max_inflated_mb:g}")


def check_mediaboxes(reader: Any, source: str) -> None:
    """Every page's MediaBox is four numbers: pdfminer (pdfplumber) lays a page out in it and
    fails with a bare TypeError or IndexError otherwise, and pypdf reads no text from some
    (``[0 0 a b]``, which it would report as a page without a text layer)."""
    from pypdf.generic import ArrayObject, FloatObject, NumberObject

    for number, page in enumerate(reader.pages, start=1):
        box = page.get_inherited("/MediaBox", None) if hasattr(page, "get_inherited") else (
            page.get("/MediaBox"))
        box = box.get_object() if box is not None else None
        ok = isinstance(box, ArrayObject) and len(box) == 4 and all(
            isinstance(v.get_object(), (FloatObject, NumberObject)) for v in box)
        if not ok:
            shown = (f"[{' '.join(str(v) for v in box)[:60]}]" if isinstance(box, ArrayObject)
                     else "missing" if box is None else str(box)[:60])
            raise SweepError(f"{source}: page {number} has a malformed MediaBox {shown} "
                             "(four numbers expected)",
                             hint="repair it (e.g. `qpdf in.pdf out.pdf`) or set "
                                  "corpus.on_error=skip")


# --------------------------------------------------------------------------- Word

_DTD = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)


def check_docx(data: bytes, source: str, limits: ParseLimits) -> None:
    """Declared inflated size of the package, and no DTD in any XML part."""
    try:
        archive = zipfile.ZipFile(BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # check_content has said what it is; the parser names the damage
    if limits.max_inflated_mb:
        total = sum(i.file_size for i in infos)
        if total > limits.max_inflated_mb * 1e6:
            raise _over(source, f"its {len(infos)} zip members inflate to",
                        f"{total / 1e6:,.0f} MB ({len(data):,} bytes on disk)",
                        "max_inflated_mb", f"{limits.max_inflated_mb:g}")
    for info in infos:
        if not info.filename.lower().endswith((".xml", ".rels")):
            continue
        try:
            with archive.open(info) as fh:
                head = fh.read(4096)  # a DTD comes before the root element
        except Exception:
            continue
        if _DTD.search(head):
            raise SweepError(f"{source}: {info.filename} declares a DTD (<!DOCTYPE> or "
                             "<!ENTITY>), which Word never writes: refused, an external "
                             "entity can read local files",
                             hint="re-save the file from Word or LibreOffice")


# --------------------------------------------------------------------------- HTML


def check_html_chars(text: str, source: str, limits: ParseLimits) -> None:
    if limits.max_html_chars and len(text) > limits.max_html_chars:
        raise _over(source, "an HTML page of", f"{len(text):,} characters", "max_html_chars",
                    f"{limits.max_html_chars}")


def check_html_depth(tree: Any, source: str, limits: ParseLimits) -> None:
    """Deepest element of a parsed page (lxml keeps at most 254 levels, so a page cut by
    libxml2 reaches the ceiling and is refused here)."""
    import lxml.etree as etree

    depth = deepest = 0
    for event, _ in etree.iterwalk(tree, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
    if deepest > limits.max_html_depth:
        cut = " (libxml2 drops the text from 255 on)" if deepest >= 254 else ""
        raise _over(source, "elements nested", f"{deepest}{'+' if cut else ''} deep{cut}",
                    "max_html_depth", f"{limits.max_html_depth}")


# --------------------------------------------------------------------------- all formats


def check_limits(data: bytes, fmt: str, parser: str, source: str, limits: ParseLimits) -> None:
    """Every bound that applies to a file of format ``fmt`` read by ``parser``; a one-line
    `SweepError` naming the file and the bound it breaks."""
    if fmt == "pdf":
        from sweep.data.parsers.pdf import open_reader

        reader = open_reader(data, source, limits.max_pages)
        check_pdf(reader, data, source, limits)
        check_mediaboxes(reader, source)
    elif fmt == "docx":
        check_docx(data, source, limits)
    elif fmt == "html":
        from sweep.data.parsers.html import decode_html, parse_tree

        text = decode_html(data, source)
        check_html_chars(text, source, limits)
        check_html_depth(parse_tree(text), source, limits)
