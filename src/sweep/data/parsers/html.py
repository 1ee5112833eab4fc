"""HTML: trafilatura (the main content) or markitdown (the whole page), both as markdown.

The bytes are decoded here, not by the libraries: both ignore ``<meta charset>`` and guess with
charset-normalizer, which reads a cp1252 page declared ``iso-8859-1`` as cp1250 ("naïve" ->
"naďve"). `decode_html` follows the WHATWG encoding sniffing rules instead: a byte order mark,
then the declared charset as browsers map it (``iso-8859-1``/``ascii`` are windows-1252, a
``utf-16`` meta tag means UTF-8), then UTF-8 when the bytes are valid UTF-8, then
windows-1252, the web's default.

trafilatura runs with XML output and no inline formatting, rendered to markdown here: its own
markdown mode reorders nested inline markup (``"<code>cat <em>x</em></code>"`` comes out with
the words moved), which loses evidence, while its XML keeps the text verbatim and the headings
(``<head rend="h2">``). Code blocks are fenced so that a shell prompt ``# apt-get`` inside one
is not read as a heading. Before extraction, two fixes that cost nothing on other pages:
self-closed ``<a id="x"/>`` (XHTML parsed as HTML, where the open ``<a>`` swallows the heading's
title: trafilatura then drops every DocBook heading as link text) are closed and empty link
targets removed, and a page with
no ``<main>``/``<article>`` whose body holds a DocBook content ``div`` (chapter, preface,
appendix, ...) gets that ``div`` marked as ``<main>`` (trafilatura otherwise falls back to a
text-only recovery that keeps no heading), and a bare ``<pre>`` gets a ``<code>`` inside (else
its line breaks are lost). Sphinx permalinks (``a.headerlink``, the ``¶``)
are removed for both parsers.
"""

from __future__ import annotations

import codecs
import io
import logging
import re
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.documents import utf16_codec
from sweep.data.parsers.base import Parsed, converter_error, from_markdown

log = logging.getLogger(__name__)

TRAFILATURA_SETTINGS: dict[str, Any] = {
    "output_format": "xml", "include_formatting": False, "include_tables": True,
    "include_comments": False, "include_links": False, "include_images": False,
}
MARKITDOWN_HTML_SETTINGS: dict[str, Any] = {}  # markitdown's defaults: the whole page

# WHATWG: these labels mean windows-1252 in every browser.
_AS_CP1252 = {"iso-8859-1", "iso8859-1", "latin-1", "latin1", "l1", "ascii", "us-ascii",
              "windows-1252", "cp1252", "x-cp1252", "iso_8859-1"}
# Labels a browser reads as another encoding than Python's codec of the same name would.
_WHATWG_ALIASES = {"iso-8859-9": "cp1254", "iso8859-9": "cp1254", "latin5": "cp1254",
                   "iso-8859-11": "cp874", "tis-620": "cp874", "gb2312": "gbk",
                   "x-gbk": "gbk", "ks_c_5601-1987": "euc-kr", "x-sjis": "shift_jis",
                   "shift-jis": "shift_jis", "windows-31j": "shift_jis"}
_XML_PROLOG = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)
# Greedy and without a second whitespace quantifier: the lazy form ``(\s[^<>]*?)?\s*/>`` is
# quadratic on a long run of spaces inside a tag (a megabyte of them hung both parsers).
_SELF_CLOSED = re.compile(r"<(a|span|div|p|i|b|em|code|td|th|li)(\s[^<>]*)?/>", re.IGNORECASE)
_DOCBOOK_CONTAINERS = ("chapter", "preface", "appendix", "book", "index", "article", "part",
                       "reference", "glossary", "bibliography", "colophon", "dedication")


def _whatwg_1252(exc: UnicodeError) -> tuple[str, int]:
    """windows-1252 as the WHATWG Encoding Standard defines it: the five bytes Python's
    cp1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) are the C1 controls of the same
    number, so a page in it always decodes."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "".join(chr(b) for b in exc.object[exc.start:exc.end]), exc.end


codecs.register_error("sweep-whatwg-1252", _whatwg_1252)


def _codec(label: str) -> str:
    """The codec a browser uses for a declared ``label`` (the WHATWG label table, for the
    labels whose meaning differs from Python's)."""
    label = label.strip().lower()
    if label in _AS_CP1252:
        return "cp1252"
    if label.startswith(("utf-16", "utf16", "ucs-2", "unicode")) or label == "x-user-defined":
        # A meta tag can only be read because the bytes are ASCII-compatible: "utf-16" in one
        # is a template's mistake, and the standard reads the page as UTF-8.
        return "utf-8" if label != "x-user-defined" else "cp1252"
    return _WHATWG_ALIASES.get(label, label)


def decode_html(data: bytes, source: str) -> str:
    """The page as text, by the WHATWG encoding sniffing rules: a byte order mark; else the
    charset its ``<meta>`` declares in the first 1024 bytes (scanned in 8 KiB here, as
    before), as browsers map it (``iso-8859-1`` and ``ascii`` are windows-1252, ``utf-16``
    is UTF-8); else UTF-8 when the bytes are valid UTF-8; else windows-1252, the web's
    default, never a statistical guess (which read Latin-1 text as cp1250: "naïve" ->
    "naďve"). A declared single-byte charset on a page that is valid UTF-8 with non-ASCII
    text is read as UTF-8, with a warning (a template that kept an old meta tag)."""
    from bs4.dammit import EncodingDetector

    if data.startswith(b"\xef\xbb\xbf"):
        return data.decode("utf-8-sig", errors="replace")
    utf16 = utf16_codec(data)
    if utf16 is not None:
        if utf16 != "utf-16":
            log.warning("%s: no byte order mark; read as %s (its NUL bytes say so)", source,
                        utf16.upper())
        return data.decode(utf16, errors="replace")
    declared = EncodingDetector.find_declared_encoding(data[:8192], is_html=True,
                                                       search_entire_document=False)
    if declared:
        codec = _codec(declared)
        if codec not in ("utf-8", "utf8") and _is_utf8_beyond_ascii(data):
            # A page saved as UTF-8 under a template that still says iso-8859-1: read as
            # declared, every "é" would be "Ã©". Text in a single-byte charset is almost
            # never valid UTF-8 once it holds a non-ASCII letter, so the bytes win.
            log.warning("%s: declares charset %s but is valid UTF-8 with non-ASCII text; read "
                        "as UTF-8", source, declared)
            return data.decode("utf-8")
        try:
            return _decode(data, codec)
        except LookupError:
            log.warning("%s: declares charset %s, which no browser knows; read as if none "
                        "were declared", source, declared)
        except UnicodeDecodeError as exc:
            # As a browser does: the declared charset, each byte it cannot read as U+FFFD
            log.warning("%s: not valid %s at byte %d (as declared); undecodable bytes "
                        "replaced", source, codec, exc.start)
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _decode(data, "cp1252")


def _decode(data: bytes, codec: str) -> str:
    if codec == "cp1252":
        return data.decode("cp1252", errors="sweep-whatwg-1252")
    return data.decode(codec)


def parse_tree(html: str) -> Any:
    """The page as lxml reads it, self-closed ``<a id="x"/>`` closed (XHTML read as HTML)."""
    import lxml.html

    html = _SELF_CLOSED.sub(lambda m: f"<{m.group(1)}{(m.group(2) or '').rstrip()}>"
                                      f"</{m.group(1)}>", _XML_PROLOG.sub("", html))
    return lxml.html.document_fromstring(html)


def _is_utf8_beyond_ascii(data: bytes) -> bool:
    if data.isascii():
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _tree(html: str) -> Any:
    tree = parse_tree(html)
    for link in tree.xpath('//a[contains(concat(" ", normalize-space(@class), " "), '
                           '" headerlink ")]'):
        link.drop_tree()  # keeps the tail text
    for anchor in tree.xpath("//a[not(node())]"):
        anchor.drop_tag()  # an empty link target: trafilatura counts a heading holding one as a link
    return tree


def _code_in_pre(tree: Any) -> None:
    """trafilatura turns a bare ``<pre>`` into a ``<quote>`` with its line breaks collapsed,
    but keeps them for ``<pre><code>``: give every bare ``<pre>`` its ``<code>``."""
    import lxml.html

    for pre in tree.iter("pre"):
        if pre.find(".//code") is not None:
            continue
        code = lxml.html.Element("code")
        code.text, pre.text = pre.text, None
        for child in list(pre):
            code.append(child)
        pre.append(code)


def _mark_docbook_main(tree: Any) -> None:
    if tree.xpath("//main|//article|//*[@role='main']"):
        return
    for div in tree.xpath("//body/div[@class]"):
        if div.get("class", "").split()[0] in _DOCBOOK_CONTAINERS:
            div.tag = "main"
            return


_BLOCKS = {"head", "p", "list", "table", "code", "quote"}
_NESTING = {"p", "list", "item", "cell", "row", "table", "quote", "head", "code"}
_LINE_HEADING = re.compile(r"^(\s{0,3})(#{1,6})(?=\s|$)", re.MULTILINE)


def _text(el: Any) -> str:
    """Text of an XML element, ``<lb/>`` as a line break marker (\\x00)."""
    out = [el.text or ""]
    for child in el:
        out.append("\x00" if child.tag == "lb" else _text(child))
        out.append(child.tail or "")
    return "".join(out)


def _flow(el: Any) -> str:
    """Running text: whitespace collapsed, explicit line breaks kept, and a line that would
    read as a markdown heading escaped (it is text, not a heading)."""
    text = re.sub(r"\s+", " ", _text(el))  # source line wraps are spaces; <lb/> is \x00
    text = "\n".join(part.strip() for part in text.split("\x00"))
    return _LINE_HEADING.sub(r"\1\\\2", text.strip())


def _fence(code: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{code.strip(chr(10))}\n{fence}"


def _cell(el: Any) -> str:
    return _flow(el).replace("\n", " ").replace("|", "\\|")


def render_trafilatura_xml(xml: str) -> str:
    """trafilatura's XML as markdown: headings, paragraphs, lists, tables, fenced code."""
    import lxml.etree as etree

    root = etree.fromstring(xml.encode("utf-8"))
    blocks: list[str] = []
    for el in root.iter(*_BLOCKS):
        if any(a.tag in _NESTING for a in el.iterancestors()):
            continue  # rendered with the block that holds it
        if el.tag == "head":
            rend = el.get("rend") or "h2"
            level = int(rend[1]) if re.fullmatch(r"h[1-6]", rend) else 2
            title = _flow(el).replace("\n", " ").lstrip("\\")
            if title:
                blocks.append("#" * level + " " + title)
        elif el.tag == "list":
            ordered = (el.get("rend") or "") == "ol"
            items = [_flow(i).replace("\n", " ") for i in el.iter("item")
                     if not any(a.tag == "item" for a in i.iterancestors())]
            blocks.append("\n".join(f"{n}. {t}" if ordered else f"- {t}"
                                    for n, t in enumerate(items, 1) if t))
        elif el.tag == "table":
            rows = [[_cell(c) for c in row.iter("cell")] for row in el.iter("row")]
            rows = [r for r in rows if any(r)]
            if rows:
                width = max(len(r) for r in rows)
                lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
                lines.insert(1, "|" + " --- |" * width)
                blocks.append("\n".join(lines))
        elif el.tag == "code":
            blocks.append(_fence(_text(el).replace("\x00", "\n")))
        elif el.tag == "quote":
            body = _text(el).replace("\x00", "\n").strip("\n")
            blocks.append("\n".join("> " + line for line in body.split("\n")))
        else:
            text = _flow(el)
            if text:
                blocks.append(text)
    return "\n\n".join(b for b in blocks if b.strip())


def parse_trafilatura(data: bytes, source: str) -> Parsed:
    import trafilatura

    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    tree = _tree(decode_html(data, source))
    _mark_docbook_main(tree)
    _code_in_pre(tree)
    xml = trafilatura.extract(tree, **TRAFILATURA_SETTINGS)
    if not xml:
        raise SweepError(f"{source}: trafilatura found no main content in this page",
                         hint="try corpus.html_parser=markitdown, or set corpus.on_error=skip")
    return from_markdown(render_trafilatura_xml(xml), source, "trafilatura")


def parse_markitdown_html(data: bytes, source: str) -> Parsed:
    import lxml.html
    from markitdown import MarkItDown, StreamInfo

    tree = _tree(decode_html(data, source))
    page = lxml.html.tostring(tree, encoding="unicode")
    info = StreamInfo(extension=".html", mimetype="text/html", charset="utf-8")
    try:
        result = MarkItDown().convert_stream(io.BytesIO(page.encode("utf-8")),
                                             stream_info=info, **MARKITDOWN_HTML_SETTINGS)
    except Exception as exc:
        raise converter_error(source, "markitdown", exc) from None
    return from_markdown(result.text_content or "", source, "markitdown")
