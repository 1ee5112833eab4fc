"""Why a question was missed: one computed cause per question, from spans and ranks.

A question is *missed* when no relevant chunk is among the top ``prompt_k`` (what the model
reads). Its cause is the first of these that holds, in this order:

* ``lost_in_parsing``: a quote of its evidence is not in the parser's output (the parser axis:
  the question is an orphan of this configuration, with the reason);
* ``orphan``: no chunk of this configuration covers its evidence, or the evidence could not be
  placed (the reason is kept);
* ``truncated``: every relevant chunk is longer than the embedding model reads
  (``max_seq_length``) and the evidence lies wholly in the part the model never saw (dense
  and hybrid retrieval only: BM25 reads every word);
* ``evidence_split``: the evidence straddles a chunk boundary and no single chunk holds at
  least `SPLIT_ENOUGH` of any evidence span;
* ``lost_by_index``: exact search over the same vectors had a relevant chunk in the top k and
  the approximate index did not (the index axis);
* ``ranked_below_k``: a relevant chunk is in the ranked list, below ``prompt_k`` (the seed's
  "add a reranker" case; the rank is kept);
* ``never_retrieved``: no relevant chunk in the ranked list at all (the seed's "hybrid search or
  a better embedding" case; the BM25 rank is kept when the diagnosis BM25 list finds it).

Each cause is a function of the question's evidence spans, the configuration's chunks and the
ranked list, so the same inputs always give the same cause.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from sweep.chunking.chunkers import Chunk

MISS_CAUSES: tuple[str, ...] = ("lost_in_parsing", "orphan", "truncated", "evidence_split",
                                "lost_by_index", "ranked_below_k", "never_retrieved")

# "Enough" of an evidence span for one chunk to hold it: below this share of the span in every
# chunk, the boundary has cut the passage apart.
SPLIT_ENOUGH = 0.8

Span = tuple[str, int, int]

# How `relevance.resolve` words a quote a parser's output lacks: one part per piece of
# evidence, each named first ("evidence[0]: not found in pypdf output; evidence[2]: ...").
_PARSER_LOST = re.compile(r"(?:^|; )(?:[^;:]+: )?not found in [^;]+ output(?:;|$)")


def lost_by_parser(reason: str) -> bool:
    """Whether an orphan's reason says a parser's output lacks a quote of its evidence (the
    parser lost it), rather than that the label cannot be placed."""
    return bool(_PARSER_LOST.search(reason))


@dataclass(frozen=True)
class Miss:
    cause: str
    detail: str


def _overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    return max(0, min(a1, b1) - max(a0, b0))


def best_single_chunk_share(spans: Sequence[Span], chunks: Sequence[Chunk]) -> float:
    """The largest share of one evidence span that one chunk holds (0 when there is none)."""
    best = 0.0
    for doc_id, s, e in spans:
        if e <= s:
            continue
        length = e - s
        for c in chunks:  # a miss reads every chunk of its documents: kept to plain compares
            if c.doc_id == doc_id:
                held = min(e, c.end) - max(s, c.start)
                if held > 0 and held / length > best:
                    best = held / length
    return best


def unseen_by_model(spans: Sequence[Span], chunk: Chunk, cut: int | None) -> bool:
    """True when the model stops reading ``chunk`` at document offset ``cut`` and none of the
    evidence inside the chunk lies before it."""
    if cut is None or cut >= chunk.end:
        return False
    inside = [(max(s, chunk.start), min(e, chunk.end)) for d, s, e in spans
              if d == chunk.doc_id and _overlap(s, e, chunk.start, chunk.end)]
    return bool(inside) and all(s >= cut for s, _ in inside)


def miss_cause(row: Mapping[str, Any], spans: Sequence[Span], relevant: Sequence[Chunk],
               doc_chunks: Sequence[Chunk], prompt_k: int, cuts: Mapping[str, int],
               model_reads: bool) -> Miss | None:
    """The cause of one question's miss, or None when it was found in the top ``prompt_k``.

    ``row`` is the question's per_question row (status, ranks); ``relevant`` its relevant
    chunks in this configuration; ``doc_chunks`` the chunks of the documents its evidence is in
    (those that overlap the evidence suffice: no other holds any of it);
    ``cuts`` the document offset at which the embedding model stops reading each truncated
    chunk (by chunk id); ``model_reads`` whether an embedding model ranks this configuration.
    """
    if row.get("status") == "orphan":
        reason = str(row.get("orphan_reason", ""))
        return Miss("lost_in_parsing" if lost_by_parser(reason) else "orphan", reason)
    if row.get("status") != "scored":
        return None  # document-level items have no chunk evidence to miss
    rank = row.get("first_relevant_rank")
    if rank is not None and rank <= prompt_k:
        return None
    if model_reads and relevant and all(unseen_by_model(spans, c, cuts.get(c.chunk_id))
                                        for c in relevant):
        return Miss("truncated", f"evidence after the model's cut in {len(relevant)} "
                                 "relevant chunk(s)")
    share = best_single_chunk_share(spans, doc_chunks)
    if share < SPLIT_ENOUGH:
        return Miss("evidence_split", f"no chunk holds more than {share:.0%} of the evidence")
    if row.get("ann_flip") == "lost":
        return Miss("lost_by_index", f"exact search ranks it {row.get('exact_first_relevant_rank')}"
                                     f", the index {rank}")
    if rank is not None:
        return Miss("ranked_below_k", f"first relevant at rank {rank}")
    bm25 = row.get("bm25_first_relevant_rank")
    return Miss("never_retrieved", f"BM25 finds it at rank {bm25}" if bm25 is not None
                else "not in the ranked list")


class _Overlapping:
    """The chunks of a document overlapping a window ``(a, b)`` (ending after ``a``, starting
    before ``b``), in the document's chunk order. Where a document's starts and ends both never
    decrease (a chunker's output) they are one slice, found by bisection; otherwise (nested
    units) one comparison over arrays of the bounds."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            by_doc.setdefault(c.doc_id, []).append(c)
        self.by_doc = by_doc
        self.bounds: dict[str, tuple[Any, Any, bool]] = {}
        for d, cs in by_doc.items():
            starts, ends = [c.start for c in cs], [c.end for c in cs]
            if all(a <= b for a, b in pairwise(starts)) and all(a <= b for a, b in pairwise(ends)):
                self.bounds[d] = (starts, ends, True)
            else:
                self.bounds[d] = (np.array(starts), np.array(ends), False)

    def __call__(self, doc_id: str, a: int, b: int) -> list[Chunk]:
        doc_chunks = self.by_doc.get(doc_id)
        if not doc_chunks:
            return []
        starts, ends, ordered = self.bounds[doc_id]
        if ordered:
            return doc_chunks[bisect_right(ends, a):bisect_left(starts, b)]
        return [doc_chunks[j] for j in np.flatnonzero((ends > a) & (starts < b))]


def diagnose_misses(rows: list[dict[str, Any]], spans_by_row: Sequence[Sequence[Span]],
                    chunks: Sequence[Chunk], prompt_k: int, cuts: Mapping[str, int],
                    model_reads: bool) -> dict[str, float]:
    """Add ``miss_cause`` and ``miss_detail`` to every row; return ``n_miss_<cause>`` counts
    (every cause, zeros included) and ``n_misses``."""
    by_id = {c.chunk_id: c for c in chunks}
    overlapping = _Overlapping(chunks)

    def holding(spans: Sequence[Span]) -> list[Chunk]:
        """The chunks overlapping the evidence: the only ones that hold any of it
        (`best_single_chunk_share`)."""
        return [c for doc_id, s, e in spans for c in overlapping(doc_id, s, e)]

    counts = dict.fromkeys(MISS_CAUSES, 0)
    for row, spans in zip(rows, spans_by_row, strict=True):
        rank = row.get("first_relevant_rank")
        if row.get("status") == "scored" and (rank is None or rank > prompt_k):
            relevant = [by_id[i] for i in str(row.get("relevant_ids", "")).split() if i in by_id]
            doc_chunks = holding(spans)
        else:  # `miss_cause` reads neither: an orphan, a document-level item or a hit
            relevant = doc_chunks = []
        miss = miss_cause(row, spans, relevant, doc_chunks, prompt_k, cuts, model_reads)
        row["miss_cause"] = miss.cause if miss else ""
        row["miss_detail"] = miss.detail if miss else ""
        if miss:
            counts[miss.cause] += 1
    out = {f"n_miss_{c}": float(n) for c, n in counts.items()}
    out["n_misses"] = float(sum(counts.values()))
    return out


def truncation_cuts(chunks: Sequence[Chunk], kept_chars: Sequence[int | None],
                    prefix_len: int = 0) -> dict[str, int]:
    """Document offset where the model stops reading each truncated chunk.

    ``kept_chars[i]`` is how many characters of the text the model was given (document prefix +
    ``embed_text``) it read, or None when it read all of it. The header sits before the body in
    ``embed_text``, so the body's share starts after ``len(embed_text) - len(text)`` characters.
    """
    cuts = {}
    for c, kept in zip(chunks, kept_chars, strict=True):
        if kept is None:
            continue
        header = len(c.embed_text) - len(c.text)
        cuts[c.chunk_id] = c.start + max(0, kept - prefix_len - header)
    return cuts


def _ranks_of(indices: Sequence[int], wanted: Sequence[int]) -> dict[int, int]:
    """The 1-based rank in ``indices`` of each of ``wanted`` it holds (a ranking's indices are
    distinct). Only the shown chunks are looked up: a diagnostic ranking is ``retrieval.depth``
    long, and mapping all of it for every question was most of the view's cost."""
    ranks: dict[int, int] = {}
    for i in wanted:
        try:  # one scan of the ranking (a test with `in` first made two)
            rank = indices.index(i) + 1
        except ValueError:
            continue
        ranks[i] = rank
    return ranks


def miss_views(rows: Sequence[Mapping[str, Any]], spans_by_row: Sequence[Sequence[Span]],
               chunks: Sequence[Chunk], texts: Mapping[str, str],
               rankings: Sequence[Any], diagnostics: Mapping[str, Sequence[Any]],
               prompt_k: int, cuts: Mapping[str, int], context: int = 240,
               top: int | None = None, pages: Mapping[str, Sequence[int]] | None = None
               ) -> list[dict[str, Any]]:
    """Plain data for the per-question view: the question, its cause, the top list with who
    found each chunk, and each evidence passage with the chunk boundaries around it.

    ``texts`` maps doc_id to document text; ``rankings`` are the final rankings (chunk indices
    and scores); ``diagnostics`` the dense and BM25 lists of the same questions. Only a window
    of ``context`` characters around each evidence span is kept, so the view of a large corpus
    stays small. ``pages`` maps the doc_id of a PDF to the offset where each page starts:
    its hits and passages then name their page ("page" is None elsewhere).
    """
    pages = pages or {}

    def page(doc_id: str, offset: int) -> int | None:
        starts = pages.get(doc_id)
        return max(1, bisect_right(starts, offset)) if starts else None

    top = top or prompt_k
    window_chunks = _Overlapping(chunks)  # a passage's chunks, in the document's order

    # What a hit and a segment show of a chunk, made once per chunk (a chunk is shown for many
    # questions): its id, tokens, heading path, page, and header (a segment's).
    shown_parts: dict[int, tuple[str, int, str, int | None]] = {}
    headers: dict[int, str] = {}  # by id(): the chunks are alive for the call

    def parts(i: int) -> tuple[str, int, str, int | None]:
        got = shown_parts.get(i)
        if got is None:
            c = chunks[i]
            got = shown_parts[i] = (c.chunk_id, c.n_tokens, " > ".join(c.heading_path),
                                    page(c.doc_id, c.start))
        return got

    def header(c: Chunk) -> str:
        got = headers.get(id(c))
        if got is None:
            got = headers[id(c)] = c.embed_text[: len(c.embed_text) - len(c.text)].strip()
        return got

    rank_keys = [(name, f"{name}_rank") for name in diagnostics]
    views = []
    for n, (row, spans) in enumerate(zip(rows, spans_by_row, strict=True)):
        relevant = set(str(row.get("relevant_ids", "")).split())
        ranking = rankings[n]
        shown_ix = ranking.indices[:top]
        # Each retriever's own rank of each shown chunk; "found by" = in that retriever's top k.
        ranks: dict[str, dict[int, int]] = {}
        for name, lists in diagnostics.items():
            other = lists[n] if lists else None
            ranks[name] = _ranks_of(other.indices, shown_ix) if other is not None else {}
        hits = []
        for rank, (i, score) in enumerate(zip(shown_ix, ranking.scores[:top], strict=True),
                                          start=1):
            chunk_id, n_tokens, heading, hit_page = parts(i)
            by = [name for name, rk in ranks.items() if rk.get(i, top + 1) <= top]
            hit = {"rank": rank, "chunk_id": chunk_id, "score": float(score),
                   "found_by": "+".join(by), "relevant": chunk_id in relevant,
                   "n_tokens": n_tokens, "heading": heading, "page": hit_page}
            for name, key in rank_keys:
                hit[key] = ranks[name].get(i)
            hits.append(hit)
        passages = []
        for doc_id, s, e in spans:
            text = texts.get(doc_id, "")
            w0, w1 = max(0, s - context), min(len(text), e + context)
            segs = [{"chunk_id": c.chunk_id, "start": max(c.start, w0), "end": min(c.end, w1),
                     "n_tokens": c.n_tokens, "header": header(c),
                     "relevant": c.chunk_id in relevant, "cut": cuts.get(c.chunk_id)}
                    for c in window_chunks(doc_id, w0, w1)]
            passages.append({"doc_id": doc_id, "page": page(doc_id, s),
                             "window": [w0, w1], "evidence": [s, e],
                             "text": text[w0:w1], "chunks": segs})
        views.append({
            "qid": row.get("qid"), "question": row.get("question"),
            "status": row.get("status"), "cause": row.get("miss_cause", ""),
            "detail": row.get("miss_detail", ""),
            "first_relevant_rank": row.get("first_relevant_rank"),
            "dense_rank": row.get("dense_first_relevant_rank"),
            "bm25_rank": row.get("bm25_first_relevant_rank"),
            "hits": hits, "passages": passages,
        })
    return views
