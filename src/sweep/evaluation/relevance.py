"""Relevance that survives re-chunking.

Chunk ids in a golden set name chunks of ONE chunking (the reference). Every item is therefore
resolved once to evidence *spans* of document text, and in each configuration a chunk is
relevant when it overlaps an evidence span by at least ``min_overlap`` of the shorter of the two.

Resolution order per item:
1. explicit ``evidence`` (a span, or a quote located in levels by `sweep.data.quotes`: exact,
   whitespace-normalised, loose, across blocks; a quote without a document is searched in every
   document);
2. else ``relevant_chunk_ids`` mapped to their spans in the reference chunking, narrowed to the
   ``answer_must_mention`` occurrences inside them when there are any;
3. else ``relevant_doc_ids``: document-level metrics only.
An item that none of these places is an orphan: counted and listed, never scored. A quote that
cannot be located in a parser's output (PDF, HTML, DOCX) makes its item an orphan of that
configuration ("not found in pypdf output"), a warning, not an error: the golden set is right,
that parser lost the text.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import Document
from sweep.data.golden import EvidenceRef, GoldenItem, Problem
from sweep.data.quotes import LEVELS, QuoteIndex

Span = tuple[str, int, int]


@dataclass(frozen=True)
class ResolvedItem:
    item: GoldenItem
    spans: tuple[Span, ...]
    doc_ids: frozenset[str]
    source: str  # evidence | chunk_ids | doc_ids | none
    problems: tuple[Problem, ...] = ()
    # One entry per quote in `evidence`: the level it was found at (exact | normalised |
    # loose | blocks) or "missing".
    quote_levels: tuple[str, ...] = ()
    orphan_reason: str = ""  # set when a quote was not found in a parser's output
    # The item's passages: groups of indexes into ``spans``, one group per place its answer
    # lives in (`group_passages`); empty for an item without spans.
    passages: tuple[tuple[int, ...], ...] = ()

    @property
    def needs(self) -> str:
        """``all`` (every passage makes the answer, the default) or ``any`` (alternatives)."""
        return self.item.needs or "all"

    @property
    def passage_groups(self) -> tuple[tuple[int, ...], ...]:
        """``passages``; an item built without them (by hand, in code) has one passage per
        span."""
        return self.passages or tuple((i,) for i in range(len(self.spans)))

    @property
    def passages_needed(self) -> int:
        """How many passages an answer needs: all of them, or one for ``needs: any``; 0 for an
        item without spans."""
        if not self.spans:
            return 0
        return 1 if self.needs == "any" else len(self.passage_groups)

    def passage_spans(self) -> list[list[Span]]:
        """The spans of each passage."""
        return [[self.spans[i] for i in group] for group in self.passage_groups]

    @property
    def level(self) -> str:
        """``span`` (chunk- and doc-level metrics), ``doc`` (doc-level only) or ``orphan``."""
        if self.spans:
            return "span"
        return "doc" if self.doc_ids else "orphan"


class CorpusIndex:
    """Look documents up by ``doc_id`` or by their corpus-relative path; find quotes."""

    def __init__(self, docs: Sequence[Document], skipped: Mapping[str, str] | None = None
                 ) -> None:
        """``skipped``: doc_id or path -> why the loader skipped that file (on_error=skip)."""
        self.skipped = dict(skipped or {})
        self.by_id = {d.doc_id: d for d in docs}
        self.by_path = {d.source: d for d in docs}
        self.quotes = QuoteIndex({d.doc_id: d.text for d in docs})
        self.parsers = sorted({d.parser for d in docs if d.parser})

    def find(self, ref: EvidenceRef) -> Document | None:
        if ref.doc_id is not None:
            return self.by_id.get(ref.doc_id)
        path = (ref.path or "").replace("\\", "/").removeprefix("./")
        return self.by_path.get(path)


def locate_quote(text: str, quote: str) -> tuple[int, int, str, int] | None:
    """Find ``quote`` in ``text``: ``(start, end, level, occurrences)`` or None.

    ``level`` is one of `sweep.data.quotes.LEVELS` (exact, normalised, loose). With several
    occurrences the first is used; the caller warns.
    """
    level, places = QuoteIndex({"": text}).find(quote)
    if level is None:
        return None
    return places[0].start, places[0].end, level, len(places)


_LEVEL_WORDS = {"normalised": "only with whitespace normalised",
                "loose": "only at the loose level (quotes, dashes, hyphens, markup and spaces "
                         "ignored)",
                "blocks": "only across a block boundary (the loose level with code fences and "
                          "shell prompts such as '$ ' or '# ' also ignored)"}


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
    levels: list[str] = []
    missing: list[str] = []  # "evidence[i]: not found in <parser> output"

    def place(ref: EvidenceRef, doc: Document | None, name: str) -> None:
        located = _locate(ref, doc, corpus, name, add, missing)
        levels.append(located[0] if located else "missing")
        if located:
            spans.append(located[1])

    for i, ref in enumerate(item.evidence):
        name = f"evidence[{i}]"
        if ref.doc_id is None and ref.path is None:  # a quote alone: searched everywhere
            place(ref, None, name)
            continue
        doc = corpus.find(ref)
        gone = corpus.skipped.get(ref.doc_id if ref.doc_id is not None else (ref.path or ""))
        if doc is None and gone is not None:
            # The file is in the corpus folder but could not be read: an orphan of this run,
            # with the loader's reason, never "not in the corpus" (which says the label is
            # wrong) and never a silent zero.
            missing.append(f"{name}: its document {gone}")
            if ref.quote is not None:
                levels.append("missing")
            add(f"{name}.{'doc_id' if ref.doc_id is not None else 'path'}",
                f"its document {gone}", "warning")
            continue
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
                if doc.parser:  # offsets saved under another parser: the quote decides
                    place(ref, doc, name)
                    continue
                add(f"{name}.quote", f"text at {ref.start}:{ref.end} of {doc.doc_id} is "
                    f"{doc.text[ref.start:ref.end][:40]!r}, not the quote")
                continue
            if ref.quote is not None:
                levels.append("exact")
            spans.append((doc.doc_id, ref.start, ref.end))
        elif ref.quote is not None:
            place(ref, doc, name)
    if missing:
        spans = []  # an item is scored on all of its evidence or not at all
    source = "evidence" if spans else "none"

    if item.relevant_chunk_ids:
        if reference_chunks is None:
            if not spans:
                add("relevant_chunk_ids", "chunk ids need the reference chunking they were "
                    "labelled with: add a *.reference.yaml next to the golden file, or give "
                    "`evidence`")
        else:
            chunk_spans: list[Span] = []
            chunk_origin: list[int] = []
            for i, cid in enumerate(item.relevant_chunk_ids):
                chunk = reference_chunks.get(cid)
                if chunk is None:
                    add(f"relevant_chunk_ids[{i}]",
                        f"{cid!r} does not exist under the reference chunking")
                    continue
                doc = corpus.by_id[chunk.doc_id]
                narrowed = _mention_spans(doc, chunk.start, chunk.end, item.answer_must_mention)
                placed = narrowed or [(chunk.doc_id, chunk.start, chunk.end)]
                chunk_spans.extend(placed)
                chunk_origin.extend([i] * len(placed))
            if not spans and chunk_spans:
                spans, source = chunk_spans, "chunk_ids"

    doc_ids = set(item.relevant_doc_ids)
    unknown_docs = [d for d in item.relevant_doc_ids if d not in corpus.by_id]
    for d in unknown_docs:
        if d in corpus.skipped:
            missing.append(f"relevant_doc_ids: {corpus.skipped[d]}")
            add("relevant_doc_ids", f"{d!r}: {corpus.skipped[d]}", "warning")
        else:
            add("relevant_doc_ids", f"{d!r} is not in the corpus")
    doc_ids -= set(unknown_docs)
    if source == "none" and doc_ids:
        source = "doc_ids"
    doc_ids |= {s[0] for s in spans}
    if missing:  # an orphan of this configuration, whatever else the item names
        return ResolvedItem(item, (), frozenset(), "none", tuple(problems), tuple(levels),
                            "; ".join(missing))
    texts = {d: corpus.by_id[d].text for d in {s[0] for s in spans}}
    groups = group_passages(spans, texts, chunk_origin if source == "chunk_ids" else None)
    return ResolvedItem(item, tuple(spans), frozenset(doc_ids), source, tuple(problems),
                        tuple(levels), passages=groups)


# A blank line: the paragraph break that separates two places in a document.
PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")


def paragraph_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The stretch of ``text`` around ``[start, end)`` up to the nearest paragraph breaks
    (blank lines) on either side, or the text's ends: the place `group_passages` groups by."""
    # Backwards line by line (a regex scan from the text's start would be quadratic over a
    # long document's spans): a break ends at a newline whose line above is blank.
    first, line_end = 0, text.rfind("\n", 0, start)
    while line_end > 0:
        line_start = text.rfind("\n", 0, line_end)
        if line_start >= 0 and not text[line_start + 1:line_end].strip(" \t\r\f\v"):
            first = line_end + 1
            break
        line_end = line_start
    after = PARAGRAPH_BREAK.search(text, end)
    return first, (after.start() if after else len(text))


def group_passages(spans: Sequence[Span], texts: Mapping[str, str],
                   origin: Sequence[int] | None = None) -> tuple[tuple[int, ...], ...]:
    """Group an item's evidence spans into passages: the places its answer lives in.

    Two spans are in the same place when they are in the same document and no paragraph
    break (a blank line) lies between them: they overlap, touch, or the text from the end of
    the first to the start of the second holds no blank line. Spans with the same ``origin``
    (the labelled reference chunk that the ``answer_must_mention`` occurrences were narrowed
    from) start as one place. The relation is closed transitively (three sentences of one
    paragraph are one passage). Returns groups of indexes into ``spans``, each sorted, in the
    order of their first span.
    """
    parent = list(range(len(spans)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(a: int, b: int) -> None:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    if origin is not None:
        first: dict[int, int] = {}
        for i, o in enumerate(origin):
            join(first.setdefault(o, i), i)
    by_doc: dict[str, list[int]] = {}
    for i, (doc_id, _, _) in enumerate(spans):
        by_doc.setdefault(doc_id, []).append(i)
    for doc_id, ix in by_doc.items():
        ix.sort(key=lambda i: (spans[i][1], spans[i][2]))
        text = texts.get(doc_id, "")
        reach, last = spans[ix[0]][2], ix[0]  # the furthest end so far, and whose it is
        for i in ix[1:]:
            _, start, end = spans[i]
            if start <= reach or not PARAGRAPH_BREAK.search(text, reach, start):
                join(last, i)
            if end > reach:
                reach, last = end, i
    groups: dict[int, list[int]] = {}
    for i in range(len(spans)):
        groups.setdefault(root(i), []).append(i)
    return tuple(tuple(g) for g in sorted(groups.values(), key=lambda g: g[0]))


def _locate(ref: EvidenceRef, doc: Document | None, corpus: CorpusIndex, name: str, add: Any,
            missing: list[str]) -> tuple[str, Span] | None:
    """Place ``ref.quote`` in ``doc`` (every document when None): ``(level, span)``, or None
    after recording why (an error for markdown, an orphan reason for a parser's output)."""
    quote = ref.quote or ""
    level, places = corpus.quotes.find(quote, None if doc is None else [doc.doc_id])
    where = doc.doc_id if doc is not None else "the corpus"
    if level is None:
        parsers = ([doc.parser] if doc.parser else []) if doc is not None else corpus.parsers
        if parsers:
            reason = f"not found in {'/'.join(parsers)} output"
            missing.append(f"{name}: {reason}")
            # Said as the parser's loss, not the label's: the quote is usually right (a
            # section the HTML parser dropped whole), and another parser may keep it.
            add(f"{name}.quote", f"{reason} ({where}): {quote[:60]!r}: the "
                f"{'/'.join(parsers)} parser lost this part of the document, not the quote "
                "(`sweep validate --quotes` shows which parser keeps it)", "warning")
        else:
            add(f"{name}.quote", f"not found in {where}: {quote[:60]!r}")
        return None
    first = places[0]
    parsed = corpus.by_id[first.doc_id].parser
    if level != "exact" and not parsed:  # a parser's output is expected to differ; counted
        add(f"{name}.quote", f"found in {first.doc_id} {_LEVEL_WORDS[level]}", "warning")
    if len(places) > 1:
        docs = {p.doc_id for p in places}
        if doc is not None or len(docs) == 1:
            add(f"{name}.quote", f"occurs {len(places)} times in {first.doc_id}; the first is "
                "used (quote more text to make it unique)", "warning")
        else:
            shown = ", ".join(f"{p.doc_id}@{p.start}" for p in places[:5])
            more = f" and {len(places) - 5} more" if len(places) > 5 else ""
            add(f"{name}.quote", f"occurs {len(places)} times in {len(docs)} documents "
                f"({shown}{more}); the first is used (quote more text, or name its doc_id)",
                "warning")
    return level, (first.doc_id, first.start, first.end)


def quote_metrics(resolved: Sequence[ResolvedItem]) -> dict[str, float]:
    """How much quoted evidence this configuration's parsers kept, and at which level."""
    levels = [lv for r in resolved for lv in r.quote_levels]
    out: dict[str, float] = {"n_quotes": float(len(levels))}
    for level in LEVELS:
        # the last level's count only where it matched: a metric set without it (every run
        # before that level existed) stays the same set
        if level != "blocks" or level in levels:
            out[f"n_quotes_{level}"] = float(levels.count(level))
    out["n_quotes_missing"] = float(levels.count("missing"))
    if levels:
        out["evidence_found_fraction"] = (len(levels) - levels.count("missing")) / len(levels)
    return out


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
