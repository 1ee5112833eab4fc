"""Parsers for PDF, HTML and Word files: text, structure, page map, cache, fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pdfgen import make_pdf
from sweep.config.schema import DocxParser, HtmlParser, PdfParser
from sweep.data.corpus import corpus_fingerprint, load_corpus
from sweep.data.parsers import PARSERS, get_parser, parse_file
from sweep.data.parsers.html import decode_html

PAGES = [
    [(18, True, "1 Getting started"),
     (10, False, "There are two methods of associating a file."),
     (14, True, "1.1 Hard links"),
     (10, False, "A hard link is a duplicate name.")],
    [(14, True, "1.2 Symbolic links"),
     (10, False, "A symlink points to a path (see below).")],
]
OUTLINE = [(1, 0, "Getting started"), (2, 0, "Hard links"), (2, 1, "Symbolic links")]

HTML_PAGE = """<!DOCTYPE html><html><head><title>Links</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/x">Previous topic</a></li></ul></nav>
<main>
<h1>Links in the filesystem<a class="headerlink" href="#l">¶</a></h1>
<p>There are two methods of associating a file with a different filename, and this paragraph
is long enough that an extractor keeps it as the main content of the page.</p>
<h2>Hard links</h2>
<p>A hard link is a duplicate name for an existing file; removing one name leaves the other
intact, which is why hard links cannot span filesystems on the same machine.</p>
<pre># apt-get install coreutils
$ ln foo bar</pre>
<table><tr><th>command</th><th>effect</th></tr><tr><td>ln</td><td>hard link</td></tr>
<tr><td>ln -s</td><td>symbolic link</td></tr></table>
<h2>Symbolic links</h2>
<p>A symbolic link is a small file that names another path; it can dangle when the target
is removed, and it can point across filesystems without any trouble at all.</p>
</main>
<footer><p>Copyright 2026 Example Corp. Report a Bug. Show Source.</p></footer>
</body></html>"""


def parse(data: bytes, fmt: str, name: str, source: str = "doc"):
    return parse_file(data, source, get_parser(fmt, name))[0]


def test_config_enums_match_the_registry() -> None:
    assert {e.value for e in PdfParser} == set(PARSERS["pdf"])
    assert {e.value for e in HtmlParser} == set(PARSERS["html"])
    assert {e.value for e in DocxParser} == set(PARSERS["docx"])


# ------------------------------------------------------------------------------------ PDF


@pytest.mark.parametrize("name", ["pdfplumber", "pypdf"])
def test_pdf_outline_gives_sections_and_pages(name: str) -> None:
    parsed = parse(make_pdf(PAGES, OUTLINE), "pdf", name, "book.pdf")
    text = parsed.text
    assert "There are two methods of associating a file." in text
    # page 2 starts where its first line is, after the blank line joining the pages
    assert parsed.pages[0] == 0 and text[parsed.pages[1]:].startswith("1.2 Symbolic links")
    assert text[parsed.pages[1] - 2:parsed.pages[1]] == "\n\n"
    assert parsed.page_at(text.index("symlink points")) == 2
    assert parsed.page_at(text.index("duplicate name")) == 1
    paths = [(text[s.start:s.start + 14], s.heading_path) for s in parsed.sections]
    assert paths == [
        ("1 Getting star", ("Getting started",)),
        ("1.1 Hard links", ("Getting started", "Hard links")),
        ("1.2 Symbolic l", ("Getting started", "Symbolic links")),
    ]
    assert parsed.sections[-1].end == len(text)
    assert "outline" in parsed.notes[0]


@pytest.mark.parametrize("name", ["pdfplumber", "pypdf"])
def test_pdf_without_outline_uses_font_sizes(name: str) -> None:
    parsed = parse(make_pdf(PAGES), "pdf", name)
    got = [(s.level, s.heading_path[-1]) for s in parsed.sections]
    # 18 pt bold -> level 1, 14 pt bold -> level 2; the 10 pt body is no heading
    assert got == [(1, "1 Getting started"), (2, "1.1 Hard links"), (2, "1.2 Symbolic links")]
    assert "font sizes" in parsed.notes[0]


def test_pdf_outline_entry_not_on_its_page_starts_at_the_page_top() -> None:
    parsed = parse(make_pdf(PAGES, [(1, 1, "A title printed nowhere")]), "pdf", "pdfplumber")
    assert [s.start for s in parsed.sections if s.level] == [parsed.pages[1]]
    assert "1 not found on their page" in parsed.notes[0]


# ----------------------------------------------------------------------------------- HTML


def test_trafilatura_keeps_main_content_headings_tables_and_fences_code() -> None:
    parsed = parse(HTML_PAGE.encode(), "html", "trafilatura")
    text = parsed.text
    assert [s.heading_path for s in parsed.sections] == [
        ("Links in the filesystem",),
        ("Links in the filesystem", "Hard links"),
        ("Links in the filesystem", "Symbolic links"),
    ]
    for boilerplate in ("Previous topic", "Report a Bug", "¶"):
        assert boilerplate not in text
    assert "| command | effect |" in text and "| ln -s | symbolic link |" in text
    # the shell prompt in <pre> is code, not an h1
    assert "```\n# apt-get install coreutils\n$ ln foo bar\n```" in text
    # line wraps in the source are spaces; the sentence is verbatim
    assert "There are two methods of associating a file with a different filename, and" in text


def test_markitdown_keeps_the_whole_page() -> None:
    parsed = parse(HTML_PAGE.encode(), "html", "markitdown")
    assert "Previous topic" in parsed.text and "Report a Bug" in parsed.text
    assert ("Links in the filesystem", "Hard links") in [s.heading_path for s in parsed.sections]


def test_docbook_xhtml_headings_survive_trafilatura() -> None:
    # DocBook writes <h2><a id="x"/>Title</h2> inside <div class="chapter">: parsed as HTML,
    # the open <a> swallows the title, and there is no <main>.
    para = ("<p>" + "Words that make this paragraph long enough to be content. " * 4 + "</p>")
    page = ('<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml">'
            '<head><title>c</title></head><body><div class="navheader">Prev Next</div>'
            '<div class="chapter"><h1 class="title"><a id="c1"/>Chapter 1. Basics</h1>' + para
            + '<h2 class="title"><a id="s1"/>1.1. Console basics</h2>' + para
            + '</div><div class="navfooter">Prev Home Next</div></body></html>')
    parsed = parse(page.encode(), "html", "trafilatura")
    assert [s.heading_path for s in parsed.sections] == [
        ("Chapter 1. Basics",), ("Chapter 1. Basics", "1.1. Console basics")]


def test_html_declared_latin1_is_read_as_cp1252_like_a_browser() -> None:
    body = "He said \u201chello\u201d \u2014 it\u2019s na\u00efve, Herr M\u00fcller. " * 6
    page = (f'<html><head><meta charset="iso-8859-1"><title>t</title></head><body><article>'
            f"<h1>Caf\u00e9</h1><p>{body}</p></article></body></html>").encode("cp1252")
    assert "\u201chello\u201d \u2014 it\u2019s na\u00efve" in decode_html(page, "p.html")
    for name in ("trafilatura", "markitdown"):
        assert "it\u2019s na\u00efve, Herr M\u00fcller" in parse(page, "html", name).text, name


# ----------------------------------------------------------------------------------- DOCX


def make_docx(path: Path) -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Installing the system", level=1)
    d.add_paragraph("The installer says \u201cNo root password\u201d \u2014 that\u2019s fine.")
    d.add_heading("Package tools", level=2)
    d.add_paragraph("apt is the high-level tool", style="List Bullet")
    d.add_paragraph("dpkg installs .deb files", style="List Bullet")
    d.add_paragraph("Run apt update", style="List Number")
    d.add_paragraph("Run apt upgrade", style="List Number")
    table = d.add_table(rows=3, cols=2)
    for r, row in enumerate([("tool", "level"), ("apt", "high"), ("dpkg", "low")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    d.add_heading("Afterword", level=2)
    d.add_paragraph("That is all.")
    d.save(path)
    return path.read_bytes()


def test_python_docx_headings_lists_table_in_body_order(tmp_path: Path) -> None:
    parsed = parse(make_docx(tmp_path / "t.docx"), "docx", "python_docx")
    text = parsed.text
    assert text.index("# Installing the system") < text.index("## Package tools")
    assert "- apt is the high-level tool\n- dpkg installs .deb files" in text
    assert "1. Run apt update\n2. Run apt upgrade" in text
    assert "| tool | level |\n| --- | --- |\n| apt | high |\n| dpkg | low |" in text
    assert text.index("| dpkg | low |") < text.index("## Afterword")  # tables in body order
    assert [s.heading_path for s in parsed.sections] == [
        ("Installing the system",), ("Installing the system", "Package tools"),
        ("Installing the system", "Afterword")]


def test_markitdown_docx_headings(tmp_path: Path) -> None:
    parsed = parse(make_docx(tmp_path / "t.docx"), "docx", "markitdown")
    assert ("Installing the system", "Package tools") in [s.heading_path for s in parsed.sections]
    assert "apt is the high-level tool" in parsed.text


# ------------------------------------------------------------------ corpus and fingerprint


def write_corpus(root: Path, with_pdf: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "notes.md").write_text("# Notes\n\nPlain markdown beside the PDF.\n")
    if with_pdf:
        (root / "book.pdf").write_bytes(make_pdf(PAGES, OUTLINE))
    return root


def test_load_corpus_reads_pdf_with_the_chosen_parser(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c")
    docs = {d.doc_id: d for d in load_corpus(root, parsers={"pdf": "pypdf"})}
    assert set(docs) == {"notes", "book"}
    assert docs["book"].parser == "pypdf" and docs["notes"].parser == ""
    assert docs["book"].title == "Getting started"  # no PDF title: the first heading
    assert docs["book"].page_at(docs["book"].text.index("symlink")) == 2
    assert docs["notes"].page_at(0) is None


def test_fingerprint_depends_on_the_parser_only_when_a_file_needs_one(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c")
    fp = {n: corpus_fingerprint(load_corpus(root, parsers={"pdf": n}))
          for n in ("pdfplumber", "pypdf")}
    # This PDF's text is the same under both parsers: the parser itself is hashed.
    texts = {n: {d.doc_id: d.text for d in load_corpus(root, parsers={"pdf": n})}["book"]
             for n in fp}
    assert texts["pdfplumber"] == texts["pypdf"]
    assert fp["pdfplumber"] != fp["pypdf"]
    md_only = write_corpus(tmp_path / "m", with_pdf=False)
    md_fps = {corpus_fingerprint(load_corpus(md_only, parsers={"pdf": n, "html": h}))
              for n in ("pdfplumber", "pypdf") for h in ("trafilatura", "markitdown")}
    assert len(md_fps) == 1


def test_unknown_parser_is_a_one_line_error(tmp_path: Path) -> None:
    from sweep.common.errors import SweepError

    with pytest.raises(SweepError, match=r"corpus.pdf_parser='tika' is not one of"):
        load_corpus(write_corpus(tmp_path / "c"), parsers={"pdf": "tika"})


# ---------------------------------------------------------------------------- parse cache


def test_parse_cache_second_run_parses_nothing(tmp_path: Path, monkeypatch) -> None:
    root = write_corpus(tmp_path / "c")
    cache_dir = tmp_path / "cache"
    first: list = []
    docs1 = load_corpus(root, cache_dir=cache_dir, parse_log=first)
    assert [(r.source, r.cached) for r in first] == [("book.pdf", False)]
    assert first[0].seconds > 0
    # The cached entry is JSON naming what made it.
    (entry,) = (cache_dir / "parsed").rglob("*.json")
    meta = json.loads(entry.read_text())
    assert meta["parser"] == "pdfplumber" and "pdfplumber" in meta["versions"]
    assert meta["settings"] == {"x_tolerance": 1}

    import pdfplumber

    calls: list[object] = []
    real_open = pdfplumber.open
    monkeypatch.setattr(pdfplumber, "open", lambda *a, **k: calls.append(a) or real_open(*a, **k))
    second: list = []
    docs2 = load_corpus(root, cache_dir=cache_dir, parse_log=second)
    assert calls == [] and [(r.cached, r.seconds) for r in second] == [(True, 0.0)]
    assert docs1 == docs2
    # Another parser is another entry: parsed once, then cached too.
    third: list = []
    load_corpus(root, cache_dir=cache_dir, parse_log=third, parsers={"pdf": "pypdf"})
    assert [r.cached for r in third] == [False]
    assert len(list((cache_dir / "parsed").rglob("*.json"))) == 2


def test_parse_cache_key_changes_with_content_settings_and_version(tmp_path: Path,
                                                                  monkeypatch) -> None:
    from sweep.data.parsers import registry

    parser = get_parser("pdf", "pdfplumber")
    base_key = registry.cache_key("a" * 64, parser)
    assert registry.cache_key("b" * 64, parser) != base_key
    other = type(parser)(parser.name, parser.fmt, parser.fn, parser.libraries,
                         {"x_tolerance": 3})
    assert registry.cache_key("a" * 64, other) != base_key
    monkeypatch.setattr(registry, "_library_version", lambda dist: "0.0-other")
    assert registry.cache_key("a" * 64, parser) != base_key


# ------------------------------------------------------------------- sweep validate --quotes


def test_validate_quotes_reports_the_level_under_every_parser(tmp_path: Path) -> None:
    from helpers import run_cli

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pages = [[(14, True, "1 Links"), (10, False, "A file \u201cfoo\u201d has two names.")]]
    (corpus / "book.pdf").write_bytes(make_pdf(pages))
    (corpus / "page.html").write_text(HTML_PAGE)
    golden = tmp_path / "golden.jsonl"
    lines = [
        {"qid": "pdf", "question": "names?", "evidence": [{"quote": 'A file "foo" has two names.'}]},
        {"qid": "main", "question": "hard?", "evidence": [
            {"path": "page.html", "quote": "A hard link is a duplicate name for an existing file"}]},
        {"qid": "nav", "question": "nav?", "evidence": [{"quote": "Previous topic"}]},
    ]
    golden.write_text("".join(json.dumps(x) + "\n" for x in lines))
    proc = run_cli("-m", "sweep.cli", "validate", "--quotes", "--json", f"corpus.path={corpus}",
                   f"golden.path={golden}", f"cache.dir={tmp_path / 'cache'}")
    assert proc.returncode == 0, proc.stderr
    levels = json.loads(proc.stdout)["quote_levels"]
    assert set(levels) == {"html:trafilatura", "html:markitdown", "pdf:pdfplumber", "pdf:pypdf"}
    for col in ("pdf:pdfplumber", "pdf:pypdf"):  # the default HTML parser beside each
        assert levels[col] == {"pdf": ["loose"], "main": ["exact"], "nav": ["missing"]}
    assert levels["html:trafilatura"]["nav"] == ["missing"]  # boilerplate: extracted away
    assert levels["html:markitdown"]["nav"] == ["exact"]  # the whole page keeps it
    # issue 45: the warning blames the parser, not the quote, and --quotes names the keeper
    out = json.loads(proc.stdout)
    (warning,) = [p["message"] for p in out["problems"] if p["field"] == "evidence[0].quote"]
    assert "parser lost this part of the document, not the quote" in warning, warning
    assert "sweep validate --quotes" in warning
    (keeps,) = out["parser_keeps"]
    assert keeps.startswith("nav: lost by ") and keeps.endswith("; kept by html:markitdown")
    assert set(keeps.split("; ")[0].removeprefix("nav: lost by ").split(", ")) == {
        "html:trafilatura", "pdf:pdfplumber", "pdf:pypdf"}


def test_per_question_rows_name_the_pdf_page() -> None:
    from sweep.chunking.chunkers import Chunk
    from sweep.data.corpus import Document, Section
    from sweep.data.golden import GoldenItem
    from sweep.evaluation.relevance import ResolvedItem
    from sweep.pipeline.run import add_pages
    from sweep.retrieval.ranking import Ranking

    text = "page one text\n\npage two text\n"
    doc = Document("book", "Book", text, (Section(0, len(text), 0, ()),), "book.pdf",
                   "pdfplumber", (0, 15))
    chunks = [Chunk("book#0", "book", 0, 0, 13, text[:13], text[:13], 3),
              Chunk("book#1", "book", 1, 15, 28, text[15:28], text[15:28], 3)]
    res = ResolvedItem(GoldenItem("q", "?"), (("book", 20, 23),), frozenset({"book"}),
                       "evidence")
    rows = [{"qid": "q", "relevant_ids": "book#1"}]
    add_pages(rows, [res], [Ranking((0, 1), (1.0, 0.5))], chunks, [doc])
    assert rows == [{"qid": "q", "relevant_ids": "book#1", "evidence_page": 2,
                     "top_chunk_page": 1, "first_relevant_page": 2}]
    # no relevant chunk in the ranking: no first_relevant_page (not a made-up one)
    rows = [{"qid": "q", "relevant_ids": "book#1"}]
    add_pages(rows, [res], [Ranking((0,), (1.0,))], chunks, [doc])
    assert "first_relevant_page" not in rows[0] and rows[0]["top_chunk_page"] == 1
