"""The audit's text, JSON and HTML views; the page escapes the corpus's and the golden file's
text (hostile on purpose here)."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import parse_document
from sweep.data.golden import EvidenceRef, GoldenItem
from sweep.evaluation.audit import audit
from sweep.evaluation.relevance import CorpusIndex, resolve_all
from sweep.outputs.audit_report import audit_html, audit_text, summary_lines, write_audit

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'
TEXT = f"# Heading {EVIL}\n\nThe answer is {EVIL} here.\n\n## Other </td></table>\n\nMore.\n"
DOCS = [parse_document("evil.md", TEXT), parse_document("copy.md", f"again {EVIL}\n")]


def _report() -> dict:
    items = [GoldenItem("q<1>", f"what is {EVIL}?", line=1,
                        evidence=(EvidenceRef(doc_id="evil", quote=EVIL),),
                        extra={"source": "<b>log</b>"}),
             GoldenItem("q2", f"WHAT is {EVIL}", line=2,
                        evidence=(EvidenceRef(doc_id="evil", quote="More."),))]
    resolved = resolve_all(items, CorpusIndex(DOCS), None)
    chunks = [Chunk("evil#0", "evil", 0, 0, len(TEXT), "", "", 9),
              Chunk("copy#0", "copy", 0, 0, len(DOCS[1].text), "", "", 3)]
    rep = audit(resolved, DOCS, chunks, None)
    rep["inputs"] = {"golden": f"g{EVIL}.jsonl", "corpus": "c",
                     "reference_chunking": {"boundary": "fixed", "size": 9, "overlap": 0,
                                            "tokenizer": "t", "from": "test"},
                     "near_duplicates": {"model": None, "threshold": 0.9}}
    rep["set"]["power"] = None
    return rep


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)
        self.attrs += [k for k, _ in attrs]

    def handle_data(self, data) -> None:
        self.text.append(data)


def test_the_page_escapes_everything() -> None:
    page = audit_html(_report())
    parser = _Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags and "b" not in parser.tags
    assert not any(a.startswith("on") for a in parser.attrs)
    text = "".join(parser.text)
    assert EVIL in text and "<b>log</b>" in text and "q<1>" in text
    # the structure survives the "</td></table>" heading: one table, a row per item
    assert parser.tags.count("table") == 1 and parser.tags.count("tr") == 3
    assert "Content-Security-Policy" in page


def test_text_and_files(tmp_path) -> None:
    rep = _report()
    lines = summary_lines(rep)
    assert lines[-1] == "power: not estimated (no sweep was consulted)"
    assert any(line.startswith("near-duplicate questions (normalised text only") and
               "1 pairs over 2 items (1 equal once normalised)" in line for line in lines)
    text = audit_text(rep)
    assert "q<1> ~ q2  1.000 (text)" in text
    # the quote is the heading's (the first place), again in the body and in copy.md
    body = TEXT.index(EVIL, TEXT.index(EVIL) + 1)
    assert f"occurs 3 times (also copy@6, evil@{body})" in text
    paths = write_audit(tmp_path, rep)
    assert [p.name for p in paths] == ["audit.json", "audit.html"]
    back = json.loads(paths[0].read_text(encoding="utf-8"))
    assert back["items"][0]["question"] == f"what is {EVIL}?"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.html", "audit.json"]
