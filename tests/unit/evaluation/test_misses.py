"""Miss causes on hand-made cases: one case per cause, computed from spans and ranks."""

from __future__ import annotations

from typing import Any

from sweep.chunking.chunkers import Chunk
from sweep.evaluation.misses import (
    MISS_CAUSES,
    best_single_chunk_share,
    diagnose_misses,
    miss_cause,
    miss_views,
    truncation_cuts,
)
from sweep.retrieval.ranking import Ranking

TEXT = "".join(chr(ord("a") + i % 26) for i in range(100))


def chunk(ordinal: int, start: int, end: int, header: str = "") -> Chunk:
    body = TEXT[start:end]
    return Chunk(f"d#{ordinal}", "d", ordinal, start, end, body,
                 f"{header}\n\n{body}" if header else body, end - start)


def row(status: str = "scored", rank: int | None = None, **extra: Any) -> dict[str, Any]:
    return {"status": status, "first_relevant_rank": rank, **extra}


WHOLE = [chunk(0, 0, 100)]
HALVES = [chunk(0, 0, 50), chunk(1, 50, 100)]


def test_found_in_top_k_is_no_miss() -> None:
    assert miss_cause(row(rank=5), [("d", 10, 20)], WHOLE, WHOLE, 5, {}, True) is None


def test_orphan_keeps_its_reason() -> None:
    miss = miss_cause(row("orphan", orphan_reason="no chunk covers"), [("d", 10, 20)], [],
                      WHOLE, 5, {}, True)
    assert miss is not None and (miss.cause, miss.detail) == ("orphan", "no chunk covers")


def test_document_level_items_are_not_misses() -> None:
    assert miss_cause(row("doc_only"), [], [], [], 5, {}, True) is None


def test_truncated_when_the_evidence_lies_after_the_models_cut() -> None:
    spans = [("d", 60, 80)]
    miss = miss_cause(row(rank=9), spans, WHOLE, WHOLE, 5, {"d#0": 40}, True)
    assert miss is not None and miss.cause == "truncated"
    # Evidence starting before the cut is partly seen: not a truncation miss.
    miss = miss_cause(row(rank=9), [("d", 30, 80)], WHOLE, WHOLE, 5, {"d#0": 40}, True)
    assert miss is not None and miss.cause == "ranked_below_k"
    # BM25 alone reads every word: no model, no truncation.
    miss = miss_cause(row(rank=9), spans, WHOLE, WHOLE, 5, {"d#0": 40}, False)
    assert miss is not None and miss.cause == "ranked_below_k"


def test_evidence_split_across_a_boundary() -> None:
    spans = [("d", 30, 70)]  # 20 characters in each half: 50% < SPLIT_ENOUGH
    assert best_single_chunk_share(spans, HALVES) == 0.5
    miss = miss_cause(row(rank=7), spans, HALVES, HALVES, 5, {}, True)
    assert miss is not None and miss.cause == "evidence_split"
    assert "50%" in miss.detail
    # 35 of 40 characters in one chunk (87.5%) is enough: the miss is a ranking one.
    spans = [("d", 15, 55)]
    assert best_single_chunk_share(spans, HALVES) == 35 / 40
    miss = miss_cause(row(rank=7), spans, HALVES, HALVES, 5, {}, True)
    assert miss is not None and miss.cause == "ranked_below_k"


def test_ranked_below_k_keeps_the_rank() -> None:
    miss = miss_cause(row(rank=12), [("d", 10, 20)], WHOLE, WHOLE, 5, {}, True)
    assert miss is not None and (miss.cause, miss.detail) == ("ranked_below_k",
                                                              "first relevant at rank 12")


def test_never_retrieved_names_the_bm25_rank() -> None:
    miss = miss_cause(row(rank=None, bm25_first_relevant_rank=3), [("d", 10, 20)], WHOLE,
                      WHOLE, 5, {}, True)
    assert miss is not None and miss.cause == "never_retrieved"
    assert miss.detail == "BM25 finds it at rank 3"
    miss = miss_cause(row(rank=None), [("d", 10, 20)], WHOLE, WHOLE, 5, {}, True)
    assert miss is not None and miss.detail == "not in the ranked list"


def test_diagnose_counts_every_cause() -> None:
    rows = [row(rank=1, relevant_ids="d#0"), row(rank=None, relevant_ids="d#0"),
            row(rank=8, relevant_ids="d#0 d#1"), row("orphan", relevant_ids="")]
    spans = [[("d", 10, 20)], [("d", 10, 20)], [("d", 30, 70)], [("d", 10, 20)]]
    counts = diagnose_misses(rows, spans, HALVES, 5, {}, True)
    assert set(counts) == {f"n_miss_{c}" for c in MISS_CAUSES} | {"n_misses"}
    assert counts["n_miss_never_retrieved"] == 1
    assert counts["n_miss_evidence_split"] == 1
    assert counts["n_miss_orphan"] == 1
    assert counts["n_misses"] == 3
    assert [r["miss_cause"] for r in rows] == ["", "never_retrieved", "evidence_split",
                                                "orphan"]


def test_truncation_cut_skips_prefix_and_header() -> None:
    c = chunk(0, 20, 90, header="Title")  # embed_text = "Title\n\n" + body (7 characters)
    cuts = truncation_cuts([c, chunk(1, 0, 10)], [2 + 7 + 15, None], prefix_len=2)
    assert cuts == {"d#0": 20 + 15}


def test_a_quote_the_parser_lost_is_lost_in_parsing() -> None:
    miss = miss_cause(row("orphan", orphan_reason="not found in pypdf output"), [], [], [], 5,
                      {}, True)
    assert miss is not None and miss.cause == "lost_in_parsing"


def test_the_reason_the_resolver_stores_is_lost_in_parsing() -> None:
    """Failed before: the resolver names the evidence first ("evidence[0]: not found in html
    output"), the classifier matched only a reason starting "not found in", so a question
    the parser lost was blamed on its label."""
    from sweep.data.documents import Document
    from sweep.data.golden import EvidenceRef, GoldenItem
    from sweep.evaluation.relevance import CorpusIndex, resolve_item

    doc = Document(doc_id="page", title="Page", text="Install it with apt.", sections=(),
                   source="page.html", parser="html")
    item = GoldenItem("q1", "How?", evidence=(EvidenceRef(doc_id="page", quote="apt"),
                                              EvidenceRef(doc_id="page", quote="dpkg -i")))
    resolved = resolve_item(item, CorpusIndex([doc]), None)
    assert resolved.orphan_reason == "evidence[1]: not found in html output"
    miss = miss_cause(row("orphan", orphan_reason=resolved.orphan_reason), [], [], [], 5, {},
                      True)
    assert miss is not None and miss.cause == "lost_in_parsing"
    # Two parts, the parser's second: still the parser's loss.
    both = "evidence[0]: its document a.pdf was skipped: bad; evidence[1]: not found in pypdf output"
    assert miss_cause(row("orphan", orphan_reason=both), [], [], [], 5, {}, True).cause \
        == "lost_in_parsing"
    # A label that cannot be placed, or a skipped file alone, stays an orphan.
    for reason in ("evidence could not be placed in the corpus",
                   "evidence[0]: its document a.pdf was skipped: not found in the archive"):
        assert miss_cause(row("orphan", orphan_reason=reason), [], [], [], 5, {}, True).cause \
            == "orphan"


def test_a_question_the_index_lost_is_lost_by_index() -> None:
    r = row(rank=9, ann_flip="lost", exact_first_relevant_rank=2)
    miss = miss_cause(r, [("d", 10, 20)], WHOLE, WHOLE, 5, {}, True)
    assert miss is not None and miss.cause == "lost_by_index"
    assert miss.detail == "exact search ranks it 2, the index 9"


def test_view_hits_carry_each_retrievers_rank_and_who_found_them() -> None:
    chunks = [chunk(i, 10 * i, 10 * i + 10) for i in range(8)]
    final = Ranking((3, 0, 5), (0.9, 0.8, 0.7))
    dense = Ranking((0, 6, 7, 1, 3), (0.5,) * 5)  # 3 at rank 5: below the top 3
    bm25 = Ranking((5, 3, 0), (9.0, 8.0, 7.0))
    rows = [{"qid": "q", "question": "?", "status": "scored", "relevant_ids": "d#0",
             "first_relevant_rank": 2}]
    (view,) = miss_views(rows, [[("d", 0, 5)]], chunks, {"d": TEXT}, [final],
                         {"dense": [dense], "bm25": [bm25]}, 3, {})
    got = [(h["chunk_id"], h["found_by"], h["dense_rank"], h["bm25_rank"]) for h in view["hits"]]
    assert got == [("d#3", "bm25", 5, 2), ("d#0", "dense+bm25", 1, 3), ("d#5", "bm25", None, 1)]
    # no diagnostic ranking for this question: no ranks, found by nobody
    (view,) = miss_views(rows, [[("d", 0, 5)]], chunks, {"d": TEXT}, [final],
                         {"dense": [None]}, 3, {})
    assert [(h["found_by"], h["dense_rank"]) for h in view["hits"]] == [("", None)] * 3


def test_a_passage_shows_every_chunk_its_window_overlaps_in_document_order() -> None:
    """The segments of a passage are the chunks that end after its window starts and start
    before it ends, in the document's chunk order: found by bisection over a chunker's ordered
    bounds and by a comparison over nested units' bounds, both as a plain scan finds them."""
    import random

    rng = random.Random(7)
    text = TEXT * 5
    for ordered in (True, False):
        for _ in range(30):
            bounds, pos, size = [], 0, rng.randint(1, 60)
            while pos < len(text):  # a chunker's output: overlaps, no start or end decreases
                bounds.append((pos, min(len(text), pos + size)))
                pos += rng.randint(1, size)
            if not ordered:  # units around chunks: a long one nests shorter ones after it
                bounds += [(a, min(len(text), a + rng.randint(1, 200)))
                           for a in rng.sample(range(len(text)), 5)]
            chunks = [Chunk(f"d#{i}", "d", i, a, b, text[a:b], text[a:b], b - a)
                      for i, (a, b) in enumerate(bounds)]
            spans = []
            edges = [x for ab in bounds for x in ab]
            for _ in range(6):  # some windows start or end at a chunk's edge
                s = rng.choice([rng.randint(0, len(text) - 1), rng.choice(edges)])
                e = rng.choice([s + rng.randint(0, 40), rng.choice(edges)])
                spans.append(("d", s, min(len(text), max(s, e))))
            rows = [{"qid": "q", "question": "?", "status": "scored", "relevant_ids": "d#0"}]
            context = rng.choice([0, 0, 5, 40])
            (view,) = miss_views(rows, [spans], chunks, {"d": text},
                                 [Ranking((0,), (1.0,))], {}, 1, {}, context=context)
            for passage in view["passages"]:
                w0, w1 = passage["window"]
                want = [c.chunk_id for c in chunks if c.end > w0 and c.start < w1]
                assert [seg["chunk_id"] for seg in passage["chunks"]] == want


def test_split_share_reads_the_chunks_overlapping_the_evidence_ordered_or_nested() -> None:
    """diagnose_misses looks only at the chunks that overlap the evidence (a slice where the
    document's chunk bounds are ordered, every chunk where units nest): the share is the one
    `best_single_chunk_share` gives over all of the document's chunks."""
    ordered = [chunk(0, 0, 30), chunk(1, 30, 52), chunk(2, 52, 70), chunk(3, 70, 100)]
    nested = [chunk(0, 0, 100), chunk(1, 10, 40), chunk(2, 40, 60), chunk(3, 60, 100)]
    cases = [[("d", 25, 60)], [("d", 25, 60), ("d", 65, 75)], [("d", 52, 52), ("d", 35, 45)]]
    for chunks in (ordered, nested):
        for spans in cases:
            rows = [row(rank=None, relevant_ids="d#1")]
            diagnose_misses(rows, [spans], chunks, 5, {}, False)
            share = best_single_chunk_share(spans, chunks)
            want = ("evidence_split", f"no chunk holds more than {share:.0%} of the evidence") \
                if share < 0.8 else ("never_retrieved", "not in the ranked list")
            assert (rows[0]["miss_cause"], rows[0]["miss_detail"]) == want, (chunks, spans)
    # by hand: 25..60 (35 chars): d#1 holds 30..52 = 22 chars, 63%
    rows = [row(rank=None)]
    diagnose_misses(rows, [[("d", 25, 60)]], ordered, 5, {}, False)
    assert rows[0]["miss_detail"] == "no chunk holds more than 63% of the evidence"
