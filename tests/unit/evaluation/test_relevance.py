"""Relevance that survives re-chunking: quotes, spans, reference chunk ids, overlap rule."""

from __future__ import annotations

import pytest

from sweep.chunking.chunkers import Chunk, ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.data.corpus import parse_document
from sweep.data.golden import EvidenceRef, GoldenItem
from sweep.evaluation.relevance import (
    ChunkLocator,
    CorpusIndex,
    is_relevant,
    locate_quote,
    relevant_chunks,
    resolve_all,
    resolve_item,
)

REFUNDS = (
    "# Refunds\n"
    "\n"
    "You can return items within 30 days of delivery.\n"
    "Refunds go back to the original card within 5 business days.\n"
    "\n"
    "## Exceptions\n"
    "\n"
    "Sale items are final. Opened electronics cannot be returned after 30 days.\n"
)
SHIPPING = "# Shipping\n\nStandard shipping takes 3 to 5 business days.\nExpress takes 1 day.\n"

DOCS = [
    parse_document("policy/refunds.md", REFUNDS),
    parse_document("policy/shipping.md", SHIPPING),
]
CORPUS = CorpusIndex(DOCS)
REFUNDS_DOC = DOCS[0]


def item(**fields) -> GoldenItem:
    base = {"qid": "q1", "question": "how long to return", "line": 7}
    base.update(fields)
    return GoldenItem(**base)


def span_text(span: tuple[str, int, int]) -> str:
    doc_id, start, end = span
    return CORPUS.by_id[doc_id].text[start:end]


def chunk(doc_id: str, ordinal: int, start: int, end: int, text: str = "") -> Chunk:
    return Chunk(f"{doc_id}#{ordinal}", doc_id, ordinal, start, end, text, text, end - start)


# --------------------------------------------------------------------------- locate_quote


def test_locate_quote_exact() -> None:
    start, end, how, count = locate_quote(REFUNDS, "within 30 days")
    assert REFUNDS[start:end] == "within 30 days"
    assert (how, count) == ("exact", 1)


def test_locate_quote_counts_occurrences_and_takes_first() -> None:
    start, _, how, count = locate_quote(REFUNDS, "30 days")
    assert (how, count) == ("exact", 2)
    assert start == REFUNDS.index("30 days")


def test_locate_quote_whitespace_normalised() -> None:
    quote = "of delivery.   Refunds\tgo back"  # copied across a line wrap
    start, end, how, count = locate_quote(REFUNDS, quote)
    assert REFUNDS[start:end] == "of delivery.\nRefunds go back"
    assert (how, count) == ("normalised", 1)


def test_locate_quote_missing() -> None:
    assert locate_quote(REFUNDS, "60 days") is None
    assert locate_quote(REFUNDS, "   ") is None
    # Spaces dropped between words are found only at the loose level.
    start, end, how, _ = locate_quote(REFUNDS, "within30 days")
    assert (REFUNDS[start:end], how) == ("within 30 days", "loose")


# --------------------------------------------------------------------------- resolve_item


def test_resolve_quote() -> None:
    ev = EvidenceRef(doc_id="policy/refunds", quote="within 30 days of delivery")
    r = resolve_item(item(evidence=(ev,)), CORPUS, None)
    assert r.problems == ()
    assert r.source == "evidence" and r.level == "span"
    (span,) = r.spans
    assert span_text(span) == "within 30 days of delivery"
    assert r.doc_ids == frozenset({"policy/refunds"})


def test_resolve_quote_warnings() -> None:
    ev = EvidenceRef(doc_id="policy/refunds", quote="30 days")
    r = resolve_item(item(evidence=(ev,)), CORPUS, None)
    assert span_text(r.spans[0]) == "30 days"
    assert [(p.field, p.severity) for p in r.problems] == [("evidence[0].quote", "warning")]
    assert "2 times" in r.problems[0].message
    ev2 = EvidenceRef(doc_id="policy/refunds", quote="of  delivery. Refunds")
    r2 = resolve_item(item(evidence=(ev2,)), CORPUS, None)
    assert span_text(r2.spans[0]) == "of delivery.\nRefunds"
    assert [(p.field, p.severity) for p in r2.problems] == [("evidence[0].quote", "warning")]


def test_resolve_quote_not_found_is_an_error() -> None:
    ev = EvidenceRef(doc_id="policy/refunds", quote="sixty days")
    r = resolve_item(item(evidence=(ev,)), CORPUS, None, file="g.jsonl")
    assert r.spans == () and r.level == "orphan" and r.source == "none"
    (p,) = r.problems
    assert (p.file, p.line, p.field, p.severity) == ("g.jsonl", 7, "evidence[0].quote", "error")
    assert "not found" in p.message


def test_resolve_span() -> None:
    start = REFUNDS.index("Sale items")
    ev = EvidenceRef(doc_id="policy/refunds", start=start, end=start + 21)
    r = resolve_item(item(evidence=(ev,)), CORPUS, None)
    assert r.problems == ()
    assert r.spans == (("policy/refunds", start, start + 21),)
    assert span_text(r.spans[0]) == "Sale items are final."


def test_resolve_span_past_end_and_quote_mismatch() -> None:
    n = len(SHIPPING)
    r = resolve_item(item(evidence=(EvidenceRef(doc_id="policy/shipping", start=0, end=n + 1),)),
                     CORPUS, None)
    assert r.spans == ()
    assert [p.field for p in r.problems] == ["evidence[0].end"]
    r2 = resolve_item(
        item(evidence=(EvidenceRef(doc_id="policy/shipping", start=0, end=5, quote="Express"),)),
        CORPUS, None,
    )
    assert r2.spans == ()
    assert [p.field for p in r2.problems] == ["evidence[0].quote"]
    start = SHIPPING.index("Express")
    r3 = resolve_item(
        item(evidence=(EvidenceRef(doc_id="policy/shipping", start=start, end=start + 7,
                                   quote="Express"),)),
        CORPUS, None,
    )
    assert r3.problems == () and span_text(r3.spans[0]) == "Express"


def test_resolve_by_path() -> None:
    for path in ("policy/shipping.md", "./policy/shipping.md", "policy\\shipping.md"):
        ev = EvidenceRef(path=path, quote="Express takes 1 day.")
        r = resolve_item(item(evidence=(ev,)), CORPUS, None)
        assert r.problems == (), path
        assert r.spans[0][0] == "policy/shipping"
        assert span_text(r.spans[0]) == "Express takes 1 day."


def test_resolve_unknown_document() -> None:
    r = resolve_item(item(evidence=(EvidenceRef(path="nope.md", quote="x"),)), CORPUS, None)
    assert [p.field for p in r.problems] == ["evidence[0].path"]
    r = resolve_item(item(evidence=(EvidenceRef(doc_id="nope", quote="x"),)), CORPUS, None)
    assert [p.field for p in r.problems] == ["evidence[0].doc_id"]
    assert r.level == "orphan"


def _reference_chunks() -> dict[str, Chunk]:
    chunks = chunk_corpus(DOCS, ChunkSpec("sentence", 12, 0), RegexTokenizer())
    return {c.chunk_id: c for c in chunks}


def test_resolve_chunk_id_narrowed_to_mentions() -> None:
    ref = _reference_chunks()
    (cid,) = [cid for cid, c in ref.items() if "within 30 days" in c.text]
    target = ref[cid]
    r = resolve_item(
        item(relevant_chunk_ids=(cid,), answer_must_mention=("30 DAYS",)), CORPUS, ref
    )
    assert r.problems == ()
    assert r.source == "chunk_ids" and r.level == "span"
    (span,) = r.spans
    assert span_text(span).lower() == "30 days"
    assert target.start <= span[1] < span[2] <= target.end


def test_resolve_chunk_id_whole_chunk_without_mention() -> None:
    ref = _reference_chunks()
    (cid,) = [cid for cid, c in ref.items() if c.text.startswith("Refunds go back")]
    r = resolve_item(
        item(relevant_chunk_ids=(cid,), answer_must_mention=("never there",)), CORPUS, ref
    )
    assert r.spans == (("policy/refunds", ref[cid].start, ref[cid].end),)
    r2 = resolve_item(item(relevant_chunk_ids=(cid,)), CORPUS, ref)
    assert r2.spans == r.spans


def test_resolve_chunk_id_mention_several_times() -> None:
    ref = {"policy/refunds#0": chunk("policy/refunds", 0, 0, len(REFUNDS))}
    r = resolve_item(
        item(relevant_chunk_ids=("policy/refunds#0",), answer_must_mention=("30 days",)),
        CORPUS, ref,
    )
    assert [span_text(s) for s in r.spans] == ["30 days", "30 days"]
    assert r.spans[0][1] < r.spans[1][1]


def test_resolve_chunk_id_mention_offsets_after_case_expanding_character() -> None:
    """`str.lower()` turns "İ" into two characters; offsets of mentions found in the lowered
    text must still point at the mention in the original text."""
    doc = parse_document("tr.md", "İADE: Returns within 30 Days of delivery.")
    corpus = CorpusIndex([doc])
    ref = {"tr#0": chunk("tr", 0, 0, len(doc.text))}
    r = resolve_item(item(relevant_chunk_ids=("tr#0",), answer_must_mention=("30 days",)),
                     corpus, ref)
    ((_, start, end),) = r.spans
    assert doc.text[start:end] == "30 Days"


def test_resolve_unknown_chunk_id_names_index() -> None:
    ref = _reference_chunks()
    good = next(iter(ref))
    r = resolve_item(item(relevant_chunk_ids=(good, "policy/refunds#999")), CORPUS, ref)
    (p,) = r.problems
    assert (p.field, p.severity, p.line) == ("relevant_chunk_ids[1]", "error", 7)
    assert "policy/refunds#999" in p.message
    assert r.spans == ((ref[good].doc_id, ref[good].start, ref[good].end),)


def test_resolve_chunk_ids_without_reference() -> None:
    r = resolve_item(item(relevant_chunk_ids=("policy/refunds#1",)), CORPUS, None)
    assert r.level == "orphan"
    assert [p.field for p in r.problems] == ["relevant_chunk_ids"]
    assert "reference" in r.problems[0].message
    # with evidence too, the evidence wins and chunk ids are not needed
    ev = EvidenceRef(doc_id="policy/shipping", quote="Express")
    r2 = resolve_item(item(relevant_chunk_ids=("policy/refunds#1",), evidence=(ev,)), CORPUS, None)
    assert r2.problems == () and r2.source == "evidence"


def test_evidence_wins_over_chunk_ids() -> None:
    ref = _reference_chunks()
    ev = EvidenceRef(doc_id="policy/shipping", quote="Express")
    cid = next(iter(ref))
    r = resolve_item(item(relevant_chunk_ids=(cid,), evidence=(ev,)), CORPUS, ref)
    assert r.source == "evidence"
    assert [span_text(s) for s in r.spans] == ["Express"]


def test_resolve_doc_ids_only() -> None:
    r = resolve_item(item(relevant_doc_ids=("policy/shipping", "ghost")), CORPUS, None)
    assert r.spans == ()
    assert r.source == "doc_ids" and r.level == "doc"
    assert r.doc_ids == frozenset({"policy/shipping"})
    assert [p.field for p in r.problems] == ["relevant_doc_ids"]


def test_resolve_all_keeps_order() -> None:
    items = [item(qid="a", relevant_doc_ids=("policy/refunds",)),
             item(qid="b", evidence=(EvidenceRef(doc_id="policy/shipping", quote="Express"),))]
    resolved = resolve_all(items, CORPUS, None)
    assert [r.item.qid for r in resolved] == ["a", "b"]
    assert [r.level for r in resolved] == ["doc", "span"]


# --------------------------------------------------------------------------- is_relevant


def test_is_relevant_half_of_shorter() -> None:
    c = chunk("d", 0, 100, 200)  # 100 characters
    # span of 10 characters: 5 of them inside the chunk is exactly half -> relevant
    assert is_relevant(c, ("d", 195, 205), 0.5)
    assert not is_relevant(c, ("d", 196, 206), 0.5)  # 4 of 10
    # span longer than the chunk: the chunk is the shorter one
    assert is_relevant(c, ("d", 150, 400), 0.5)  # 50 of 100
    assert not is_relevant(c, ("d", 151, 400), 0.5)  # 49 of 100
    assert is_relevant(c, ("d", 0, 150), 0.5)
    assert not is_relevant(c, ("d", 0, 149), 0.5)
    # span inside the chunk: always relevant
    assert is_relevant(c, ("d", 120, 121), 0.5)
    # touching is not overlapping, even with a tiny threshold
    assert not is_relevant(c, ("d", 200, 210), 0.01)
    assert not is_relevant(c, ("d", 90, 100), 0.01)
    assert is_relevant(c, ("d", 196, 206), 0.4)
    assert not is_relevant(c, ("d", 120, 180), 1.0 + 1e-9)


def test_locator_overlapping() -> None:
    chunks = [chunk("d", 0, 0, 10), chunk("d", 1, 10, 20), chunk("d", 2, 25, 30),
              chunk("e", 0, 0, 50)]
    loc = ChunkLocator(chunks)
    assert [c.chunk_id for c in loc.overlapping("d", 5, 12)] == ["d#0", "d#1"]
    assert [c.chunk_id for c in loc.overlapping("d", 10, 25)] == ["d#1"]
    assert [c.chunk_id for c in loc.overlapping("d", 20, 25)] == []
    assert [c.chunk_id for c in loc.overlapping("d", 0, 100)] == ["d#0", "d#1", "d#2"]
    assert loc.overlapping("zzz", 0, 10) == []


def test_locator_with_overlapping_chunks() -> None:
    chunks = [chunk("d", 0, 0, 10), chunk("d", 1, 6, 16), chunk("d", 2, 12, 22)]
    loc = ChunkLocator(chunks)
    assert [c.chunk_id for c in loc.overlapping("d", 11, 13)] == ["d#1", "d#2"]
    assert [c.chunk_id for c in loc.overlapping("d", 7, 8)] == ["d#0", "d#1"]


def test_relevant_chunks_across_two_chunkings() -> None:
    tok = RegexTokenizer()
    quote = "Opened electronics cannot be returned"
    r = resolve_item(item(evidence=(EvidenceRef(doc_id="policy/refunds", quote=quote),)),
                     CORPUS, None)
    (span,) = r.spans
    for spec in (ChunkSpec("sentence", 8, 0), ChunkSpec("heading", 1000, 0),
                 ChunkSpec("fixed", 5, 0), ChunkSpec("fixed", 7, 3)):
        chunks = chunk_corpus(DOCS, spec, tok)
        ids = relevant_chunks(r.spans, ChunkLocator(chunks), 0.5)
        by_id = {c.chunk_id: c for c in chunks}
        assert ids, spec
        for cid in ids:
            assert by_id[cid].doc_id == "policy/refunds"
            assert is_relevant(by_id[cid], span, 0.5)
        # every chunk of the configuration that is not listed fails the rule
        for c in chunks:
            if c.chunk_id not in ids:
                assert not is_relevant(c, span, 0.5)
        # the listed chunks together hold the evidence
        covered = set()
        for cid in ids:
            covered |= set(range(by_id[cid].start, by_id[cid].end))
        inside = [p for p in range(span[1], span[2]) if not REFUNDS[p].isspace()]
        if spec.boundary != "fixed":
            assert set(inside) <= covered, spec

    # hand-checked: sentence chunks hold the whole sentence in one chunk; the big heading
    # chunk holds it too
    sentence = chunk_corpus(DOCS, ChunkSpec("sentence", 8, 0), tok)
    (cid,) = relevant_chunks(r.spans, ChunkLocator(sentence), 0.5)
    assert {c.chunk_id: c for c in sentence}[cid].text.startswith(quote)
    heading = chunk_corpus(DOCS, ChunkSpec("heading", 1000, 0), tok)
    (cid,) = relevant_chunks(r.spans, ChunkLocator(heading), 0.5)
    assert {c.chunk_id: c for c in heading}[cid].text.startswith("## Exceptions")


def test_relevant_chunks_first_seen_order_and_dedup() -> None:
    chunks = [chunk("d", 0, 0, 10), chunk("d", 1, 10, 20), chunk("e", 0, 0, 10)]
    loc = ChunkLocator(chunks)
    spans = [("e", 2, 4), ("d", 12, 14), ("d", 11, 19), ("d", 0, 3)]
    assert relevant_chunks(spans, loc, 0.5) == ["e#0", "d#1", "d#0"]


@pytest.mark.parametrize("min_overlap", [0.25, 0.5, 1.0])
def test_relevant_chunks_spanning_evidence(min_overlap: float) -> None:
    # evidence 10..30 over chunks [0,16) (6 chars) and [16,40) (14 chars)
    chunks = [chunk("d", 0, 0, 16), chunk("d", 1, 16, 40)]
    got = relevant_chunks([("d", 10, 30)], ChunkLocator(chunks), min_overlap)
    expected = {0.25: ["d#0", "d#1"], 0.5: ["d#1"], 1.0: []}[min_overlap]
    assert got == expected
