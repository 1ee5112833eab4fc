"""Hostile input files, built in memory for the tests (nothing is kept in the repository):
PDF bombs and broken PDFs, Word files with an external entity or a zip bomb, HTML that is
huge, deep or full of whitespace, and text in the encodings editors write."""

from __future__ import annotations

import io
import zipfile
import zlib

from pdfgen import raw_pdf


def deflate_zeros(n_bytes: int, fill: bytes = b" ") -> bytes:
    """``n_bytes`` of ``fill`` deflated, without holding them: what a bomb's stream holds."""
    comp = zlib.compressobj(9)
    block = fill * (1 << 20)
    parts = []
    left = n_bytes
    while left > 0:
        take = min(left, len(block))
        parts.append(comp.compress(block[:take]))
        left -= take
    parts.append(comp.flush())
    return b"".join(parts)


def pdf_with_stream(stream: bytes, *, flate: bool, mediabox: str = "[0 0 612 792]",
                    n_pages: int = 1) -> bytes:
    """A PDF whose pages all show ``stream`` (one shared content object), FlateDecode'd when
    ``flate``; ``mediabox`` is written as given (a malformed one included)."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{5 + i} 0 R" for i in range(n_pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                   b"/Encoding /WinAnsiEncoding >>")
    filt = b" /Filter /FlateDecode" if flate else b""
    objects.append(b"<< /Length " + str(len(stream)).encode() + filt + b" >>\nstream\n"
                   + stream + b"\nendstream")
    for _ in range(n_pages):
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox {mediabox} "
                       f"/Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>".encode())
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n"
              "%%EOF\n".encode())
    return out.getvalue()


TEXT_OPS = b"BT /F1 12 Tf 72 700 Td (Hello from a hostile file) Tj ET\n"


def pdf_bomb(inflated_bytes: int) -> bytes:
    """One page whose content stream is a line of text and then ``inflated_bytes`` spaces."""
    comp = zlib.compressobj(9)
    parts = [comp.compress(TEXT_OPS)]
    block = b" " * (1 << 20)
    left = inflated_bytes
    while left > 0:
        take = min(left, len(block))
        parts.append(comp.compress(block[:take]))
        left -= take
    parts.append(comp.flush())
    return pdf_with_stream(b"".join(parts), flate=True)


def many_pages_pdf(n_pages: int) -> bytes:
    """``n_pages`` pages sharing one small content stream: a 10,000-page file of ~1 MB."""
    return pdf_with_stream(TEXT_OPS, flate=False, n_pages=n_pages)


def truncated_pdf() -> bytes:
    data = raw_pdf([[(12.0, False, "A page that will be cut in half.")]])
    return data[: len(data) // 2]


_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/'
    'vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/'
    'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
    '</Types>')
_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
    'relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
    'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>'
    '</Relationships>')


def docx_bytes(document_xml: str | list[bytes]) -> bytes:
    """A minimal Word file around ``document_xml`` (python-docx and mammoth open it); a list
    of byte blocks is streamed into the member, so a bomb is never held whole."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", _CONTENT_TYPES)
        z.writestr("_rels/.rels", _RELS)
        if isinstance(document_xml, str):
            z.writestr("word/document.xml", document_xml)
        else:
            with z.open("word/document.xml", "w", force_zip64=True) as fh:
                for block in document_xml:
                    fh.write(block)
    return out.getvalue()


W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def docx_paragraphs_xml(paragraphs: list[str], doctype: str = "") -> str:
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{doctype}'
            f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>')


def docx_xxe(target: str) -> bytes:
    """A Word file whose text is an external entity naming ``target`` (a local file)."""
    doctype = f'<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://{target}">]>'
    return docx_bytes(docx_paragraphs_xml(["Before the entity.", "&xxe;", "After it."],
                                          doctype))


def docx_bomb(inflated_bytes: int) -> bytes:
    """A Word file whose document.xml inflates to ``inflated_bytes`` (a run of one letter)."""
    head = docx_paragraphs_xml(["Start."]).replace("</w:body>", "<w:p><w:r><w:t>")
    tail = "</w:t></w:r></w:p></w:body></w:document>"

    def blocks():
        yield head.encode()
        block = b"a" * (1 << 20)
        for start in range(0, inflated_bytes, len(block)):
            yield block[: min(len(block), inflated_bytes - start)]
        yield tail.encode()

    return docx_bytes(list(blocks()) if inflated_bytes < (64 << 20) else _Lazy(blocks))


class _Lazy(list):
    """An iterable the zip writer walks once, so gigabytes are never in memory."""

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def __iter__(self):
        return iter(self.make())


def html_page(body: str, charset: str = "utf-8") -> str:
    return (f'<!doctype html><html><head><meta charset="{charset}"><title>t</title></head>'
            f"<body><main>{body}</main></body></html>")
