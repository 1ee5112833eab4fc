"""`sweep label` on a PDF: page numbers in the document view, the hits, the evidence, the saved
item and the golden-set list, from the parser's page map; and the document text stays exactly
the parser's text (page markers add no characters), so offsets and saved quotes still hold."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from helpers import label_settings
from pdfgen import make_pdf
from sweep.data.corpus import Document
from sweep.label.app import LabelApp, build_app, page_label
from sweep.label.pages import doc_fragment, hits_html, items_page

PAGES = [
    [(14, True, "1 Links"), (10, False, "There are two methods of associating a file name.")],
    [(10, False, "A hard link is a duplicate name for an existing file.")],
    [(14, True, "2 Permissions"), (10, False, "The sticky bit protects files in a shared folder.")],
]


class DocText(HTMLParser):
    """The text of the `.doc-text` box, and the offset (characters before it in the box) of
    each page marker: what label.js measures to turn a selection into offsets."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # >0 inside the box
        self.text = ""
        self.markers: dict[int, int] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if self.depth:
            self.depth += 1
            if "pg" in (a.get("class") or "").split():
                self.markers[int(a["data-page"] or 0)] = len(self.text)
        elif "doc-text" in (a.get("class") or "").split():
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.text += data


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> LabelApp:
    work = tmp_path_factory.mktemp("label-pdf")
    (work / "corpus").mkdir()
    (work / "corpus" / "book.pdf").write_bytes(make_pdf(PAGES))
    (work / "corpus" / "notes.md").write_text("# Notes\n\nA hard link is also in markdown.\n")
    # a third document: with two, BM25's idf of a word in one of them is 0 (nothing ranks)
    (work / "corpus" / "cats.md").write_text("# Cats\n\nCats sleep most of the day.\n")
    settings = label_settings(work / "corpus", work / "golden.jsonl",
                              "corpus.extensions=['.md','.pdf']", "cache.enabled=true",
                              f"cache.dir={work / 'cache'}")
    return build_app(settings, say=lambda _: None)


def book(app: LabelApp) -> Document:
    doc = app.by_id["book"]
    assert len(doc.pages) == 3 and doc.parser == "pdfplumber"
    return doc


def span(doc: Document, quote: str) -> dict:
    at = doc.text.index(quote)
    return {"doc_id": doc.doc_id, "start": at, "end": at + len(quote)}


def test_page_label() -> None:
    text = "one\n\ntwo\n\nthree\n"
    doc = Document("b", "B", text, (), "b.pdf", "pypdf", (0, 5, 10))
    assert page_label(doc, 0, 3) == "page 1"
    assert page_label(doc, 5, 8) == "page 2"
    assert page_label(doc, 1, 5) == "page 1"  # end is exclusive: offset 5 is not in it
    assert page_label(doc, 1, 6) == "pages 1\u20132"
    assert page_label(doc, 12, 12) == "page 3"  # an empty span: its start's page
    assert page_label(Document("m", "M", text, (), "m.md"), 0, 3) == ""


def test_document_view_marks_each_page_without_adding_text(app: LabelApp) -> None:
    doc = book(app)
    html = doc_fragment(doc, hl=(doc.pages[1], doc.pages[1] + 6))
    box = DocText()
    box.feed(html)
    assert box.text == doc.text  # markers are empty: offsets measured in the page still hold
    assert box.markers == {1: 0, 2: doc.pages[1], 3: doc.pages[2]}
    assert doc.text[doc.pages[1]:].startswith("A hard link")
    assert "3 pages (pdfplumber)" in html
    assert html.count('data-jump="p-') == 3  # the page list jumps to each marker
    # the outline gives each heading's page
    # (headings from font sizes here: the whole bold line, number included)
    assert '>1 Links</a> <span class="pgno">p. 1</span>' in html
    assert '>2 Permissions</a> <span class="pgno">p. 3</span>' in html


def test_markdown_documents_get_no_page_markers(app: LabelApp) -> None:
    html = doc_fragment(app.by_id["notes"])
    assert 'class="pg"' not in html and "pages (" not in html and "p. " not in html


def test_hits_and_evidence_name_their_page(app: LabelApp) -> None:
    doc = book(app)
    hits = app.search("duplicate name for an existing file")["bm25"]
    on_book = [h for h in hits if h.chunk.doc_id == "book"]
    assert on_book
    rendered = hits_html(app, on_book, "duplicate name", "bm25")
    # the whole 3-page book is one chunk (177 characters, under 256 tokens)
    assert (on_book[0].chunk.start, on_book[0].chunk.end) == (0, len(doc.text))
    assert "<span class=pgno>pages 1\u20133</span>" in rendered
    checked = app.check({"question": "what is a hard link",
                         "evidence": [span(doc, "A hard link is a duplicate name"),
                                      span(app.by_id["notes"], "A hard link is also")]})
    assert [e["page"] for e in checked["evidence"]] == ["page 2", ""]
    across = doc.text.index("file name.")  # the end of page 1 into page 2
    both = {"doc_id": "book", "start": across, "end": doc.pages[1] + 6}
    assert app.check({"question": "q", "evidence": [both]})["evidence"][0]["page"] == \
        "pages 1\u20132"


def test_saved_item_and_golden_list_give_the_page(app: LabelApp) -> None:
    doc = book(app)
    saved = app.save_new({"question": "which bit protects files in a shared folder",
                          "evidence": [span(doc, "The sticky bit protects files")]})
    assert saved["pages"] == ["book.pdf page 3"]
    # The saved quote resolves in a run with the same parser: the list view finds it there.
    rows, problems = app.rows(app.sweep_ranks())
    assert problems == []
    (row,) = [r for r in rows if r.entry.qid == saved["qid"]]
    assert row.resolves == "yes" and row.pages == ("book.pdf page 3",)
    page = items_page(app, rows, app.sweep_ranks(), "nonce")
    assert '<li class="pgno">found on book.pdf page 3</li>' in page


def test_marker_label_comes_from_css(tmp_path: Path) -> None:
    from sweep.label.shell import asset

    css = asset("label.css")
    assert '.pg::before { content: "page " attr(data-page)' in css
    assert "user-select: none" in css
