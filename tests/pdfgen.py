"""Small PDFs with a real text layer, written byte by byte for the parser tests (no PDF
library in the project writes text; pypdf adds the outline and the encryption)."""

from __future__ import annotations

from io import BytesIO

Line = tuple[float, bool, str]  # font size, bold, text


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def raw_pdf(pages: list[list[Line]]) -> bytes:
    """A PDF whose pages hold the given lines, top to bottom, in Helvetica (bold: -Bold)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    page_ids = [5 + 2 * i for i in range(n_pages)]
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                   b"/Encoding /WinAnsiEncoding >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold "
                   b"/Encoding /WinAnsiEncoding >>")
    for i, lines in enumerate(pages):
        ops, y = [], 750.0
        for size, bold, text in lines:
            y -= size * 1.6
            font = "F2" if bold else "F1"
            ops.append(f"BT /{font} {size:g} Tf 72 {y:.1f} Td ({_escape(text)}) Tj ET")
        stream = "\n".join(ops).encode("cp1252")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       f"/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> "
                       f"/Contents {page_ids[i] + 1} 0 R >>".encode())
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n"
                       + stream + b"\nendstream")
    out = BytesIO()
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


def make_pdf(pages: list[list[Line]], outline: list[tuple[int, int, str]] | None = None,
             password: str | None = None) -> bytes:
    """``outline``: (level 1.., page index, title) entries, in order."""
    from pypdf import PdfReader, PdfWriter

    data = raw_pdf(pages)
    if not outline and password is None:
        return data
    writer = PdfWriter(clone_from=PdfReader(BytesIO(data)))
    parents: dict[int, object] = {}
    for level, page, title in outline or []:
        parents[level] = writer.add_outline_item(title, page, parent=parents.get(level - 1))
    if password is not None:
        writer.encrypt(password, algorithm="AES-256")
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def blank_pdf(n_pages: int = 1) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(n_pages):
        writer.add_blank_page(612, 792)
    out = BytesIO()
    writer.write(out)
    return out.getvalue()
