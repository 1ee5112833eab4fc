"""A quote copied from a page's visible text is found in every HTML and Word parser's output,
whatever the parser does to the text around it (markdown escapes, table pipes, autolinks, link
titles, soft hyphens, ligatures, NBSP, smart quotes, source line wraps)."""

from __future__ import annotations

import io

import lxml.html
import pytest

from sweep.data.parsers import PARSERS, parse_file
from sweep.data.quotes import QuoteIndex

# Each paragraph holds one thing a converter rewrites; the quote is what a browser shows.
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Hostile quotes</title></head>
<body><main><h1>Quotes</h1>
<p>On x86_64 machines the glob *.deb matches every package_file in the folder.</p>
<p>Type 2*3 at the prompt and read __init__ twice, then press [Enter].</p>
<table><tr><th>package</th><th>description</th></tr>
<tr><td>mc</td><td>A text-mode | full-screen file manager</td></tr>
<tr><td>vim</td><td>Unix text editor Vi IMproved</td></tr></table>
<p>The Debian Wiki at <a href="https://wiki.debian.org/">https://wiki.debian.org/</a> for the
moving and specific topics.</p>
<p>See <a href="#x" title="2.5.3. Archive level &quot;Release&quot; files">Section 2.5.3,
\u201cArchive level "Release" files\u201d</a> for the details of the archive.</p>
<p>The auto&shy;matic mounting of removable media is done by udisks2 for the desktop.</p>
<p>The \ufb01le system keeps a \ufb02ag for each inode it allocates on the disk.</p>
<p>Press&nbsp;Ctrl-Alt-F2 to return&nbsp;to the GUI environment from the console.</p>
<p>The \u201c$LANG\u201d variable is set to \u201cen_US.UTF-8\u201d by the user\u2019s login
shell
   when it    starts.</p>
</main></body></html>"""

# Visible text a user copies, with the typing a browser's copy or a keyboard adds: ASCII
# quotes for smart ones, no soft hyphen, "fi" for the ligature, a space for NBSP.
QUOTES = [
    "On x86_64 machines the glob *.deb matches every package_file in the folder.",
    "Type 2*3 at the prompt and read __init__ twice, then press [Enter].",
    "A text-mode | full-screen file manager",
    "vim Unix text editor Vi IMproved",
    "The Debian Wiki at https://wiki.debian.org/ for the moving and specific topics.",
    'See Section 2.5.3, \u201cArchive level "Release" files\u201d for the details of the archive.',
    "The automatic mounting of removable media is done by udisks2 for the desktop.",
    "The file system keeps a flag for each inode it allocates on the disk.",
    "Press Ctrl-Alt-F2 to return to the GUI environment from the console.",
    'The "$LANG" variable is set to "en_US.UTF-8" by the user\'s login shell when it starts.',
]


def visible_text(page: str) -> str:
    """The page's text as a browser copies it: table cells apart, whitespace collapsed."""
    return " ".join(" ".join(lxml.html.document_fromstring(page).itertext()).split())


def test_the_quotes_are_the_pages_visible_text_up_to_typing() -> None:
    # The test means something only if the quotes are what a reader sees: compare with the
    # smart quotes, soft hyphen, ligatures and NBSP typed the plain way.
    typed = visible_text(PAGE).translate({0xAD: None, 0xFB01: "fi", 0xFB02: "fl", 0xA0: " ",
                                          0x201C: '"', 0x201D: '"', 0x2019: "'"})
    for quote in QUOTES:
        assert quote.replace("\u201c", '"').replace("\u201d", '"') in typed, quote


@pytest.mark.parametrize("parser", sorted(PARSERS["html"]))
def test_every_visible_quote_is_found_in_each_html_parsers_output(parser: str) -> None:
    parsed, _ = parse_file(PAGE.encode("utf-8"), "page.html", PARSERS["html"].impl(parser))
    index = QuoteIndex({"page": parsed.text})
    missing = [q for q in QUOTES if index.find(q)[0] is None]
    assert missing == [], f"{parser} output:\n{parsed.text}"


def _docx(paragraphs: list[str]) -> bytes:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate([("mc", "A text-mode | full-screen file manager"),
                             ("vim", "Unix text editor Vi IMproved")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.mark.parametrize("parser", sorted(PARSERS["docx"]))
def test_every_visible_quote_is_found_in_each_docx_parsers_output(parser: str) -> None:
    paragraphs = [
        "On x86_64 machines the glob *.deb matches every package_file in the folder.",
        "Type 2*3 at the prompt and read __init__ twice, then press [Enter].",
        "The auto\u00admatic mounting of removable media is done by udisks2 for the desktop.",
        "The \ufb01le system keeps a \ufb02ag for each inode it allocates on the disk.",
        "Press\u00a0Ctrl-Alt-F2 to return\u00a0to the GUI environment from the console.",
        "The \u201c$LANG\u201d variable is set to \u201cen_US.UTF-8\u201d by the user\u2019s "
        "login shell when it starts.",
    ]
    parsed, _ = parse_file(_docx(paragraphs), "doc.docx", PARSERS["docx"].impl(parser))
    index = QuoteIndex({"doc": parsed.text})
    wanted = [q for q in QUOTES if "Wiki" not in q and "Section" not in q]
    missing = [q for q in wanted if index.find(q)[0] is None]
    assert missing == [], f"{parser} output:\n{parsed.text}"
