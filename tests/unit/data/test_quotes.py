"""The levelled quote locator, each normalisation on its own, and orphans per parser."""

from __future__ import annotations

import pytest

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import Document, Section
from sweep.data.golden import EvidenceRef, GoldenItem
from sweep.data.quotes import QuoteIndex
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.relevance import CorpusIndex, quote_metrics, resolve_item
from sweep.retrieval.ranking import Ranking


def find(text: str, quote: str) -> tuple[str | None, str | None]:
    """(level, the matched text of the original) for a quote in one text."""
    level, places = QuoteIndex({"d": text}).find(quote)
    if level is None:
        return None, None
    return level, text[places[0].start:places[0].end]


def test_exact() -> None:
    assert find("Say hello world twice.", "hello world") == ("exact", "hello world")


def test_normalised_line_wrap_and_runs_of_spaces() -> None:
    text = "the file\n   foo is\tlinked"
    assert find(text, "the file foo is linked") == ("normalised", text)
    assert find(text, "  file foo  ") == ("normalised", "file\n   foo")


# Each loose normalisation alone: the text differs from the quote in exactly one way.
LOOSE = [
    ("typographic quotes", "a file \u201dfoo\u201d with", 'a file "foo" with'),
    ("apostrophe", "an ordinary user\u2019s password", "an ordinary user's password"),
    ("dash", "pages 3\u20134 only", "pages 3-4 only"),
    ("ligature", "the \ufb01le system", "the file system"),
    ("soft hyphen", "auto\u00admatic mounting", "automatic mounting"),
    ("end-of-line hyphenation", "start the shell di-\nrectly on the host",
     "start the shell directly on the host"),
    ("real hyphen broken at a line end", "the time-\nconsuming write", "the time-consuming write"),
    ("table pipes", "| vim | Vi IMproved editor |", "vim Vi IMproved editor"),
    ("list bullets", "- Hard link\n- Symbolic link", "Hard link\nSymbolic link"),
    ("list numbers", "1. Run apt update\n2. Run apt upgrade", "Run apt update\nRun apt upgrade"),
    ("emphasis", "type **reset** at the prompt", "type reset at the prompt"),
    ("inline code", "such as `cat some-file`, type", "such as cat some-file, type"),
    ("markdown link", "see [Virtual consoles](#vc \"title\") below", "see Virtual consoles below"),
    ("backslash escape", "on x86\\_64 machines", "on x86_64 machines"),
    # markitdown: a link whose text is its URL is an autolink (q33, q36 of the Debian set)
    ("autolink", "The wiki at <https://wiki.debian.org/> for topics",
     "The wiki at https://wiki.debian.org/ for topics"),
    # markitdown: a DocBook cross-reference's link title holds escaped quotes (q34)
    ("link title with escaped quotes",
     'upgrades (see [Section 2.5.3, \u201cArchive level "Release" files\u201d](ch02.html#_a '
     '"2.5.3.\u00a0Archive level \\"Release\\" files")).',
     'upgrades (see Section 2.5.3, \u201cArchive level "Release" files\u201d).'),
    ("dropped spaces", "Therearetwomethodsofassociating afile", "There are two methods of "
     "associating a file"),
]


@pytest.mark.parametrize(("case", "text", "quote"), LOOSE, ids=[c[0] for c in LOOSE])
def test_loose_each_normalisation_alone(case: str, text: str, quote: str) -> None:
    assert quote not in text and " ".join(quote.split()) not in " ".join(text.split())
    level, matched = find("Before. " + text + " After.", quote)
    assert level == "loose", case
    # The span maps back onto the original text: it starts at the quote's first character
    # and ends at its last, markup outside them left out.
    assert matched is not None and matched[0] == quote[0] and matched[-1] == quote[-1]


def test_loose_span_offsets_are_original_offsets() -> None:
    text = "x\n| a | \u201cb\u201d |\n- c\u00add"
    level, places = QuoteIndex({"d": text}).find('a "b" cd')
    assert level == "loose"
    (p,) = places
    assert (p.start, p.end) == (text.index("a"), len(text))


def test_not_found_and_blank() -> None:
    assert find("nothing like it", "something else") == (None, None)
    assert find("text", "  \n") == (None, None)


def test_first_level_wins_and_counts_its_places() -> None:
    # exact in one document beats loose in another
    idx = QuoteIndex({"a": "the \u201cfoo\u201d file", "b": 'the "foo" file'})
    level, places = idx.find('the "foo" file')
    assert level == "exact" and [p.doc_id for p in places] == ["b"]


# --------------------------------------------------------------------------- resolution

PDF_TEXT = "1.2 Links\nThere are two methods of associating a file \u201dfoo\u201d.\n"
HTML_TEXT = "# Links\n\nThere are two methods of associating a file \"foo\".\n"


def doc(doc_id: str, text: str, parser: str = "") -> Document:
    return Document(doc_id, doc_id, text, (Section(0, len(text), 0, ()),), f"{doc_id}.x",
                    parser)


def item(*evidence: EvidenceRef, qid: str = "q1") -> GoldenItem:
    return GoldenItem(qid, "how are files associated?", evidence=evidence, line=3)


QUOTE = 'There are two methods of associating a file "foo".'


def test_quote_without_document_found_once() -> None:
    corpus = CorpusIndex([doc("book", PDF_TEXT, "pypdf"), doc("other", "unrelated\n")])
    r = resolve_item(item(EvidenceRef(quote=QUOTE)), corpus, None)
    assert r.problems == () and r.quote_levels == ("loose",)
    ((d, a, b),) = r.spans
    assert d == "book" and PDF_TEXT[a:b].startswith("There") and PDF_TEXT[a:b].endswith(".")


def test_quote_without_document_found_in_several_warns_naming_places() -> None:
    corpus = CorpusIndex([doc("a", HTML_TEXT, "trafilatura"), doc("b", HTML_TEXT, "trafilatura")])
    r = resolve_item(item(EvidenceRef(quote=QUOTE)), corpus, None)
    (p,) = r.problems
    assert p.severity == "warning" and "2 documents" in p.message
    assert f"a@{HTML_TEXT.index('There')}" in p.message and "b@" in p.message
    assert r.spans[0][0] == "a"


def test_quote_missing_in_a_parsers_output_is_an_orphan_not_an_error() -> None:
    corpus = CorpusIndex([doc("book", "Nothing about links here.\n", "pdfplumber")])
    r = resolve_item(item(EvidenceRef(doc_id="book", quote=QUOTE)), corpus, None)
    assert r.level == "orphan" and r.spans == () and r.quote_levels == ("missing",)
    assert r.orphan_reason == "evidence[0]: not found in pdfplumber output"
    assert [p.severity for p in r.problems] == ["warning"]
    # said as the parser's loss (issue 45: it read as "your quote is wrong")
    assert "the pdfplumber parser lost this part of the document, not the quote" in (
        r.problems[0].message)


def test_parser_keeps_names_the_parsers_that_found_every_quote() -> None:
    from sweep.data.quotes import parser_keeps

    levels = {"html:trafilatura": {"q1": ["exact"], "q2": ["missing"], "q3": ["exact", "missing"]},
              "html:markitdown": {"q1": ["exact"], "q2": ["loose"], "q3": ["missing", "exact"]},
              "pdf:pypdf": {"q1": ["loose"], "q2": ["blocks"], "q3": ["missing", "missing"]}}
    assert parser_keeps(levels) == [
        "q2: lost by html:trafilatura; kept by html:markitdown, pdf:pypdf",
        "q3: lost by html:trafilatura, html:markitdown, pdf:pypdf; kept by none of these "
        "parsers (check the quote against the file)"]
    assert parser_keeps({"markdown": {"q1": ["exact"]}}) == []


def test_quote_missing_in_markdown_is_still_an_error() -> None:
    corpus = CorpusIndex([doc("notes", "Nothing about links here.\n")])
    r = resolve_item(item(EvidenceRef(doc_id="notes", quote=QUOTE)), corpus, None)
    assert [p.severity for p in r.problems] == ["error"]


def test_one_missing_quote_orphans_the_whole_item() -> None:
    # Scoring on the evidence that survived would make the question easier under one parser.
    corpus = CorpusIndex([doc("book", PDF_TEXT, "pypdf")])
    r = resolve_item(item(EvidenceRef(quote=QUOTE), EvidenceRef(quote="a cross reference")),
                     corpus, None)
    assert r.level == "orphan" and r.quote_levels == ("loose", "missing")
    assert r.orphan_reason == "evidence[1]: not found in pypdf output"


def test_span_saved_under_another_parser_falls_back_to_its_quote() -> None:
    corpus = CorpusIndex([doc("book", PDF_TEXT, "pypdf")])
    r = resolve_item(item(EvidenceRef(doc_id="book", start=0, end=5, quote=QUOTE)), corpus, None)
    assert r.quote_levels == ("loose",) and r.spans[0][1] == PDF_TEXT.index("There")


def test_orphans_per_parser_are_counted_listed_and_not_scored() -> None:
    quotes = [EvidenceRef(quote=QUOTE), EvidenceRef(quote="two methods"),
              EvidenceRef(quote="a sentence only the HTML has")]
    items = [item(q, qid=f"q{i}") for i, q in enumerate(quotes)]
    html = HTML_TEXT + "And a sentence only the HTML has.\n"
    results = {}
    for parser, text in (("trafilatura", html), ("pypdf", PDF_TEXT)):
        d = doc("book", text, parser)
        corpus = CorpusIndex([d])
        resolved = [resolve_item(it, corpus, None) for it in items]
        chunks = [Chunk("book#0", "book", 0, 0, len(text), text, text, 10)]
        rankings = [Ranking((0,), (1.0,)) for _ in items]
        summary, rows = evaluate(resolved, chunks, rankings, EvalSpec(k=(1,), prompt_k=1))
        results[parser] = (quote_metrics(resolved), summary, rows)
    html_m, html_s, _ = results["trafilatura"]
    assert (html_m["n_quotes"], html_m["n_quotes_exact"], html_m["evidence_found_fraction"]
            ) == (3, 3, 1.0)
    assert html_s["n_orphans"] == 0 and html_s["n_scored"] == 3
    pdf_m, pdf_s, pdf_rows = results["pypdf"]
    assert (pdf_m["n_quotes_exact"], pdf_m["n_quotes_loose"], pdf_m["n_quotes_missing"]
            ) == (1, 1, 1)
    assert pdf_m["evidence_found_fraction"] == pytest.approx(2 / 3)
    assert (pdf_s["n_orphans"], pdf_s["n_scored"]) == (1, 2)
    orphan = [r for r in pdf_rows if r["status"] == "orphan"]
    assert [(r["qid"], r["orphan_reason"]) for r in orphan] == [
        ("q2", "evidence[0]: not found in pypdf output")]
    assert pdf_s["recall_at_1"] == 1.0  # averaged over the 2 scored, the orphan not as a 0


# --------------------------------------------------------------------------- across blocks

# A sentence and the command shown in the code block after it, as each converter writes them
# (the Debian Reference's `<p>...configure it as:</p><pre class="screen"># dpkg-reconfigure
# locales</pre>`), quoted as a user copies it: one line.
PROSE = "The locales package has no compiled data. You need to configure it as:"
ACROSS = [
    ("markdown fence", PROSE + "\n\n```\n# dpkg-reconfigure locales\n```\n\nThis takes 2 steps.",
     "You need to configure it as: # dpkg-reconfigure locales"),
    ("fence with a language tag", PROSE + "\n\n```sh\n# dpkg-reconfigure locales\n```\n",
     "You need to configure it as: # dpkg-reconfigure locales"),
    ("tilde fence, user prompt", "List the log as:\n~~~console\n$ journalctl -b\n~~~\n",
     "List the log as: $ journalctl -b"),
    ("quote without the prompt", "List the log as:\n\n```\n$ journalctl -b\n```\n",
     "List the log as: journalctl -b"),
    ("python REPL", "Try it:\n\n```python\n>>> print(1 + 1)\n2\n```\n", "Try it: >>> print(1 + 1) 2"),
]


@pytest.mark.parametrize(("case", "text", "quote"), ACROSS, ids=[c[0] for c in ACROSS])
def test_quote_across_a_block_boundary(case: str, text: str, quote: str) -> None:
    # no earlier level finds it (levels are tried in order): the prompt is mid-line in the
    # quote and at a line start in the text (dropped there as a heading marker, or kept), or a
    # fence's tag is in between
    level, matched = find(text, quote)
    assert level == "blocks", case
    assert matched is not None and matched.endswith(quote[-1])
    first_word = quote.split()[0]
    assert matched.startswith(first_word)


def test_across_blocks_is_tried_only_after_loose() -> None:
    # The loose level finds it (the `$` is kept on both sides there): it keeps its level, and
    # the new level moves no quote an earlier level found.
    text = "List the log as:\n\n```\n$ journalctl -b\n```\n"
    assert find(text, "List the log as: $ journalctl -b")[0] == "loose"
    assert find(text, "journalctl -b") == ("exact", "journalctl -b")


def test_across_blocks_does_not_drop_a_word_or_a_dollar_amount() -> None:
    # a prompt is a `$`/`#`/`%`/`>>>` standing alone before a blank: "$5" and "C#" stay text
    assert find("It costs $5 a month.", "It costs 5 a month.") == (None, None)
    assert find("Written in C# mostly.", "Written in C mostly.") == (None, None)
    # and a fence's tag is no wildcard: other text between the blocks is still text
    assert find("Run it as:\n\nsee below\n\n```\n# ls\n```\n", "Run it as: # ls") == (None, None)


def test_across_blocks_resolves_and_is_counted_under_its_own_level() -> None:
    text = PROSE + "\n\n```\n# dpkg-reconfigure locales\n```\n"
    quote = "configure it as: # dpkg-reconfigure locales"
    corpus = CorpusIndex([doc("ch08", text, "trafilatura")])
    r = resolve_item(item(EvidenceRef(doc_id="ch08", quote=quote)), corpus, None)
    assert r.level != "orphan" and r.quote_levels == ("blocks",)
    ((_, a, b),) = r.spans
    assert text[a:b] == text[text.index("configure"):text.index("locales\n") + len("locales")]
    m = quote_metrics([r])
    assert (m["n_quotes"], m["n_quotes_blocks"], m["n_quotes_loose"]) == (1, 1, 0)
    # a markdown file (no parser) says at which level it was found
    md = CorpusIndex([doc("notes", text)])
    r = resolve_item(item(EvidenceRef(doc_id="notes", quote=quote)), md, None)
    assert [p.severity for p in r.problems] == ["warning"]
    assert "across a block boundary" in r.problems[0].message


def test_metric_set_without_a_blocks_match_is_unchanged() -> None:
    # every run before the level existed has these keys and no other
    corpus = CorpusIndex([doc("book", HTML_TEXT, "trafilatura")])
    r = resolve_item(item(EvidenceRef(quote=QUOTE)), corpus, None)
    assert set(quote_metrics([r])) == {"n_quotes", "n_quotes_exact", "n_quotes_normalised",
                                       "n_quotes_loose", "n_quotes_missing",
                                       "evidence_found_fraction"}


PAGE = b"""<html><head><title>Locales</title></head><body><div class="chapter">
<h1>8. I18N and L10N</h1>
<p>In order for the system to access a particular locale, the locale data must be compiled
from the locale database, which is a long sentence to make this a paragraph of prose.</p>
<p>The <code class="literal">locales</code> package does <strong>not</strong> come with
pre-compiled locale data.  You need to configure it as:</p>
<pre class="screen"># dpkg-reconfigure locales</pre>
<p>This process involves 2 steps, each of them explained in the next paragraphs here.</p>
</div></body></html>"""


@pytest.mark.parametrize("parser", ["trafilatura", "markitdown"])
def test_html_quote_across_a_block_boundary_under_each_parser(parser: str) -> None:
    from sweep.data.parsers.registry import get_parser

    text = get_parser("html", parser).fn(PAGE, "ch08.html").text
    quote = "You need to configure it as: # dpkg-reconfigure locales"
    corpus = CorpusIndex([doc("ch08", text, parser)])
    r = resolve_item(item(EvidenceRef(doc_id="ch08", quote=quote)), corpus, None)
    assert r.quote_levels == ("blocks",) and r.level != "orphan", text
    ((_, a, b),) = r.spans
    assert text[a:b].startswith("You need") and text[a:b].endswith("reconfigure locales")
