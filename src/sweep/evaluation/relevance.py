"""Relevance that survives re-chunking.

Chunk ids in a golden set name chunks of ONE chunking (the reference). Every item is therefore
resolved once to evidence *spans* of document text, and in each configuration a chunk is
relevant when it overlaps an evidence span by at least ``min_overlap`` of the shorter of the two.

Resolution order per item:
1. explicit ``evidence`` (a span, or a quote found verbatim; whitespace-normalised as fallback);
2. else ``relevant_chunk_ids`` mapped to their spans in the reference chunking, narrowed to the
   ``answer_must_mention`` occurrences inside them when there are any;
3. else ``relevant_doc_ids``: document-level metrics only.
An item that none of these places is an orphan: counted and listed, never scored.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import Document
from sweep.data.golden import EvidenceRef, GoldenItem, Problem

Span = tuple[str, int, int]


@dataclass(frozen=True)
class ResolvedItem:
    item: GoldenItem
    spans: tuple[Span, ...]
    doc_ids: frozenset[str]
    source: str  # evidence | chunk_ids | doc_ids | none
    problems: tuple[Problem, ...] = ()

    @property
    def level(self) -> str:
        """``span`` (chunk- and doc-level metrics), ``doc`` (doc-level only) or ``orphan``."""
        if self.spans:
            return "span"
        return "doc" if self.doc_ids else "orphan"


class CorpusIndex:
    """Look documents up by ``doc_id`` or by their corpus-relative path."""

    def __init__(self, docs: Sequence[Document]) -> None:
        self.by_id = {d.doc_id: d for d in docs}
        self.by_path = {d.source: d for d in docs}

    def find(self, ref: EvidenceRef) -> Document | None:
        if ref.doc_id is not None:
            return self.by_id.get(ref.doc_id)
        path = (ref.path or "").replace("\\", "/").removeprefix("./")
        return self.by_path.get(path)


def locate_quote(text: str, quote: str) -> tuple[int, int, str, int] | None:
    """Find ``quote`` in ``text``: ``(start, end, how, occurrences)`` or None.

    ``how`` is ``exact`` or ``whitespace`` (runs of whitespace matched loosely, for quotes
    copied across line wraps). With several occurrences the first is used; the caller warns.
    """
    start = text.find(quote)
    if start >= 0:
        return start, start + len(quote), "exact", text.count(quote)
    words = quote.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    matches = list(pattern.finditer(text))
    if not matches:
        return None
    return matches[0].start(), matches[0].end(), "whitespace", len(matches)


def _mention_spans(doc: Document, start: int, end: int, mentions: Sequence[str]) -> list[Span]:
    """Every case-insensitive occurrence of each mention inside ``[start, end)``.

    Matched on the original text (not on a lowercased copy, whose offsets drift after
    characters such as "İ" that lowercase to two characters); overlapping matches kept.
    """
    body = doc.text[start:end]
    spans = []
    for mention in mentions:
        pattern = re.compile("(?=(" + re.escape(mention) + "))", re.IGNORECASE)
        for m in pattern.finditer(body):
            spans.append((doc.doc_id, start + m.start(1), start + m.end(1)))
    return spans


def resolve_item(
    item: GoldenItem,
    corpus: CorpusIndex,
    reference_chunks: Mapping[str, Chunk] | None,
    file: str = "golden",
) -> ResolvedItem:
    problems: list[Problem] = []

    def add(field: str, message: str, severity: str = "error") -> None:
        problems.append(Problem(file, item.line, field, message, severity))

    spans: list[Span] = []
    for i, ref in enumerate(item.evidence):
        name = f"evidence[{i}]"
        doc = corpus.find(ref)
        if doc is None:
            what = f"doc_id {ref.doc_id!r}" if ref.doc_id is not None else f"path {ref.path!r}"
            add(f"{name}.{'doc_id' if ref.doc_id is not None else 'path'}",
                f"{what} is not in the corpus")
            continue
        if ref.start is not None and ref.end is not None:
            if ref.end > len(doc.text):
                add(f"{name}.end", f"{ref.end} is past the end of {doc.doc_id} "
                    f"({len(doc.text)} characters)")
                continue
            if ref.quote is not None and doc.text[ref.start:ref.end] != ref.quote:
                add(f"{name}.quote", f"text at {ref.start}:{ref.end} of {doc.doc_id} is "
                    f"{doc.text[ref.start:ref.end][:40]!r}, not the quote")
                continue
            spans.append((doc.doc_id, ref.start, ref.end))
        elif ref.quote is not None:
            found = locate_quote(doc.text, ref.quote)
            if found is None:
                add(f"{name}.quote", f"not found in {doc.doc_id}: {ref.quote[:60]!r}")
                continue
            start, end, how, count = found
            if how != "exact":
                add(f"{name}.quote", f"found in {doc.doc_id} only with whitespace "
                    "normalised", "warning")
            if count > 1:
                add(f"{name}.quote", f"occurs {count} times in {doc.doc_id}; the first is "
                    "used (quote more text to make it unique)", "warning")
            spans.append((doc.doc_id, start, end))
    source = "evidence" if spans else "none"

    if item.relevant_chunk_ids:
        if reference_chunks is None:
            if not spans:
                add("relevant_chunk_ids", "chunk ids need the reference chunking they were "
                    "labelled with: add a *.reference.yaml next to the golden file, or give "
                    "`evidence`")
        else:
            chunk_spans: list[Span] = []
            for i, cid in enumerate(item.relevant_chunk_ids):
                chunk = reference_chunks.get(cid)
                if chunk is None:
                    add(f"relevant_chunk_ids[{i}]",
                        f"{cid!r} does not exist under the reference chunking")
                    continue
                doc = corpus.by_id[chunk.doc_id]
                narrowed = _mention_spans(doc, chunk.start, chunk.end, item.answer_must_mention)
                chunk_spans.extend(narrowed or [(chunk.doc_id, chunk.start, chunk.end)])
            if not spans and chunk_spans:
                spans, source = chunk_spans, "chunk_ids"

    doc_ids = set(item.relevant_doc_ids)
    unknown_docs = [d for d in item.relevant_doc_ids if d not in corpus.by_id]
    for d in unknown_docs:
        add("relevant_doc_ids", f"{d!r} is not in the corpus")
    doc_ids -= set(unknown_docs)
    if source == "none" and doc_ids:
        source = "doc_ids"
    doc_ids |= {s[0] for s in spans}
    return ResolvedItem(item, tuple(spans), frozenset(doc_ids), source, tuple(problems))


def resolve_all(
    items: Sequence[GoldenItem],
    corpus: CorpusIndex,
    reference_chunks: Mapping[str, Chunk] | None,
    file: str = "golden",
) -> list[ResolvedItem]:
    return [resolve_item(item, corpus, reference_chunks, file) for item in items]


class ChunkLocator:
    """The chunks of one configuration, indexed for span overlap queries."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.by_doc: dict[str, list[Chunk]] = {}
        for chunk in chunks:
            self.by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self._ends = {d: [c.end for c in cs] for d, cs in self.by_doc.items()}
        self._starts = {d: [c.start for c in cs] for d, cs in self.by_doc.items()}
        # Returned units (sweep.retrieval.units) may nest, so their ends are not sorted.
        self._nested = {d for d, ends in self._ends.items()
                        if any(a > b for a, b in pairwise(ends))}

    def overlapping(self, doc_id: str, start: int, end: int) -> list[Chunk]:
        chunks = self.by_doc.get(doc_id, [])
        if doc_id in self._nested:
            return [c for c in chunks if c.start < end and start < c.end]
        # Chunks are in document order with non-decreasing starts and ends.
        lo = bisect_right(self._ends.get(doc_id, []), start)
        hi = bisect_left(self._starts.get(doc_id, []), end)
        return chunks[lo:hi]


def is_relevant(chunk: Chunk, span: Span, min_overlap: float) -> bool:
    """Overlap of at least ``min_overlap`` of the shorter of chunk and span (and > 0)."""
    _, start, end = span
    overlap = min(chunk.end, end) - max(chunk.start, start)
    if overlap <= 0:
        return False
    return overlap >= min_overlap * min(chunk.end - chunk.start, end - start)


def relevant_chunks(spans: Sequence[Span], locator: ChunkLocator, min_overlap: float) -> list[str]:
    """Chunk ids relevant to any of ``spans`` under one chunking, in first-seen order."""
    out: dict[str, None] = {}
    for span in spans:
        for chunk in locator.overlapping(*span):
            if is_relevant(chunk, span, min_overlap):
                out.setdefault(chunk.chunk_id, None)
    return list(out)
