"""HTML encodings by the WHATWG sniffing rules (issue 44).

Before: a page whose ``<meta charset>`` said UTF-16 but whose bytes were ASCII was decoded as
UTF-16 (CJK noise); a Latin-1 page with no declared charset was guessed as cp1250 ("naïve"
became "naďve"). Browsers read the first as UTF-8 and the second as windows-1252."""

from __future__ import annotations

import pytest

from sweep.data.corpus import load_corpus
from sweep.data.parsers.html import decode_html

TEXT = "A naïve café in Zürich – “quoted” €5."
BODY = f"<p>{TEXT}</p><p>Refunds within thirty days of delivery.</p>"


def page(meta: str = "") -> str:
    return (f"<!doctype html><html><head>{meta}<title>t</title></head><body><article>"
            f"<h1>Policy</h1>{BODY}</article></body></html>")


@pytest.mark.parametrize("label", ["utf-16", "UTF-16LE", "utf-16be", "unicode"])
@pytest.mark.parametrize("pad", ["", " "])  # an even length decoded as UTF-16 without error
def test_a_utf16_meta_on_ascii_compatible_bytes_is_read_as_utf8(label: str, pad: str) -> None:
    ascii_page = page(f'<meta charset="{label}">').replace(TEXT, "Plain words only.") + pad
    assert decode_html(ascii_page.encode("ascii"), "p.html") == ascii_page
    utf8_page = page(f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'
                     ) + pad
    assert decode_html(utf8_page.encode("utf-8"), "p.html") == utf8_page


def test_an_undeclared_latin1_page_is_windows_1252_not_a_guess() -> None:
    data = page().encode("cp1252")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # so the web default applies
    assert data.decode("cp1250") != page()  # what the guess gave: "naďve"
    assert decode_html(data, "p.html") == page()


def test_windows_1252_decodes_every_byte_as_browsers_do() -> None:
    # 0x81, 0x8D, 0x8F, 0x90, 0x9D are undefined in Python's cp1252: the standard maps them
    # to the C1 controls of the same number, so a page never fails to decode
    data = b"<p>caf\xe9 \x81\x8d\x8f\x90\x9d \x80</p>"
    assert decode_html(data, "p.html") == "<p>café \x81\x8d\x8f\x90\x9d €</p>"
    declared = b'<meta charset="iso-8859-1"><p>\x81 na\xefve</p>'
    assert decode_html(declared, "p.html") == '<meta charset="iso-8859-1"><p>\x81 naïve</p>'


def test_byte_order_marks_and_utf8_still_win() -> None:
    assert decode_html("\ufeff".encode() + page().encode(), "p.html") == page()
    assert decode_html(page('<meta charset="utf-16">').encode("utf-16"), "p.html") == \
        page('<meta charset="utf-16">')
    assert decode_html(page().encode("utf-8"), "p.html") == page()


def test_a_declared_charset_with_bad_bytes_is_read_as_declared_with_replacements(caplog
                                                                                ) -> None:
    plain = page('<meta charset="shift_jis">').replace(TEXT, "Plain words only.")
    text = decode_html(plain.encode("ascii") + b"\x82", "p.html")
    assert text == plain + "\ufffd"
    assert any("not valid shift_jis" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("parser", ["trafilatura", "markitdown"])
def test_through_the_corpus_loader(tmp_path, parser: str) -> None:
    (tmp_path / "latin.html").write_bytes(page().encode("cp1252"))
    utf16meta = page('<meta charset="utf-16">')
    (tmp_path / "utf16meta.html").write_bytes((utf16meta + " " * (len(utf16meta.encode()) % 2)
                                               ).encode("utf-8"))
    docs = load_corpus(tmp_path, parsers={"html": parser})
    for doc in docs:
        assert "naïve café in Zürich" in doc.text, (doc.source, doc.text)
