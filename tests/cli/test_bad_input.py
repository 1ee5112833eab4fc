"""Bad input never crashes the tool: every case below runs the real CLI in a subprocess and
checks the exit code, the key words of the message (file, line, field, key) and that no
Python traceback reaches the user.

Each case builds a tiny workspace in ``tmp_path``:

    corpus/returns.md, corpus/shipping.md     two small markdown documents
    golden.jsonl                              two good items (evidence quotes + a chunk id)
    golden.reference.yaml                     heading / 256 / 0 / minilm

then a ``setup`` function breaks one thing, and the command runs with ``{corpus}``,
``{golden}``, ``{ref}`` and ``{tmp}`` replaced by the workspace paths. Runs always get
``tracking=off`` (unless the case sets ``tracking=...``) and a ``hydra.run.dir`` /
``hydra.sweep.dir`` inside ``tmp_path``, so nothing is written into the repository.

Almost every case fails before the embedding model loads; the "works" cases (BOM, CRLF, a
large file, ``on_error=skip``) use ``sweep validate``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import run_cli
from pdfgen import blank_pdf, make_pdf

# --------------------------------------------------------------------------- workspace

RETURNS_MD = (
    "# Returns\n\n"
    "You can return items within 30 days of delivery for a full refund.\n\n"
    "## Fees\n\n"
    "A restocking fee of 15% applies to opened items.\n"
)
SHIPPING_MD = "# Shipping\n\nOrders ship within 2 business days from our warehouse.\n"
REFERENCE_YAML = "chunk: {boundary: heading, size: 256, overlap: 0, tokenizer: minilm}\n"

Q1 = {
    "qid": "q1",
    "question": "how long do i have to return an item",
    "relevant_chunk_ids": ["returns#0"],
    "answer_must_mention": ["30 days"],
    "evidence": [{"path": "returns.md",
                  "quote": "You can return items within 30 days of delivery"}],
}
Q2 = {
    "qid": "q2",
    "question": "when will my order ship",
    "evidence": [{"doc_id": "shipping", "quote": "Orders ship within 2 business days"}],
}


@dataclass
class Workspace:
    tmp: Path

    @property
    def corpus(self) -> Path:
        return self.tmp / "corpus"

    @property
    def golden(self) -> Path:
        return self.tmp / "golden.jsonl"

    @property
    def ref(self) -> Path:
        return self.tmp / "golden.reference.yaml"

    def build(self) -> None:
        self.corpus.mkdir()
        (self.corpus / "returns.md").write_text(RETURNS_MD, encoding="utf-8")
        (self.corpus / "shipping.md").write_text(SHIPPING_MD, encoding="utf-8")
        self.write_golden(Q1, Q2)
        self.ref.write_text(REFERENCE_YAML, encoding="utf-8")

    def write_golden(self, *lines: dict | str) -> None:
        """One line per argument: dicts are dumped as JSON, strings written as they are."""
        text = "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines)
        self.golden.write_text(text, encoding="utf-8")

    def add_doc(self, name: str, content: str | bytes) -> Path:
        path = self.corpus / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        path.write_bytes(content)
        return path

    def sub(self, s: str) -> str:
        for key, value in (("{corpus}", self.corpus), ("{golden}", self.golden),
                           ("{ref}", self.ref), ("{tmp}", self.tmp)):
            s = s.replace(key, str(value))
        return s


def with_item(base: dict, **changes: object) -> dict:
    """A copy of ``base`` with keys changed; a value of ``None`` removes the key."""
    out = {k: v for k, v in base.items() if k not in changes}
    out.update({k: v for k, v in changes.items() if v is not None})
    return out


# --------------------------------------------------------------------------- setups


def non_utf8_doc(ws: Workspace) -> None:
    ws.add_doc("bad.md", b"# Bad\n\nA fine first paragraph.\n\xff\xfe is not UTF-8\n")


def binary_doc(ws: Workspace) -> None:
    ws.add_doc("blob.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")


def empty_doc(ws: Workspace) -> None:
    ws.add_doc("empty.md", b"")


def blank_doc(ws: Workspace) -> None:
    ws.add_doc("blank.txt", b"  \n\n\t \n")


BOM_QUOTE = "Kestrel warranty covers two years"


def bom_doc(ws: Workspace) -> None:
    ws.add_doc("bom.md", "\ufeffKestrel warranty covers two years of normal use.\n\n"
                         "Accidental damage is not covered.\n")
    # A quote right after the BOM, and a span at offset 0: the BOM must not shift offsets.
    ws.write_golden(Q1, Q2, {
        "qid": "q3", "question": "how long is the warranty",
        "evidence": [{"path": "bom.md", "quote": BOM_QUOTE},
                     {"doc_id": "bom", "start": 0, "end": 7, "quote": "Kestrel"}],
    })


def crlf_doc(ws: Workspace) -> None:
    ws.add_doc("care.md", b"# Care\r\n\r\nWipe the lens with a dry cloth.\r\n"
                          b"Never use solvents on the coating.\r\n")
    # The quote crosses the line break as "\n": found exactly (no whitespace fallback).
    ws.write_golden(Q1, Q2, {
        "qid": "q3", "question": "how do i clean the lens",
        "evidence": [{"path": "care.md",
                      "quote": "Wipe the lens with a dry cloth.\nNever use solvents"}],
    })


def large_doc(ws: Workspace) -> None:
    parts = []
    n = 0
    size = 0
    while size < 3_000_000:
        block = (f"## Part {n}\n\nWidget model W{n} ships with a manual and a two-year "
                 f"warranty. Register widget W{n} online within 30 days to extend it.\n\n")
        parts.append(block)
        size += len(block)
        n += 1
    parts.append("## Last part\n\nThe final sentence of the very large manual is here.\n")
    ws.add_doc("manual.md", "# Manual\n\n" + "".join(parts))
    ws.write_golden(Q1, Q2, {
        "qid": "q3", "question": "what is at the end of the manual",
        "evidence": [{"path": "manual.md",
                      "quote": "The final sentence of the very large manual is here."}],
    })


def non_utf8_file_name(ws: Workspace) -> None:
    import os

    name = os.fsdecode(b"caf\xe9-menu.md")  # not UTF-8 on disk: decoded with surrogateescape
    (ws.corpus / name).write_bytes(b"# Menu\n\nEspresso and cake.\n")


def not_a_folder_of_docs(ws: Workspace) -> None:
    folder = ws.tmp / "pdfs"
    folder.mkdir()
    (folder / "table.csv").write_text("a,b\n1,2\n")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")


PDF_PAGES = [[(14, True, "1 Links"), (10, False, "There are two methods of associating a file.")]]


def encrypted_pdf(ws: Workspace) -> None:
    ws.add_doc("secret.pdf", make_pdf(PDF_PAGES, password="s3cret"))


def scanned_pdf(ws: Workspace) -> None:
    ws.add_doc("scan.pdf", blank_pdf(2))


def truncated_pdf(ws: Workspace) -> None:
    data = make_pdf(PDF_PAGES * 3)
    ws.add_doc("cut.pdf", data[: len(data) // 2])


def truncated_docx(ws: Workspace) -> None:
    import docx

    path = ws.tmp / "whole.docx"
    d = docx.Document()
    d.add_heading("Title", level=1)
    d.add_paragraph("Some text in a Word file.")
    d.save(path)
    data = path.read_bytes()
    ws.add_doc("cut.docx", data[: len(data) // 2])


def huge_pdf(ws: Workspace) -> None:
    """A 200 MB PDF, sparse on disk (a PDF header, then a hole): the size limit must refuse
    it from its size alone, so the test costs no disk and no parse."""
    path = ws.add_doc("scans/big.pdf", make_pdf(PDF_PAGES))
    with path.open("r+b") as f:
        f.truncate(200_000_000)


def html_named_pdf(ws: Workspace) -> None:
    ws.add_doc("fake.pdf", "<!DOCTYPE html><html><body><p>Not a PDF.</p></body></html>")


def html_named_docx(ws: Workspace) -> None:
    ws.add_doc("fake.docx", "<html><body><p>Not a Word file.</p></body></html>")


def pdf_named_md(ws: Workspace) -> None:
    ws.add_doc("manual.md", make_pdf(PDF_PAGES))


LATIN1_BODY = ("Herr M\u00fcller bestellt f\u00fcr \u00a35 eine \u201cGr\u00f6\u00dfe\u201d "
               "cr\u00e8me br\u00fbl\u00e9e, \u00e0 la fran\u00e7aise. ")


def latin1_html(ws: Workspace) -> None:
    page = ('<html><head><meta http-equiv="Content-Type" content="text/html; '
            'charset=ISO-8859-1"><title>Men\u00fc</title></head><body><article><h1>Men\u00fc</h1>'
            f"<p>{LATIN1_BODY}</p><p>{'A plain filler sentence for the extractor. ' * 6}</p>"
            "</article></body></html>")
    ws.add_doc("menu.html", page.encode("cp1252"))
    ws.write_golden(Q1, Q2, {"qid": "q3", "question": "what does Herr M\u00fcller order",
                             "evidence": [{"path": "menu.html",
                                           "quote": LATIN1_BODY.strip()}]})


def quote_lost_by_pdf_parser(ws: Workspace) -> None:
    ws.add_doc("book.pdf", make_pdf(PDF_PAGES))
    ws.write_golden(Q1, Q2, {"qid": "q3", "question": "how many methods",
                             "evidence": [{"path": "book.pdf",
                                           "quote": "a sentence the PDF does not hold"}]})


def duplicate_doc_id(ws: Workspace) -> None:
    ws.add_doc("Returns.md", "# Returns (old)\n\nAn older copy.\n")  # slug: returns


def a_regular_file(ws: Workspace) -> None:
    (ws.tmp / "afile").write_text("I am a file, not a folder\n")


def not_a_tokenizer(ws: Workspace) -> None:
    (ws.tmp / "not-a-tokenizer.json").write_text('{"hello": 1}\n')


def golden(*lines: dict | str) -> Callable[[Workspace], None]:
    return lambda ws: ws.write_golden(*lines)


def golden_bytes(data: bytes) -> Callable[[Workspace], None]:
    return lambda ws: ws.golden.write_bytes(data)


def reference(text: str) -> Callable[[Workspace], None]:
    return lambda ws: ws.ref.write_text(text, encoding="utf-8")


def no_reference(*lines: dict | str) -> Callable[[Workspace], None]:
    def setup(ws: Workspace) -> None:
        ws.ref.unlink()
        ws.write_golden(*lines)
    return setup


def reference_is_folder(ws: Workspace) -> None:
    ws.ref.unlink()
    ws.ref.mkdir()


def reference_with_bad_tokenizer(ws: Workspace) -> None:
    not_a_tokenizer(ws)
    ws.ref.write_text("chunk: {boundary: heading, size: 256, overlap: 0, "
                      f"tokenizer: {ws.tmp / 'not-a-tokenizer.json'}}}\n")


def both(*setups: Callable[[Workspace], None]) -> Callable[[Workspace], None]:
    def setup(ws: Workspace) -> None:
        for s in setups:
            s(ws)
    return setup


SQUAD = {"data": [{"title": "Sky", "paragraphs": [{
    "context": "The sky is blue on a clear day.",
    "qas": [{"id": "s1", "question": "What colour is the sky?",
             "answers": [{"text": "blue", "answer_start": 11}]}]}]}]}


def squad_file(text: str) -> Callable[[Workspace], None]:
    return lambda ws: (ws.tmp / "squad.json").write_text(text, encoding="utf-8")


def squad_and_full_out(ws: Workspace) -> None:
    (ws.tmp / "squad.json").write_text(json.dumps(SQUAD), encoding="utf-8")
    (ws.tmp / "out").mkdir()
    (ws.tmp / "out" / "keep.txt").write_text("something the user wrote\n")


DEEP_JSON = "[" * 100_000 + "]" * 100_000


# --------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    id: str
    setup: Callable[[Workspace], None] | None
    command: str  # validate | run | multirun | import
    args: tuple[str, ...]
    code: int
    # All of these on ONE line of stdout+stderr (the message), after placeholder substitution;
    # a `re.Pattern` is searched, a `str` is a substring.
    line: tuple[str | re.Pattern[str], ...]
    also: tuple[str, ...] = ()  # anywhere in the output
    absent: tuple[str, ...] = ()  # nowhere in the output


def C(id: str, setup: Callable[[Workspace], None] | None, command: str, args: Sequence[str],
      code: int, line: Sequence[str | re.Pattern[str]], also: Sequence[str] = (),
      absent: Sequence[str] = ()) -> Case:
    return Case(id, setup, command, tuple(args), code, tuple(line), tuple(also), tuple(absent))


def sources_and_abstentions(ws: Workspace) -> None:
    ws.write_golden(with_item(Q1, source="log", source_ref="support.csv:3"), Q2)
    (ws.tmp / "abstentions.jsonl").write_text(
        '{"qid": "abstain-1", "question": "do you sell cars", "source": "log"}\n')


V, R, M, IMP = "validate", "run", "multirun", "import"

CASES = [
    # ---------------------------------------------------------------- corpus
    C("corpus-non-utf8", non_utf8_doc, V, [], 1,
      ["error:", "{corpus}/bad.md:4", "not valid UTF-8", "corpus.on_error=skip"]),
    C("corpus-non-utf8-skip", non_utf8_doc, V, ["corpus.on_error=skip"], 0,
      ["skipped", "{corpus}/bad.md:4", "not valid UTF-8"],
      also=["OK:", "against 2 documents"]),
    C("corpus-non-utf8-run", non_utf8_doc, R, [], 1,
      ["error:", "{corpus}/bad.md:4", "not valid UTF-8"]),
    C("corpus-binary-nul", binary_doc, V, [], 1,
      ["error:", "{corpus}/blob.md", "binary file", "NUL"]),
    C("corpus-binary-skip", binary_doc, V, ["corpus.on_error=skip"], 0,
      ["skipped", "{corpus}/blob.md", "binary"], also=["OK:", "against 2 documents"]),
    C("corpus-empty-file", empty_doc, V, [], 0,
      ["skipped", "{corpus}/empty.md", "empty file"], also=["OK:", "against 2 documents"]),
    C("corpus-whitespace-only-file", blank_doc, V, [], 0,
      ["skipped", "{corpus}/blank.txt", "empty file"], also=["OK:", "against 2 documents"]),
    C("corpus-bom-works", bom_doc, V, ["--strict"], 0,
      ["OK:", "3 items", "against 3 documents", "0 errors, 0 warnings"]),
    C("corpus-crlf-works", crlf_doc, V, ["--strict"], 0,
      ["OK:", "3 items", "against 3 documents", "0 errors, 0 warnings"],
      absent=["whitespace normalised"]),
    C("corpus-large-file-works", large_doc, V, ["--strict"], 0,
      ["OK:", "3 items", "against 3 documents", "0 errors, 0 warnings"]),
    C("corpus-non-utf8-file-name", non_utf8_file_name, V, ["--strict"], 0,
      ["OK:", "2 items", "against 3 documents"]),
    C("corpus-missing-folder", None, V, ["corpus.path={tmp}/nope"], 1,
      ["error:", "corpus folder not found", "{tmp}/nope", "corpus.path"]),
    C("corpus-missing-folder-run", None, R, ["corpus.path={tmp}/nope"], 1,
      ["error:", "corpus folder not found", "{tmp}/nope", "corpus.path"]),
    C("corpus-path-is-a-file", None, V, ["corpus.path={golden}"], 1,
      ["error:", "corpus.path", "not a folder", "{golden}"]),
    C("corpus-no-markdown-files", not_a_folder_of_docs, V, ["corpus.path={tmp}/pdfs"], 1,
      ["error:", "{tmp}/pdfs", "no readable", ".md", ".pdf"]),

    # ---------------------------------------------------------------- corpus: PDF / HTML / DOCX
    C("pdf-encrypted", encrypted_pdf, V, [], 1,
      ["error:", "{corpus}/secret.pdf", "encrypted PDF", "password"]),
    C("pdf-encrypted-pypdf", encrypted_pdf, V, ["corpus.pdf_parser=pypdf"], 1,
      ["error:", "{corpus}/secret.pdf", "encrypted PDF"]),
    C("pdf-encrypted-skip", encrypted_pdf, V, ["corpus.on_error=skip"], 0,
      ["skipped", "{corpus}/secret.pdf", "encrypted PDF"], also=["OK:", "against 2 documents"]),
    C("pdf-no-text-layer", scanned_pdf, V, [], 1,
      ["error:", "{corpus}/scan.pdf", "no text layer; OCR is not supported"]),
    C("pdf-no-text-layer-run", scanned_pdf, R, ["corpus.pdf_parser=pypdf"], 1,
      ["error:", "{corpus}/scan.pdf", "no text layer; OCR is not supported"]),
    C("pdf-truncated", truncated_pdf, V, [], 1,
      ["error:", "{corpus}/cut.pdf", "truncated or corrupt PDF"]),
    C("pdf-truncated-pypdf", truncated_pdf, V, ["corpus.pdf_parser=pypdf"], 1,
      ["error:", "{corpus}/cut.pdf", "truncated or corrupt PDF"]),
    C("pdf-truncated-skip", truncated_pdf, V, ["corpus.on_error=skip"], 0,
      ["skipped", "{corpus}/cut.pdf", "truncated"], also=["OK:", "against 2 documents"]),
    C("pdf-over-size-limit", huge_pdf, V, [], 1,
      ["error:", "{corpus}/scans/big.pdf", "200 MB (200,000,000 bytes)",
       "corpus.max_file_mb=100"]),
    C("pdf-over-size-limit-run", huge_pdf, R, [], 1,
      ["error:", "{corpus}/scans/big.pdf", "200 MB", "corpus.max_file_mb=100"]),
    C("pdf-over-size-limit-custom", huge_pdf, V, ["corpus.max_file_mb=150"], 1,
      ["error:", "{corpus}/scans/big.pdf", "corpus.max_file_mb=150"]),
    C("pdf-over-size-limit-skip", huge_pdf, V, ["corpus.on_error=skip"], 0,
      ["skipped", "{corpus}/scans/big.pdf", "200 MB", "corpus.max_file_mb=100"],
      also=["OK:", "against 2 documents"]),
    C("corpus-max-file-mb-negative", None, V, ["corpus.max_file_mb=-1"], 1,
      ["corpus.max_file_mb=-1", ">= 0"]),
    C("docx-truncated", truncated_docx, V, [], 1,
      ["error:", "{corpus}/cut.docx", "truncated or corrupt Word document"]),
    C("docx-truncated-markitdown", truncated_docx, V, ["corpus.docx_parser=markitdown"], 1,
      ["error:", "{corpus}/cut.docx", "truncated or corrupt Word document"]),
    C("extension-lies-html-as-pdf", html_named_pdf, V, [], 1,
      ["error:", "{corpus}/fake.pdf", "named .pdf but its content is HTML"]),
    C("extension-lies-html-as-docx", html_named_docx, V, ["corpus.docx_parser=markitdown"], 1,
      ["error:", "{corpus}/fake.docx", "named .docx but its content is HTML"]),
    C("extension-lies-pdf-as-md", pdf_named_md, V, [], 1,
      ["error:", "{corpus}/manual.md", "named .md but its content is a PDF"]),
    C("html-latin1-meta-charset", latin1_html, V, ["--strict"], 0,
      ["OK:", "3 items", "against 3 documents", "0 errors, 0 warnings"]),
    C("html-latin1-meta-charset-markitdown", latin1_html, V,
      ["--strict", "corpus.html_parser=markitdown"], 0, ["OK:", "3 items", "0 errors"]),
    C("pdf-quote-not-in-parser-output", quote_lost_by_pdf_parser, V, [], 0,
      ["{golden}:3: evidence[0].quote:", "not found in pdfplumber output"]),
    C("unknown-pdf-parser", None, V, ["corpus.pdf_parser=tika"], 1,
      ["tika", "pdf_parser"]),
    C("corpus-duplicate-doc-id", duplicate_doc_id, V, [], 1,
      ["error:", "{corpus}/returns.md", "doc_id 'returns'", "Returns.md", "rename"]),

    # ---------------------------------------------------------------- golden: parsing
    C("golden-malformed-json", golden(Q1, '{"qid": "q2", "question": "x",, }'), V, [], 1,
      ["{golden}:2:", "malformed JSON", "column"], also=["FAILED"]),
    C("golden-malformed-json-run", golden(Q1, '{"qid": "q2", "question": "x",, }'), R, [], 1,
      ["error:", "{golden}:2:", "malformed JSON"]),
    C("golden-line-is-array", golden('["q1", "how long"]', Q2), V, [], 1,
      ["{golden}:1:", "must be a JSON object", "list"]),
    C("golden-deeply-nested-json", golden(Q1, DEEP_JSON), V, [], 1,
      ["{golden}:2:", "JSON"]),
    C("golden-sources-counted", sources_and_abstentions, V, ["--strict"], 0,
      ["sources: log 1, unspecified 1; 1 abstentions in {tmp}/abstentions.jsonl"],
      also=["OK:"]),
    C("golden-bad-abstention", lambda ws: (ws.tmp / "abstentions.jsonl").write_text(
        '{"qid": "abstain-1"}\n'), V, [], 1, ["{tmp}/abstentions.jsonl:1: question: missing"]),
    C("golden-unknown-source", golden(Q1, with_item(Q2, source="tickets")), V, [], 1,
      ["{golden}:2", "source", "'tickets' is not one of log, trace, owner, synthetic"]),
    C("golden-missing-qid", golden(with_item(Q1, qid=None), Q2), V, [], 1,
      ["{golden}:1: qid:", "missing"]),
    C("golden-qid-wrong-type", golden(with_item(Q1, qid=["q1"]), Q2), V, [], 1,
      ["{golden}:1: qid:", "['q1']"]),
    C("golden-missing-question", golden(Q1, with_item(Q2, question=None)), V, [], 1,
      ["{golden}:2: question:", "missing"]),
    C("golden-chunk-ids-not-a-list", golden(with_item(Q1, relevant_chunk_ids="returns#0"), Q2),
      V, [], 1, ["{golden}:1: relevant_chunk_ids:", "must be a list", "str"]),
    C("golden-chunk-id-not-a-string", golden(with_item(Q1, relevant_chunk_ids=[0]), Q2),
      V, [], 1, ["{golden}:1: relevant_chunk_ids[0]:", "non-empty string"]),
    C("golden-evidence-negative-start",
      golden(Q1, with_item(Q2, evidence=[{"doc_id": "shipping", "start": -5, "end": 10}])),
      V, [], 1, ["{golden}:2: evidence[0].start:", "non-negative integer", "-5"]),
    C("golden-evidence-end-not-after-start",
      golden(Q1, with_item(Q2, evidence=[{"doc_id": "shipping", "start": 10, "end": 10}])),
      V, [], 1, ["{golden}:2: evidence[0].end:", "greater than start (10)"]),
    C("golden-evidence-misspelt-field",
      golden(Q1, with_item(Q2, evidence=[{"doc_id": "shipping", "qoute": "Orders ship"}])),
      V, [], 1, ["{golden}:2: evidence[0].qoute:", "unknown field"]),
    C("golden-duplicate-qid", golden(Q1, with_item(Q2, qid="q1")), V, [], 1,
      ["{golden}:2: qid:", "duplicate qid 'q1'", "first on line 1"]),
    C("golden-same-question-warns",
      golden(Q1, with_item(Q2, question="How long do I have to  return an item")), V, [], 0,
      ["{golden}:2: question:", "same question as line 1", "[warning]"], also=["OK:"]),
    C("golden-same-question-strict",
      golden(Q1, with_item(Q2, question="How long do I have to  return an item")),
      V, ["--strict"], 1,
      ["{golden}:2: question:", "same question as line 1"], also=["FAILED"]),
    C("golden-no-evidence-at-all",
      golden(Q1, Q2, {"qid": "q3", "question": "is there a fee", "relevant_chunk_ids": []}),
      V, [], 1, ["{golden}:3: relevant_chunk_ids:", "nothing says where the answer lives"]),
    C("golden-missing-file", None, V, ["golden.path={tmp}/nope.jsonl"], 1,
      ["error:", "golden file not found", "{tmp}/nope.jsonl", "golden.path"]),
    C("golden-path-is-a-folder", None, V, ["golden.path={corpus}"], 1,
      ["error:", "golden.path", "folder", "{corpus}"]),
    C("golden-empty-file", golden(), V, [], 1, ["{golden}", "no golden items"],
      also=["FAILED"]),
    C("golden-empty-file-run", golden(), R, [], 1, ["error:", "{golden}", "no golden items"]),
    C("golden-non-utf8", golden_bytes(json.dumps(Q1).encode() +
                                      b'\n{"qid": "q2", "question": "caf\xe9"}\n'),
      V, [], 1, ["error:", "{golden}:2:", "not valid UTF-8"]),
    C("golden-bom-and-crlf-works",
      golden_bytes(b"\xef\xbb\xbf" + json.dumps(Q1).encode() + b"\r\n"
                   + json.dumps(Q2).encode() + b"\r\n"),
      V, ["--strict"], 0, ["OK:", "2 items", "0 errors, 0 warnings"]),

    # ---------------------------------------------------------------- golden: reference sidecar
    C("golden-unknown-chunk-id", golden(with_item(Q1, relevant_chunk_ids=["returns#7"]), Q2),
      V, [], 1, ["{golden}:1: relevant_chunk_ids[0]:", "'returns#7'",
                 "does not exist under the reference chunking"]),
    C("golden-chunk-ids-without-sidecar", no_reference(with_item(Q1, evidence=None), Q2),
      V, [], 1, ["{golden}:1: relevant_chunk_ids:", "reference.yaml"]),
    C("golden-sidecar-invalid-yaml", reference("chunk: {boundary: heading\n  size: : 3\n"),
      V, [], 1, ["error:", "{ref}", "not valid YAML", re.compile(r"(:2\b|line 2\b)")]),
    C("golden-sidecar-not-a-mapping", reference("chunk: 5\n"), V, [], 1,
      ["error:", "{ref}", "chunk:", "mapping"]),
    C("golden-sidecar-bad-boundary", reference("chunk: {boundary: words, size: 256}\n"),
      V, [], 1, ["error:", "{ref}", "words"]),
    C("golden-sidecar-size-infinite",
      reference("chunk: {boundary: heading, size: .inf, overlap: 0, tokenizer: minilm}\n"),
      V, [], 1, ["error:", "{ref}", "size"]),
    C("golden-sidecar-is-a-folder", reference_is_folder, V, [], 1, ["error:", "{ref}"]),
    C("golden-sidecar-tokenizer-not-a-tokenizer", reference_with_bad_tokenizer, V, [], 1,
      ["error:", "tokenizer", "{tmp}/not-a-tokenizer.json"]),

    # ---------------------------------------------------------------- golden: placement
    C("golden-quote-not-found",
      golden(with_item(Q1, evidence=[{"path": "returns.md",
                                      "quote": "You can return items within 90 days"}]), Q2),
      V, [], 1, ["{golden}:1: evidence[0].quote:", "not found in returns"]),
    C("golden-quote-not-found-run",
      golden(with_item(Q1, evidence=[{"path": "returns.md",
                                      "quote": "You can return items within 90 days"}]), Q2),
      R, [], 1, ["error:", "{golden}:1: evidence[0].quote:", "not found in returns"]),
    C("golden-span-past-end",
      golden(Q1, with_item(Q2, evidence=[{"doc_id": "shipping", "start": 10, "end": 100000}])),
      V, [], 1, ["{golden}:2: evidence[0].end:", "past the end of shipping"]),
    C("golden-unknown-doc-id",
      golden(Q1, with_item(Q2, evidence=[{"doc_id": "nope", "quote": "Orders ship"}])),
      V, [], 1, ["{golden}:2: evidence[0].doc_id:", "'nope' is not in the corpus"]),
    C("golden-unknown-path",
      golden(Q1, with_item(Q2, evidence=[{"path": "docs/nope.md", "quote": "Orders ship"}])),
      V, [], 1, ["{golden}:2: evidence[0].path:", "'docs/nope.md' is not in the corpus"]),
    C("golden-unknown-relevant-doc-id",
      golden(Q1, {"qid": "q3", "question": "where is the faq", "relevant_doc_ids": ["faq"]}),
      V, [], 1, ["{golden}:2: relevant_doc_ids:", "'faq' is not in the corpus"]),
    C("golden-mention-not-in-evidence-warns",
      golden(with_item(Q1, answer_must_mention=["60 days"]), Q2), V, [], 0,
      ["{golden}:1: answer_must_mention[0]:", "'60 days'", "none of the item's evidence",
       "[warning]"], also=["OK:"]),
    C("golden-mention-not-in-evidence-strict",
      golden(with_item(Q1, answer_must_mention=["60 days"]), Q2), V, ["--strict"], 1,
      ["{golden}:1: answer_must_mention[0]:", "'60 days'"], also=["FAILED"]),

    # ---------------------------------------------------------------- config
    # "did you mean", not Hydra's advice to add the typo with `+`
    C("config-unknown-key", None, R, ["chunk.sise=3"], 1,
      ["error: config: chunk.sise: no such key (did you mean chunk.size?)"]),
    C("config-unknown-group-option", None, R, ["embedding=nonexistent"], 1,
      ["error: config: embedding=nonexistent: no such option of embedding"],
      also=["minilm_static"]),
    C("config-unknown-boundary", None, R, ["chunk.boundary=words"], 1,
      ["Invalid value 'words'", "expected one of [fixed, sentence, paragraph, heading, "
                                 "recursive, token_text, langchain_recursive, semantic, cluster]"]),
    C("config-size-not-an-int", None, R, ["chunk.size=abc"], 1, ["abc"], also=["chunk.size"]),
    C("config-overlap-equals-size", None, R, ["chunk.size=128", "chunk.overlap=128"], 1,
      ["error:", "chunk.overlap=128", "smaller than chunk.size=128"]),
    C("config-size-zero", None, R, ["chunk.size=0"], 1,
      ["error:", "chunk.size=0", "at least 1"]),
    C("config-size-negative", None, R, ["chunk.size=-8"], 1,
      ["error:", "chunk.size=-8", "at least 1"]),
    C("config-k-zero", None, R, ["eval.k=[0]"], 1, ["error:", "eval.k=[0]", ">= 1"]),
    C("config-k-empty", None, R, ["eval.k=[]"], 1, ["error:", "eval.k=[]", "non-empty"]),
    C("config-on-error-unknown", None, R, ["corpus.on_error=ignore"], 1,
      ["error:", "corpus.on_error='ignore'", "raise, skip"]),
    C("config-rerank-pool-beyond-depth", None, R, ["rerank=cross_encoder", "rerank.pool=500"], 1,
      ["error:", "rerank.pool=500", "retrieval.depth=100"]),
    C("config-stopwords-file-missing", None, R,
      ["retrieval=bm25", "retrieval.diagnose=false", "retrieval.bm25_stopwords={tmp}/stop.txt"],
      1, ["error:", "retrieval.bm25_stopwords=", "{tmp}/stop.txt"]),
    C("config-tokenizer-missing", None, R, ["chunk.tokenizer={tmp}/nope.json"], 1,
      ["error:", "chunk.tokenizer=", "{tmp}/nope.json"]),
    C("config-tokenizer-not-a-tokenizer", not_a_tokenizer, R,
      ["chunk.tokenizer={tmp}/not-a-tokenizer.json"], 1,
      ["error:", "chunk.tokenizer", "{tmp}/not-a-tokenizer.json"]),
    C("config-embedding-missing-local-folder", None, R, ["embedding.name={tmp}/no-model"], 1,
      ["error:", "embedding.name=", "{tmp}/no-model"]),
    C("config-rerank-missing-local-folder", None, R,
      ["retrieval=bm25", "retrieval.diagnose=false", "rerank=cross_encoder",
       "rerank.model={tmp}/no-reranker"], 1,
      ["error:", "rerank.model=", "{tmp}/no-reranker"]),
    # refused before the first job, each bad combination named
    C("config-multirun-all-bad", None, M, ["chunk.size=0,-1"], 1,
      ["error: nothing ran", "chunk.size=0 must be at least 1 token [chunk.size=0]",
       "chunk.size=-1 must be at least 1 token [chunk.size=-1]"]),

    # ---------------------------------------------------------------- environment
    C("env-output-folder-under-a-file", a_regular_file, R, ["hydra.run.dir={tmp}/afile/sub"],
      1, ["error:", "cannot create the output folder", "{tmp}/afile", "hydra.run.dir"]),
    C("env-sweep-folder-under-a-file", a_regular_file, M,
      ["hydra.sweep.dir={tmp}/afile/sub", "chunk.size=128,256"], 1,
      ["error:", "cannot create the output folder", "{tmp}/afile", "hydra.sweep.dir"]),
    # "the MLflow server" is the pre-flight connect check's wording: the job failed before
    # MLflow's own client began its minutes of retries (a timing bound would be a flaky proxy).
    C("env-mlflow-unreachable", None, R, ["tracking=local", "tracking.uri=http://127.0.0.1:9"],
      1, ["error:", "tracking.uri=http://127.0.0.1:9", "cannot reach the MLflow server"]),
    C("env-mlflow-unreachable-multirun", None, M,
      ["tracking=local", "tracking.uri=http://127.0.0.1:9", "chunk.size=128,256"], 1,
      ["error:", "tracking.uri=http://127.0.0.1:9", "cannot reach the MLflow server"]),
    C("env-mlflow-sqlite-relative", None, R,
      ["tracking=local", "tracking.uri=sqlite:///relative.db"], 1,
      ["error:", "sqlite:///relative.db", "absolute path"]),
    C("env-mlflow-sqlite-under-a-file", a_regular_file, R,
      ["tracking=local", "tracking.uri=sqlite:///{tmp}/afile/db/mlflow.db"], 1,
      ["error:", "tracking.uri=", "cannot create", "{tmp}/afile/db"]),

    # ---------------------------------------------------------------- import
    C("import-squad-missing-file", None, IMP, ["squad", "{tmp}/nope.json", "--out", "{tmp}/out"],
      1, ["error:", "not found", "{tmp}/nope.json"]),
    C("import-squad-malformed-json", squad_file('{"data": [ {"title": "x",, } ]}'), IMP,
      ["squad", "{tmp}/squad.json", "--out", "{tmp}/out"], 1,
      ["error:", "{tmp}/squad.json:1:", "malformed JSON"]),
    C("import-squad-wrong-layout", squad_file("[1, 2]"), IMP,
      ["squad", "{tmp}/squad.json", "--out", "{tmp}/out"], 1,
      ["error:", "{tmp}/squad.json", "`data` list"]),
    C("import-squad-deeply-nested-json", squad_file(DEEP_JSON), IMP,
      ["squad", "{tmp}/squad.json", "--out", "{tmp}/out"], 1,
      ["error:", "{tmp}/squad.json", "JSON"]),
    C("import-out-not-empty", squad_and_full_out, IMP,
      ["squad", "{tmp}/squad.json", "--out", "{tmp}/out"], 1,
      ["error:", "--out {tmp}/out is not empty", "--force"]),
    C("import-unknown-format", None, IMP, ["xml", "{tmp}/squad.json", "--out", "{tmp}/out"], 2,
      ["invalid choice: 'xml'"]),
]


def _argv(ws: Workspace, case: Case) -> list[str]:
    args = [ws.sub(a) for a in case.args]
    given = {a.split("=", 1)[0] for a in args if "=" in a}
    defaults = []
    if case.command in ("validate", "run", "multirun"):
        # the parse cache (PDF/HTML/DOCX cases) stays in tmp_path, out of the repository
        defaults += [f"corpus.path={ws.corpus}", f"golden.path={ws.golden}",
                     f"cache.dir={ws.tmp}/cache"]
    if case.command in ("run", "multirun"):
        defaults += ["tracking=off", f"hydra.run.dir={ws.tmp}/run",
                     f"hydra.sweep.dir={ws.tmp}/multirun"]
    overrides = [d for d in defaults if d.split("=", 1)[0] not in given]
    if case.command == "validate":
        return ["-m", "sweep.cli", "validate", *args, *overrides]
    if case.command == "run":
        return ["-m", "sweep", *args, *overrides]
    if case.command == "multirun":
        return ["-m", "sweep", "-m", *args, *overrides]
    return ["-m", "sweep.cli", "import", *args]


def _check(ws: Workspace, case: Case, res: subprocess.CompletedProcess[str],
           elapsed: float) -> None:
    out = res.stdout + res.stderr
    shown = f"\n--- exit {res.returncode} in {elapsed:.1f}s\n--- stdout\n{res.stdout}" \
            f"\n--- stderr\n{res.stderr[-4000:]}"
    assert "Traceback" not in out, f"traceback reached the user{shown}"
    assert res.returncode == case.code, f"exit code {res.returncode} != {case.code}{shown}"
    wanted = [w if isinstance(w, re.Pattern) else ws.sub(w) for w in case.line]

    def has(line: str, w: str | re.Pattern[str]) -> bool:
        return bool(w.search(line)) if isinstance(w, re.Pattern) else w in line

    assert any(all(has(ln, w) for w in wanted) for ln in out.splitlines()), \
        f"no single line holds all of {wanted}{shown}"
    for word in case.also:
        assert ws.sub(word) in out, f"{word!r} missing{shown}"
    for word in case.absent:
        assert ws.sub(word) not in out, f"{word!r} should not appear{shown}"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path)
    w.build()
    return w


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, ws: Workspace) -> None:
    if case.setup is not None:
        case.setup(ws)
    t0 = time.perf_counter()
    res = run_cli(*_argv(ws, case), cwd=ws.tmp, timeout=300)
    _check(ws, case, res, time.perf_counter() - t0)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 35


# --------------------------------------------------------------------------- not table-shaped


def test_validate_json_for_a_failing_file(ws: Workspace) -> None:
    """`--json` stays valid JSON on failure: ok=false, every problem with file/line/field."""
    ws.write_golden(Q1, with_item(Q2, qid="q1"),
                    {"qid": "q3", "question": "is there a fee", "relevant_chunk_ids": []})
    res = run_cli("-m", "sweep.cli", "validate", "--json", f"corpus.path={ws.corpus}",
                  f"golden.path={ws.golden}", cwd=ws.tmp)
    assert "Traceback" not in res.stdout + res.stderr
    assert res.returncode == 1, res.stdout + res.stderr
    data = json.loads(res.stdout)
    assert data["ok"] is False
    assert data["golden"] == str(ws.golden)
    assert data["errors"] == 2 and data["items"] == 1
    where = {(p["file"], p["line"], p["field"], p["severity"]) for p in data["problems"]}
    assert (str(ws.golden), 2, "qid", "error") in where
    assert (str(ws.golden), 3, "relevant_chunk_ids", "error") in where
    assert any("duplicate qid 'q1'" in p["message"] for p in data["problems"])


def test_validate_lists_every_problem_not_just_the_first(ws: Workspace) -> None:
    """One run names every faulty line (the point of `sweep validate`)."""
    ws.write_golden(
        "not json",
        with_item(Q1, qid="q2"),
        with_item(Q2, evidence=[{"doc_id": "shipping", "start": 5, "end": 2}]),
        {"qid": "q4", "question": "anything", "relevant_chunk_ids": ["returns#9"]},
    )
    res = run_cli("-m", "sweep.cli", "validate", f"corpus.path={ws.corpus}",
                  f"golden.path={ws.golden}", cwd=ws.tmp)
    out = res.stdout + res.stderr
    assert "Traceback" not in out
    assert res.returncode == 1, out
    for expected in (f"{ws.golden}:1: malformed JSON", f"{ws.golden}:3: qid: duplicate qid",
                     f"{ws.golden}:3: evidence[0].end:",
                     f"{ws.golden}:4: relevant_chunk_ids[0]: 'returns#9'"):
        assert expected in out, out
    assert "4 errors" in res.stderr, out
