"""PDF: pdfplumber or pypdf for the text; the outline (bookmarks) or font sizes for structure.

Both parsers open the file with pypdf first: it says whether the file is encrypted (an empty
user password is tried, as every viewer does) and reads the outline, which is the PDF's own
table of contents. The text is each page's text joined by a blank line; ``Parsed.pages`` holds
the offset where each page starts.

Headings come from the outline when the file has one: each entry (title, depth, page) is placed
at the line of its page whose text ends with the title, compared with quotes folded and spaces
removed (outline titles carry no section number and ASCII quotes; the page shows
``1.5.2 The ”$LANG” variable``). An entry not found on its page starts at the top of the page.
Without an outline, a font-size heuristic finds them (`font_headings`).
"""

from __future__ import annotations

import logging
import re
import statistics
from collections import Counter
from io import BytesIO
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.documents import Section, normalize_text, sections_from_headings
from sweep.data.parsers.base import Parsed

log = logging.getLogger(__name__)

# pdfplumber merges characters closer than x_tolerance points into one word. Its default (3)
# glues the words of justified lines ("Therearetwomethods..."): on the Debian Reference 29.9%
# of words are not words of the HTML twin; at 1 (0.5-1.5 give the same text) 0.26%.
PDFPLUMBER_SETTINGS: dict[str, Any] = {"x_tolerance": 1}
# pypdf's "layout" mode glues as many words as "plain" and pads columns with spaces (27.2% vs
# 22.9% unknown words on the Debian Reference); no pypdf knob (space_width) fixes the gluing.
PYPDF_SETTINGS: dict[str, Any] = {"extraction_mode": "plain"}
# A line is a heading when it is bold and at least this much larger than the body text.
HEADING_SIZE_RATIO = 1.15
MAX_HEADING_CHARS = 150

_FOLD = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'",
                       "\u2019": "'", "\u2013": "-", "\u2014": "-", "\u00a0": " "})

Heading = tuple[int, int, str]  # (0-based page index, level 1.., title)


def _key(text: str) -> str:
    return re.sub(r"\s+", "", text.translate(_FOLD)).lower()


def _quiet() -> None:
    # pypdf and pdfminer log every odd font or object at WARNING; a sweep would drown in them.
    for name in ("pypdf", "pdfminer"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _cause(exc: BaseException) -> BaseException:
    """pdfplumber wraps pdfminer's exception as the first argument of a PdfminerException."""
    if type(exc).__name__ == "PdfminerException" and exc.args and isinstance(
            exc.args[0], BaseException):
        return exc.args[0]
    return exc


def _encrypted_error(source: str) -> SweepError:
    return SweepError(f"{source}: encrypted PDF (a password is needed to read its text)",
                      hint="decrypt it first, e.g. `qpdf --decrypt --password=... in out`")


def declared_pages(reader: Any) -> int:
    """The page count the page tree's root declares (0 when unreadable): read before pypdf
    walks the tree, which takes 2.3 s for 10,000 pages."""
    try:
        return int(reader.trailer["/Root"]["/Pages"]["/Count"])
    except Exception:
        return 0


def open_reader(data: bytes, source: str, max_pages: int = 0) -> Any:
    """A pypdf reader on a readable, decrypted file, or a one-line `SweepError`; with
    ``max_pages``, a file whose page tree declares more pages is refused before it is walked
    (`sweep.data.parsers.limits` counts the real pages afterwards)."""
    _quiet()
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise _encrypted_error(source)
        if max_pages and declared_pages(reader) > max_pages:
            raise SweepError(f"{source}: a PDF of {declared_pages(reader):,} pages, over "
                             f"corpus.max_pages={max_pages}",
                             hint="raise corpus.max_pages if the file is genuine, or set "
                                  "corpus.on_error=skip")
        reader.pages[0]
    except SweepError:
        raise
    except (PdfReadError, Exception) as exc:
        first = (str(exc).splitlines() or [""])[0][:120]
        raise SweepError(f"{source}: truncated or corrupt PDF ({type(exc).__name__}: {first})"
                         ) from None
    return reader


def outline_headings(reader: Any) -> list[Heading]:
    """(page index, level, title) of every outline entry with a page, in outline order."""
    out: list[Heading] = []

    def walk(items: list[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):  # a nested list holds the previous entry's children
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # an entry pointing outside the document
                continue
            title = " ".join(str(getattr(item, "title", "") or "").split())
            if title and page is not None and page >= 0:
                out.append((page, min(depth + 1, 6), title))

    try:
        walk(reader.outline, 0)
    except Exception as exc:  # a broken outline costs the structure, not the text
        log.warning("outline unreadable (%s): headings from font sizes instead", exc)
        return []
    return out


def font_headings(data: bytes) -> list[Heading]:
    """Headings by font size, for PDFs without an outline.

    The body size is the most common character size (weighted by characters); a line is a
    heading when its median character size is at least ``HEADING_SIZE_RATIO`` x the body size,
    most of its characters are in a bold font, and it is short (at most
    ``MAX_HEADING_CHARS``). Levels rank the distinct heading sizes (rounded to 0.5 pt), the
    largest being level 1. On the Debian Reference this finds the chapter (24.8 pt), section
    (14.3 pt) and subsection (12.0 pt) titles over a 10 pt body. Costs a pdfplumber pass with
    characters (~150-360 ms a page).
    """
    import pdfplumber

    lines: list[tuple[int, float, str]] = []
    sizes: Counter[float] = Counter()
    with pdfplumber.open(BytesIO(data)) as pdf:
        for index, page in enumerate(pdf.pages):
            for line in page.extract_text_lines(return_chars=True, x_tolerance=1):
                chars = [c for c in line["chars"] if c["text"].strip()]
                if not chars:
                    continue
                for c in chars:
                    sizes[round(c["size"] * 2) / 2] += 1
                size = statistics.median(c["size"] for c in chars)
                bold = sum("bold" in c["fontname"].lower() for c in chars) > len(chars) / 2
                text = " ".join(line["text"].split())
                if bold and len(text) <= MAX_HEADING_CHARS and re.search(r"[^\W\d_]", text):
                    lines.append((index, size, text))
            page.close()
    if not sizes:
        return []
    body = sizes.most_common(1)[0][0]
    heads = [(p, s, t) for p, s, t in lines if s >= HEADING_SIZE_RATIO * body]
    ranks = sorted({round(s * 2) / 2 for _, s, _ in heads}, reverse=True)
    return [(p, min(ranks.index(round(s * 2) / 2) + 1, 6), t) for p, s, t in heads]


def assemble(page_texts: list[str], headings: list[Heading], source: str, title: str,
             how: str) -> Parsed:
    """Join page texts, map pages to offsets, place headings and build sections."""
    parts, starts, offset = [], [], 0
    for raw in page_texts:
        text = normalize_text(raw or "").strip("\n")
        text = "\n".join(line.rstrip() for line in text.split("\n"))
        starts.append(offset)
        parts.append(text)
        offset += len(text) + 2
    full = "\n\n".join(parts)
    if not full.strip():
        raise SweepError(f"{source}: no text layer; OCR is not supported "
                         f"({len(page_texts)} pages, all without text: a scan or images)",
                         hint="run OCR first (e.g. ocrmypdf) or set corpus.on_error=skip")
    placed: list[tuple[int, int, str]] = []
    cursor, unplaced = 0, 0
    for page, level, head in headings:
        if page >= len(starts):
            continue
        page_start = starts[page]
        page_end = page_start + len(parts[page])
        lo = max(cursor, page_start)
        found = _find_heading_line(full, lo, page_end, head) if lo <= page_end else None
        if found is None:
            unplaced += 1
            at = lo  # the top of its page, or just below the previous heading
        else:
            at, line_end = found
            cursor = line_end + 1  # the next heading is searched below this one
        placed.append((at, level, head))
    sections = _sections(full, placed)
    notes = (f"{len(placed)} headings from {how}"
             + (f", {unplaced} not found on their page (placed at its top)" if unplaced else ""),)
    return Parsed(full, sections, tuple(starts), title, notes)


# What may stand before a heading's title on its line: a number such as "1.5.2", "A.1", or
# "Chapter 3" (outline titles carry no number).
_NUMBER_PREFIX = re.compile(r"(?:chapter|appendix|part|section)?[0-9a-z]{0,3}(?:\.[0-9a-z]+)*\.?")


def _find_heading_line(text: str, lo: int, hi: int, title: str) -> tuple[int, int] | None:
    """``(start, end)`` of the line in ``text[lo:hi]`` (``lo`` a line start) that holds the
    heading ``title``: first a line that is the title with at most a number before it, else
    the first line that ends with it; compared folded (quotes, case, no spaces)."""
    want = _key(title)
    if not want:
        return None
    lines = []
    pos = lo
    while pos <= hi:
        end = text.find("\n", pos, hi)
        end = hi if end < 0 else end
        lines.append((pos, end, _key(text[pos:end])))
        pos = end + 1
    for start, end, key in lines:
        if key.endswith(want) and _NUMBER_PREFIX.fullmatch(key[: len(key) - len(want)]):
            return start, end
    for start, end, key in lines:
        if key.endswith(want):
            return start, end
    return None


def _sections(text: str, headings: list[tuple[int, int, str]]) -> tuple[Section, ...]:
    """Sections from placed headings, the markdown way: each runs to the next heading."""
    if not headings:
        return (Section(0, len(text), 0, ()),)
    return sections_from_headings(text, headings)


def _structure(reader: Any, data: bytes) -> tuple[list[Heading], str]:
    headings = outline_headings(reader)
    if headings:
        return headings, "the outline"
    try:
        return font_headings(data), "font sizes"
    except Exception as exc:  # pdfminer on a page it cannot lay out (a malformed MediaBox):
        # the text pypdf read stands; the structure is what is lost, and the log says so
        cause = _cause(exc)
        log.warning("font sizes unreadable (%s: %s): no headings", type(cause).__name__,
                    (str(cause).splitlines() or [""])[0][:120])
        return [], "nothing (font sizes unreadable)"


def _title(reader: Any) -> str:
    try:
        meta = reader.metadata
        return " ".join(str(meta.title).split()) if meta and meta.title else ""
    except Exception:
        return ""


def parse_pdfplumber(data: bytes, source: str) -> Parsed:
    import pdfplumber

    reader = open_reader(data, source)
    texts = []
    try:
        with pdfplumber.open(BytesIO(data)) as pdf:
            for page in pdf.pages:
                texts.append(page.extract_text(**PDFPLUMBER_SETTINGS) or "")
                page.close()  # frees the page's layout objects: 62 MB peak on 261 pages
    except Exception as exc:
        cause = _cause(exc)
        if type(cause).__name__ in ("PDFPasswordIncorrect", "PDFEncryptionError"):
            raise _encrypted_error(source) from None
        first = (str(cause).splitlines() or [""])[0][:120]
        raise SweepError(f"{source}: truncated or corrupt PDF ({type(cause).__name__}: "
                         f"{first})") from None
    headings, how = _structure(reader, data)
    return assemble(texts, headings, source, _title(reader), how)


def parse_pypdf(data: bytes, source: str) -> Parsed:
    from pypdf.errors import LimitReachedError

    reader = open_reader(data, source)
    texts = []
    try:
        for page in reader.pages:
            texts.append(page.extract_text(**PYPDF_SETTINGS) or "")
    except LimitReachedError as exc:
        raise SweepError(f"{source}: a stream inflates past pypdf's own limit of 75 MB "
                         f"({(str(exc).splitlines() or [''])[0][:80]})",
                         hint="try corpus.pdf_parser=pdfplumber, or set corpus.on_error=skip"
                         ) from None
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0][:120]
        raise SweepError(f"{source}: truncated or corrupt PDF ({type(exc).__name__}: {first})"
                         ) from None
    headings, how = _structure(reader, data)
    return assemble(texts, headings, source, _title(reader), how)
