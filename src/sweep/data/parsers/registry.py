"""The parser axes (``corpus.pdf_parser``, ``corpus.html_parser``, ``corpus.docx_parser``):
file format -> the registry of its parsers, each entry's implementation a `Parser`, with the
default per format.

A new parser is one function in its format's module and one entry here; the config schema's
enum of its format is built from the registry.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from sweep.common.registry import Entry, Registry
from sweep.data.parsers import base, docx, html, pdf
from sweep.data.parsers.base import Parser
from sweep.data.parsers.limits import ParseLimits

# Extension (lowercase) -> format. Any other extension is read as markdown / text.
FORMATS: dict[str, str] = {".pdf": "pdf", ".html": "html", ".htm": "html", ".docx": "docx"}

PARSERS: dict[str, Registry[Parser]] = {
    "pdf": Registry("corpus.pdf_parser", [
        # pypdf is used by both for encryption and the outline; pdfplumber also for font sizes.
        Entry("pdfplumber", Parser("pdfplumber", "pdf", pdf.parse_pdfplumber,
                                   ("pdfplumber", "pdfminer.six", "pypdf"),
                                   pdf.PDFPLUMBER_SETTINGS)),
        Entry("pypdf", Parser("pypdf", "pdf", pdf.parse_pypdf, ("pypdf", "pdfplumber"),
                              pdf.PYPDF_SETTINGS)),
    ]),
    "html": Registry("corpus.html_parser", [
        Entry("trafilatura", Parser("trafilatura", "html", html.parse_trafilatura,
                                    ("trafilatura", "lxml", "beautifulsoup4"),
                                    html.TRAFILATURA_SETTINGS)),
        Entry("markitdown", Parser("markitdown", "html", html.parse_markitdown_html,
                                   ("markitdown", "markdownify", "beautifulsoup4", "lxml"),
                                   html.MARKITDOWN_HTML_SETTINGS)),
    ]),
    "docx": Registry("corpus.docx_parser", [
        Entry("python_docx", Parser("python_docx", "docx", docx.parse_python_docx,
                                    ("python-docx",), docx.PYTHON_DOCX_SETTINGS)),
        Entry("markitdown", Parser("markitdown", "docx", docx.parse_markitdown_docx,
                                   ("markitdown", "mammoth", "markdownify", "python-docx"),
                                   docx.MARKITDOWN_DOCX_SETTINGS)),
    ]),
}

# The parser that keeps the most evidence on the real data (docs/results/parsers.md): pdfplumber at x_tolerance=1, trafilatura's XML rendered here, python-docx.
DEFAULT_PARSERS: dict[str, str] = {"pdf": "pdfplumber", "html": "trafilatura",
                                   "docx": "python_docx"}


def get_parser(fmt: str, name: str | None) -> Parser:
    return PARSERS[fmt].impl(name or DEFAULT_PARSERS[fmt])


def _library_version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "absent"


@cache
def _code_digest(module_file: str) -> str:
    """Our own rendering code is part of what a parser is: a change to it must not be served
    stale results from the cache."""
    h = hashlib.sha256()
    for path in (module_file, inspect.getsourcefile(base) or ""):
        h.update(Path(path).read_bytes())
    return h.hexdigest()[:12]


def parser_versions(parser: Parser) -> dict[str, str]:
    return {dist: _library_version(dist) for dist in parser.libraries}


def cache_identity(parser: Parser) -> dict[str, object]:
    """Everything but the file's bytes that decides a parser's output."""
    return {"format": parser.fmt, "parser": parser.name, "settings": parser.settings,
            "versions": parser_versions(parser),
            "code": _code_digest(inspect.getsourcefile(parser.fn) or "")}


def cache_key(content_sha256: str, parser: Parser, limits: ParseLimits | None = None) -> str:
    """The parse cache's key; the bounds are in it, so a file parsed under looser bounds is
    checked again, not served, under tighter ones."""
    payload = json.dumps({"content": content_sha256, **cache_identity(parser),
                          "limits": dataclasses.asdict(limits or ParseLimits())},
                         sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()
