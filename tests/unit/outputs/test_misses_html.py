"""misses.html: valid, self-contained, every user string escaped, evidence and boundaries drawn."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

from sweep.chunking.chunkers import Chunk
from sweep.evaluation.misses import miss_views
from sweep.outputs.misses_html import render_page
from sweep.retrieval.ranking import Ranking

HOSTILE_Q = '<script>alert(1)</script> "><img src=x onerror=alert(2)>'
DOC = "Intro line. <b>bold?</b> The answer is forty-two. Trailing text here."
VOID = {"meta", "br", "hr", "img", "input", "link"}


class Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.errors: list[str] = []
        self.marks: list[str] = []
        self._in_mark = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "mark":
            self._in_mark += 1
            self.marks.append("")
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "mark":
            self._in_mark -= 1
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"unbalanced </{tag}> (open: {self.stack[-3:]})")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self._in_mark:
            self.marks[-1] += data


def views() -> list[dict[str, Any]]:
    s = DOC.index("The answer")
    e = s + len("The answer is forty-two.")
    chunks = [Chunk("d#0", "d", 0, 0, 25, DOC[:25], "Hdr <x>\n\n" + DOC[:25], 6),
              Chunk("d#1", "d", 1, 25, len(DOC), DOC[25:], DOC[25:], 9)]
    rows = [{"qid": "q<1>", "question": HOSTILE_Q, "status": "scored",
             "first_relevant_rank": None, "relevant_ids": "d#1", "miss_cause": "never_retrieved",
             "miss_detail": "not in the ranked list"}]
    return miss_views(rows, [[("d", s, e)]], chunks, {"d": DOC}, [Ranking((0,), (0.5,))],
                      {"dense": [Ranking((0, 1), (0.5, 0.1))], "bm25": [None]}, 5, {})


def test_page_escapes_user_text_and_is_balanced() -> None:
    page = render_page(views(), 'run "<x>"', {"n_miss_never_retrieved": 1})
    checker = Checker()
    checker.feed(page)
    checker.close()
    assert checker.errors == [] and checker.stack == []
    assert "<script" not in page and "<img" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "onerror=alert(2)&gt;" in page  # as text, inside an escaped string
    assert "Hdr &lt;x&gt;" in page


def test_page_loads_nothing_from_outside() -> None:
    page = render_page(views(), "t", {})
    checker = Checker()
    checker.feed(page)
    for tag, attrs in checker.tags:
        assert tag not in ("script", "link", "img", "iframe", "object"), tag
        assert "src" not in attrs and "href" not in attrs, (tag, attrs)
    assert "http://" not in page and "https://" not in page and "url(" not in page


def test_evidence_is_highlighted_and_boundaries_are_labelled() -> None:
    page = render_page(views(), "t", {})
    checker = Checker()
    checker.feed(page)
    assert "".join(checker.marks) == "The answer is forty-two."
    labels = [a.get("data-chunk") for t, a in checker.tags if t == "span" and "data-chunk" in a]
    assert labels == ["d#0", "d#1"]


def test_hits_say_which_retriever_found_them() -> None:
    v = views()[0]
    assert [(h["chunk_id"], h["found_by"], h["dense_rank"], h["bm25_rank"])
            for h in v["hits"]] == [("d#0", "dense", 1, None)]
    assert v["hits"][0]["relevant"] is False


def test_miss_summary_lists_causes_that_occur_most_first() -> None:
    from sweep.outputs.report import miss_summary

    metrics = {"n_miss_evidence_split": 2.0, "n_miss_truncated": 7.0, "n_miss_ranked_below_k": 0.0,
               "n_miss_never_retrieved": 1.0, "n_miss_orphan": 0.0}
    assert miss_summary(metrics) == "trunc 7 · split 2 · never 1"
    assert miss_summary(dict.fromkeys(metrics, 0.0)) == "none"
    assert miss_summary({"recall_at_5": 1.0}) is None


def test_text_past_the_models_cut_is_marked_unseen() -> None:
    from sweep.outputs.misses_html import render_passage

    class Unseen(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.depth = 0  # inside a span whose class says "unseen"
            self.stack: list[bool] = []
            self.text = ""

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            unseen = tag == "span" and "unseen" in (dict(attrs).get("class") or "")
            self.stack.append(unseen)
            self.depth += unseen

        def handle_endtag(self, tag: str) -> None:
            self.depth -= self.stack.pop()

        def handle_data(self, data: str) -> None:
            if self.depth:
                self.text += data

    p = {"doc_id": "d", "window": [0, 20], "evidence": [12, 18], "text": "abcdefghijklmnopqrst",
         "chunks": [{"chunk_id": "d#0", "start": 0, "end": 20, "n_tokens": 5, "header": "",
                     "relevant": True, "cut": 10}]}
    html = render_passage(p)
    assert html.count("✂") == 1 and html.index("✂") < html.index("unseen")
    parser = Unseen()
    parser.feed(html)
    assert parser.text == "klmnopqrst"


def test_pdf_evidence_and_hits_name_their_page_outside_the_passage_text() -> None:
    # DOC as a two-page PDF: page 2 starts at "The answer" (offset 25, where d#1 starts);
    # chunk d#0 (0-25) is on page 1, d#1 and the evidence (25-49) on page 2.
    s = DOC.index("The answer")
    chunks = [Chunk("d#0", "d", 0, 0, 25, DOC[:25], DOC[:25], 6),
              Chunk("d#1", "d", 1, 25, len(DOC), DOC[25:], DOC[25:], 9)]
    rows = [{"qid": "q", "question": "?", "status": "scored", "first_relevant_rank": 2,
             "relevant_ids": "d#1", "miss_cause": "ranked_too_low", "miss_detail": "rank 2"}]
    (v,) = miss_views(rows, [[("d", s, s + 24)]], chunks, {"d": DOC},
                      [Ranking((0, 1), (0.5, 0.4))], {"dense": [None], "bm25": [None]}, 5, {},
                      pages={"d": (0, s)})
    assert s == 25 and [h["page"] for h in v["hits"]] == [1, 2]
    assert v["passages"][0]["page"] == 2
    page = render_page([v], "t", {})
    assert '<p class="page">d · page 2</p><div class="passage"' in page
    assert "d#0 (p. 1)" in page
    # without a page map (markdown) nothing is added
    (plain,) = miss_views(rows, [[("d", s, s + 24)]], chunks, {"d": DOC},
                          [Ranking((0, 1), (0.5, 0.4))], {"dense": [None], "bm25": [None]}, 5,
                          {})
    assert plain["passages"][0]["page"] is None
    assert 'class="page"' not in render_page([plain], "t", {})
    assert "(p. " not in render_page([plain], "t", {})


def test_returned_units_with_span_ids_render_and_alternate_shades() -> None:
    # retrieval.unit=parent/window return units named "<doc>@<start>-<end>" (a doc id may hold
    # "#"): the page once parsed an ordinal out of the id and crashed the job.
    s = DOC.index("The answer")
    e = s + len("The answer is forty-two.")
    chunks = [Chunk("guide#intro@0-25", "d", 0, 0, 25, DOC[:25], DOC[:25], 6),
              Chunk("guide#intro@25-70", "d", 1, 25, len(DOC), DOC[25:], DOC[25:], 9)]
    rows = [{"qid": "q1", "question": "what is the answer", "status": "scored",
             "first_relevant_rank": None, "relevant_ids": "guide#intro@25-70",
             "miss_cause": "never_retrieved", "miss_detail": "not in the ranked list"}]
    page = render_page(miss_views(rows, [[("d", s, e)]], chunks, {"d": DOC},
                                  [Ranking((0,), (0.5,))],
                                  {"dense": [Ranking((0, 1), (0.5, 0.1))], "bm25": [None]}, 5,
                                  {}), "run", {})
    checker = Checker()
    checker.feed(page)
    assert not checker.errors and not checker.stack
    shades = [a.get("class") for t, a in checker.tags
              if t == "span" and a.get("data-chunks") in ("guide#intro@0-25",
                                                          "guide#intro@25-70")]
    assert shades[0].startswith("c0") and shades[-1].startswith("c1")
