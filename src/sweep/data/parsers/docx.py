"""Word (.docx): python-docx (styles read here) or markitdown (mammoth -> HTML -> markdown).

python-docx: the body in document order (``iter_inner_content``: paragraphs and tables
interleaved; ``Document.paragraphs`` skips tables). ``Title`` and ``Heading N`` styles become
markdown headings, list paragraphs (a ``List ...`` style, or numbering ``numPr`` on the
paragraph, which Word itself writes with "List Paragraph") become ``-`` / ``1.`` items, and
tables become markdown rows, the first row as the header.
"""

from __future__ import annotations

import io
import re
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.parsers.base import Parsed, converter_error, from_markdown

PYTHON_DOCX_SETTINGS: dict[str, Any] = {}
MARKITDOWN_DOCX_SETTINGS: dict[str, Any] = {}

_HEADING_STYLE = re.compile(r"heading\s*([1-9])$", re.IGNORECASE)


def _open(data: bytes, source: str) -> Any:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        return docx.Document(io.BytesIO(data))
    except PackageNotFoundError:
        # python-docx says "Package not found" for any unreadable zip: name the real fault.
        raise SweepError(f"{source}: truncated or corrupt Word document") from None
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0][:120]
        raise SweepError(f"{source}: truncated or corrupt Word document "
                         f"({type(exc).__name__}: {first})") from None


def _paragraph(p: Any, counters: dict[int, int]) -> str | None:
    text = " ".join(p.text.split())
    style = (p.style.name if p.style is not None else "") or ""
    if not text:
        return None
    if style.lower() == "title":
        return f"# {text}"
    match = _HEADING_STYLE.match(style.strip())
    if match:
        return "#" * min(int(match.group(1)), 6) + " " + text
    ppr = p._p.pPr
    numbered = ppr is not None and ppr.numPr is not None
    if style.lower().startswith("list") or numbered:
        level = 0
        if numbered and ppr.numPr.ilvl is not None and ppr.numPr.ilvl.val is not None:
            level = int(ppr.numPr.ilvl.val)
        indent = "  " * level
        if "number" in style.lower():
            counters[level] = counters.get(level, 0) + 1
            return f"{indent}{counters[level]}. {text}"
        return f"{indent}- {text}"
    counters.clear()
    return text


def _table(table: Any) -> str:
    rows = []
    for row in table.rows:
        rows.append([" ".join(c.text.split()).replace("|", "\\|") for c in row.cells])
    rows = [r for r in rows if any(r)]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    lines = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
    lines.insert(1, "|" + " --- |" * width)
    return "\n".join(lines)


def parse_python_docx(data: bytes, source: str) -> Parsed:
    from docx.table import Table

    document = _open(data, source)
    blocks: list[str] = []
    counters: dict[int, int] = {}
    list_run: list[str] = []
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            line = _table(item)
            counters.clear()
        else:
            line = _paragraph(item, counters)
        if line is None:
            continue
        if re.match(r"\s*(?:-|\d+\.) ", line) and not isinstance(item, Table):
            list_run.append(line)  # a list's items on consecutive lines
            continue
        if list_run:
            blocks.append("\n".join(list_run))
            list_run = []
        if line:
            blocks.append(line)
    if list_run:
        blocks.append("\n".join(list_run))
    title = ""
    try:
        title = " ".join((document.core_properties.title or "").split())
    except Exception:
        title = ""
    parsed = from_markdown("\n\n".join(blocks), source, "python-docx")
    return Parsed(parsed.text, parsed.sections, (), title)


def parse_markitdown_docx(data: bytes, source: str) -> Parsed:
    from markitdown import MarkItDown, StreamInfo

    _open(data, source)  # the same one-line error for a damaged file as python-docx
    info = StreamInfo(extension=".docx",
                      mimetype="application/vnd.openxmlformats-officedocument."
                               "wordprocessingml.document")
    try:
        result = MarkItDown().convert_stream(io.BytesIO(data), stream_info=info,
                                             **MARKITDOWN_DOCX_SETTINGS)
    except Exception as exc:
        raise converter_error(source, "markitdown", exc) from None
    return from_markdown(result.text_content or "", source, "markitdown")
