"""The content-kind golden supplements (issue 47) on the real pages: every quote of
debian_tables.golden.jsonl sits in a table and every quote of python_docs_code.golden.jsonl in
code, as the classifier reads each HTML parser's output, and the original sets' table
questions are real tables, not the DocBook admonitions laid out as tables."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import SHARED_DATA
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.evaluation.content import line_kinds, question_kind
from sweep.evaluation.relevance import CorpusIndex, resolve_all

HERE = Path(__file__).parent
DEBIAN = SHARED_DATA / "debian_reference" / "html"
PYDOCS = SHARED_DATA / "python_docs_html"

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not (DEBIAN / "ch09.en.html").is_file()
                       or not (PYDOCS / "tutorial" / "classes.html").is_file(),
                       reason=f"{SHARED_DATA} lacks the Debian Reference or the Python docs"),
]


def kinds(corpus: Path, golden: Path, parser: str, tmp_path: Path) -> dict[str, str]:
    docs = load_corpus(corpus, extensions=[".html"], parsers={"html": parser},
                       cache_dir=tmp_path)
    items = load_golden(golden).items
    resolved = resolve_all(items, CorpusIndex(docs), None)
    lines = {d.doc_id: line_kinds(d.text) for d in docs}
    return {r.item.qid: question_kind(r.spans, lines) for r in resolved}


@pytest.mark.parametrize("parser", ["trafilatura", "markitdown"])
def test_the_supplements_sit_in_their_kind(parser: str, tmp_path: Path) -> None:
    tables = kinds(DEBIAN, HERE / "debian_tables.golden.jsonl", parser, tmp_path)
    assert len(tables) == 7 and set(tables.values()) == {"table"}, tables
    # only the pages holding the code quotes (all 64 take minutes to parse twice)
    pages = tmp_path / "pydocs"
    for name in ("datastructures", "inputoutput", "errors", "classes", "controlflow"):
        (pages / "tutorial").mkdir(parents=True, exist_ok=True)
        shutil.copy(PYDOCS / "tutorial" / f"{name}.html", pages / "tutorial")
    code = kinds(pages, HERE / "python_docs_code.golden.jsonl", parser, tmp_path)
    assert len(code) == 10 and set(code.values()) == {"code"}, code


def test_debian_admonitions_are_prose_and_its_tables_tables(tmp_path: Path) -> None:
    got = kinds(DEBIAN, HERE / "debian_reference.golden.jsonl", "trafilatura", tmp_path)
    # q29 (a caution) and q26 (a tip) are one-cell tables in the HTML; q31 is a table row
    assert got["q29"] == got["q26"] == "prose"
    assert got["q31"] == "table"
