"""Hostile documents through every parser: each is refused by a bound or a check, in one line
naming the file, in bounded time and memory, or read correctly; never a traceback, a hang or
a silently wrong text. Every file is built here (tests/hostile.py), nothing is kept on disk.

Which of these failed before the bounds (issue 30): a Flate bomb under pdfplumber (inflated
whole: 907 MB of memory for 300 MB of spaces), a 10,000-page PDF (parsed for 43-68 s), a
malformed MediaBox under pypdf (a bare IndexError from the font-size pass), a DOCX with an
external entity under markitdown (a multi-line FileConversionException) and under python-docx
(the entity silently dropped), a DOCX zip bomb (read whole), a 62 MB HTML page (over two
minutes and 2.6 GB), 100,000 nested tags (reported as "no main content": libxml2 had cut the
page), a megabyte of spaces inside a tag (a regex that never returned), UTF-16 text files
("binary file"), a UTF-8 page declared iso-8859-1 (read as mojibake)."""

from __future__ import annotations

import logging
import time
import tracemalloc
from pathlib import Path

import pytest

import hostile
from pdfgen import make_pdf
from sweep.common.errors import SweepError
from sweep.data.corpus import load_corpus
from sweep.data.parsers import PARSERS, ParseLimits, parse_file
from sweep.data.parsers.limits import HTML_DEPTH_CEILING, pdf_inflated_bytes
from sweep.data.parsers.pdf import open_reader

PDF = sorted(PARSERS["pdf"])
HTML = sorted(PARSERS["html"])
DOCX = sorted(PARSERS["docx"])


def parse(data: bytes, fmt: str, name: str, limits: ParseLimits | None = None,
          source: str = "doc"):
    parsed, _ = parse_file(data, f"{source}.{fmt}", PARSERS[fmt].impl(name), limits=limits)
    return parsed


def refused(data: bytes, fmt: str, name: str, limits: ParseLimits | None = None) -> str:
    with pytest.raises(SweepError) as info:
        parse(data, fmt, name, limits)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"doc.{fmt}: "), message
    return message


# --------------------------------------------------------------------------- PDF


@pytest.mark.parametrize("name", PDF)
def test_truncated_pdf_is_one_line(name: str) -> None:
    assert "truncated or corrupt PDF" in refused(hostile.truncated_pdf(), "pdf", name)


@pytest.mark.parametrize("name", PDF)
def test_pdf_with_a_user_password_is_refused_and_an_empty_one_is_read(name: str) -> None:
    locked = make_pdf([[(12.0, False, "Secret text on page one")]], password="pw")
    assert "encrypted PDF (a password is needed" in refused(locked, "pdf", name)
    opened = make_pdf([[(12.0, False, "Secret text on page one")]], password="")
    assert parse(opened, "pdf", name).text == "Secret text on page one"


@pytest.mark.parametrize("name", PDF)
def test_ten_thousand_pages_are_refused_by_max_pages_before_parsing(name: str) -> None:
    data = hostile.many_pages_pdf(10_000)
    start = time.perf_counter()
    message = refused(data, "pdf", name)
    assert "a PDF of 10,000 pages, over corpus.max_pages=5000" in message
    assert time.perf_counter() - start < 10  # counted from the page tree; parsing took 43 s
    # under the bound, the same structure parses, every page in the page map
    parsed = parse(hostile.many_pages_pdf(3), "pdf", name, ParseLimits(max_pages=3))
    assert len(parsed.pages) == 3 and parsed.text.count("Hello from a hostile file") == 3


@pytest.mark.parametrize("name", PDF)
def test_flate_bomb_is_refused_by_max_inflated_mb_in_bounded_memory(name: str) -> None:
    data = hostile.pdf_bomb(40_000_000)  # 40 MB of spaces in a 39 KB file
    assert len(data) < 100_000
    tracemalloc.start()
    try:
        message = refused(data, "pdf", name, ParseLimits(max_inflated_mb=5))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "its streams inflate to more than 5 MB" in message
    assert "over corpus.max_inflated_mb=5" in message
    assert peak < 12_000_000  # inflated a MiB at a time and thrown away, never whole


def test_inflated_bytes_are_counted_exactly_under_the_budget() -> None:
    data = hostile.pdf_bomb(3_000_000)
    counted = pdf_inflated_bytes(open_reader(data, "doc.pdf"), 10**9)
    # the stream is the text line and the spaces; the other objects are not streams
    assert counted == len(hostile.TEXT_OPS) + 3_000_000


@pytest.mark.parametrize("name", PDF)
def test_a_small_bomb_under_the_bound_parses(name: str) -> None:
    parsed = parse(hostile.pdf_bomb(2_000_000), "pdf", name, ParseLimits(max_inflated_mb=5))
    assert parsed.text == "Hello from a hostile file"


@pytest.mark.parametrize("name", PDF)
@pytest.mark.parametrize("box", ["[0 0 a b]", "[0 0]", "5", "[0 0 612 /Foo]"])
def test_malformed_mediabox_is_refused_naming_the_page(name: str, box: str) -> None:
    # pdfplumber failed with a bare TypeError/IndexError; pypdf read no text from "[0 0 a b]"
    # ("no text layer") and let the font-size pass raise on the others
    data = hostile.pdf_with_stream(hostile.TEXT_OPS, flate=False, mediabox=box)
    message = refused(data, "pdf", name)
    assert "page 1 has a malformed MediaBox" in message and "four numbers" in message


def test_font_size_pass_failing_costs_the_headings_not_the_text(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from sweep.data.parsers import pdf

    def broken(data: bytes) -> list:
        raise IndexError("list index out of range")

    monkeypatch.setattr(pdf, "font_headings", broken)
    data = hostile.pdf_with_stream(hostile.TEXT_OPS, flate=False)
    with caplog.at_level(logging.WARNING):
        parsed = parse(data, "pdf", "pypdf")
    assert parsed.text == "Hello from a hostile file"
    assert any("font sizes unreadable (IndexError" in r.getMessage() for r in caplog.records)


# --------------------------------------------------------------------------- Word


@pytest.mark.parametrize("name", DOCX)
def test_docx_external_entity_is_refused_and_the_file_never_read(name: str,
                                                                  tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n")
    message = refused(hostile.docx_xxe(str(secret)), "docx", name)
    assert "word/document.xml declares a DTD" in message and "TOP-SECRET" not in message


@pytest.mark.parametrize("name", DOCX)
def test_docx_zip_bomb_is_refused_from_its_declared_sizes(name: str) -> None:
    data = hostile.docx_bomb(30_000_000)
    assert len(data) < 100_000
    start = time.perf_counter()
    message = refused(data, "docx", name, ParseLimits(max_inflated_mb=5))
    assert "zip members inflate to 30 MB" in message and "max_inflated_mb=5" in message
    assert time.perf_counter() - start < 1  # nothing inflated


@pytest.mark.parametrize("name", DOCX)
def test_text_named_docx_and_a_broken_zip(name: str) -> None:
    assert "named .docx but its content is plain text" in refused(
        b"just some text\n", "docx", name)
    good = hostile.docx_bytes(hostile.docx_paragraphs_xml(["One paragraph."]))
    assert parse(good, "docx", name).text == "One paragraph.\n"
    assert "truncated or corrupt Word document" in refused(good[: len(good) // 2], "docx",
                                                           name)


# --------------------------------------------------------------------------- HTML


@pytest.mark.parametrize("name", HTML)
def test_fifty_megabytes_on_one_line_is_refused_by_max_html_chars(name: str) -> None:
    body = "<p>word alpha beta gamma delta.</p>" * 1_430_000  # 50 MB, no line break
    data = hostile.html_page(body).encode()
    assert len(data) > 50_000_000 and b"\n" not in data
    start = time.perf_counter()
    message = refused(data, "html", name)
    assert f"an HTML page of {len(data):,} characters, over corpus.max_html_chars" in message
    assert time.perf_counter() - start < 5  # decoded and counted; the parsers never see it


@pytest.mark.parametrize("name", HTML)
@pytest.mark.parametrize("depth", [100_000, 300])
def test_deep_nesting_is_refused_by_max_html_depth(name: str, depth: int) -> None:
    page = hostile.html_page("<div>" * depth + "deep text" + "</div>" * depth)
    message = refused(page.encode(), "html", name)
    assert "elements nested 256+ deep (libxml2 drops the text from 255 on)" in message


@pytest.mark.parametrize("name", HTML)
def test_nesting_under_the_bound_keeps_the_deep_text(name: str) -> None:
    page = hostile.html_page("<div>" * 150 + "<p>deep text here</p>" + "</div>" * 150
                             + "<p>after the nest</p>")
    text = parse(page.encode(), "html", name).text
    assert "deep text here" in text and "after the nest" in text
    assert "over corpus.max_html_depth=100" in refused(page.encode(), "html", name,
                                                       ParseLimits(max_html_depth=100))


def test_depth_bound_cannot_pass_libxml2s_ceiling() -> None:
    with pytest.raises(SweepError, match=f"between 1 and {HTML_DEPTH_CEILING}"):
        ParseLimits(max_html_depth=HTML_DEPTH_CEILING + 1).validate()
    with pytest.raises(SweepError, match="max_pages=-1 must be >= 0"):
        ParseLimits(max_pages=-1).validate()


@pytest.mark.parametrize("name", HTML)
@pytest.mark.parametrize("tag", ["<a{ws}href='x'>link</a>", "<p{ws}>inside</p>",
                                 "<span{ws}/>"])
def test_a_megabyte_of_whitespace_inside_a_tag(name: str, tag: str) -> None:
    page = hostile.html_page("<p>before</p>" + tag.format(ws=" " * 1_000_000)
                             + "<p>after text</p>")
    start = time.perf_counter()
    text = parse(page.encode(), "html", name).text
    assert "before" in text and "after text" in text
    assert time.perf_counter() - start < 10  # the self-closed-tag regex was quadratic


@pytest.mark.parametrize("name", HTML)
def test_wrong_meta_charset(name: str, caplog: pytest.LogCaptureFixture) -> None:
    page = hostile.html_page("<p>A naïve café in Zürich.</p>", charset="iso-8859-1")
    with caplog.at_level(logging.WARNING):
        text = parse(page.encode("utf-8"), "html", name).text  # UTF-8 bytes, latin-1 label
    assert "A naïve café in Zürich." in text and "Ã" not in text
    assert any("declares charset iso-8859-1 but is valid UTF-8" in r.getMessage()
               for r in caplog.records)
    # the label is right for cp1252 bytes: read as declared, as before
    assert "A naïve café in Zürich." in parse(page.encode("cp1252"), "html", name).text


@pytest.mark.parametrize("name", HTML)
@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_html_with_and_without_bom(name: str, codec: str) -> None:
    page = hostile.html_page("<p>A naïve café in Zürich.</p>")
    assert "A naïve café in Zürich." in parse(page.encode(codec), "html", name).text


# --------------------------------------------------------------------------- text files


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig"])
def test_utf16_and_bom_text_files_are_read(codec: str, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_bytes("# Café\n\nA naïve note.\n".encode(codec))
    (doc,) = load_corpus(tmp_path)
    assert doc.text == "# Café\n\nA naïve note.\n" and doc.title == "Café"


def test_latin1_text_file_is_an_error_naming_its_line(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_bytes("first line\nA na\xefve caf\xe9.\n".encode("latin-1"))
    with pytest.raises(SweepError, match=r"old.txt:2: not valid UTF-8 \(byte 0xef"):
        load_corpus(tmp_path)


def test_long_runs_of_spaces_in_markdown_headings_and_quotes(tmp_path: Path) -> None:
    from sweep.data.quotes import QuoteIndex

    text = ("# Title" + " " * 200_000 + "x ##\n\n" + " " * 200_000 + "body\n"
            + "|" + "-" * 200_000 + "x\n")
    (tmp_path / "wide.md").write_text(text)
    start = time.perf_counter()
    (doc,) = load_corpus(tmp_path)
    assert doc.sections[0].heading_path == ("Title" + " " * 200_000 + "x",)
    assert QuoteIndex({"d": doc.text}).find("no such words")[0] is None
    assert time.perf_counter() - start < 10  # two regexes were quadratic on the spaces
