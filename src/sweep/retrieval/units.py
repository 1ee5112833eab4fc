"""What a search returns: the chunk it found, or a bigger unit around it (small-to-big).

``retrieval.unit`` separates what is searched (the chunks) from what is returned (what the
model reads):

- ``chunk``: the hit itself.
- ``parent``: the heading section holding the hit (the run of sections when the hit spans
  several; a heading-only section belongs to the one after it, as in ``chunk.boundary=
  heading``), cut to ``parent_max_tokens`` tokens around the hit when longer: the tokens left
  after the hit are split evenly before and after it, and a side that reaches the section's
  edge gives the rest to the other side. A hit longer than the limit is returned as it is.
- ``window``: the hit extended by ``window_sentences`` whole sentences on each side, never
  beyond its section run.

Returned units are merged in rank order: a unit equal to or inside an earlier returned one is
dropped (it adds no text); a unit that contains earlier returned ones takes the place of the
first of them and the others are dropped, so no text is handed over twice. Units that only
partly overlap are both kept (the model does read the shared text twice, and pays its tokens).

Every unit is a `Chunk` (its own id, span, token count in the chunking tokenizer), so every
metric is computed on what is returned by the same code that scores chunks.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sweep.chunking.chunkers import Chunk, TokenizedDoc
from sweep.common.errors import SweepError
from sweep.common.registry import Entry, Registry
from sweep.data.corpus import Document
from sweep.retrieval.ranking import Ranking

Span = tuple[int, int]


@dataclass(frozen=True)
class UnitSpec:
    unit: str = "chunk"  # an entry of `UNIT`
    parent_max_tokens: int = 1024
    window_sentences: int = 3

    def validate(self) -> UnitSpec:
        UNIT.get_entry(self.unit)
        if self.parent_max_tokens < 1:
            raise SweepError(f"retrieval.parent_max_tokens={self.parent_max_tokens} must be "
                             "at least 1 token")
        if self.window_sentences < 0:
            raise SweepError(f"retrieval.window_sentences={self.window_sentences} must be >= 0")
        return self


def _section_run(d: TokenizedDoc, start: int, end: int) -> Span:
    """The run of heading sections that holds [start, end)."""
    bounds = d.heading_section_starts() or [0]
    if bounds[0] != 0:
        bounds = [0, *bounds]
    first = bisect_right(bounds, start) - 1
    last = bisect_left(bounds, end)  # index of the first section starting at or after `end`
    return bounds[first], bounds[last] if last < len(bounds) else len(d.text)


def _trimmed(d: TokenizedDoc, a: int, b: int, hit: Span) -> Span:
    t = d.trim(a, b)
    return t if t is not None else hit


def parent_span(d: TokenizedDoc, hit: Span, max_tokens: int) -> Span:
    a, b = _section_run(d, *hit)
    a, b = _trimmed(d, a, b, hit)
    if d.count(a, b) <= max_tokens:
        return a, b
    cs, ce = hit
    n_hit = d.count(cs, ce)
    if n_hit >= max_tokens:
        return hit
    starts = d.starts
    i_hit, j_hit = bisect_left(starts, cs), bisect_left(starts, ce)  # token index range
    i_sec, j_sec = bisect_left(starts, a), bisect_left(starts, b)
    room = max_tokens - n_hit
    left, right = room // 2, room - room // 2
    have_left, have_right = i_hit - i_sec, j_sec - j_hit
    if have_left < left:
        left, right = have_left, right + left - have_left
    if have_right < right:
        left, right = min(have_left, left + right - have_right), have_right
    start = starts[i_hit - left] if left else cs
    end = starts[j_hit + right] if j_hit + right < j_sec else b
    if not right:
        end = ce
    return _trimmed(d, start, end, hit)


def _run_bounds(d: TokenizedDoc, a: int, b: int) -> list[int]:
    """The sentence and section bounds of the section run [a, b), its ends included."""
    return sorted({a, b, *d.sentence_cuts(a, b), *d.section_cuts(a, b)})


def window_span(d: TokenizedDoc, hit: Span, sentences: int,
                memo: dict[Span, list[int]] | None = None) -> Span:
    """``memo`` (one dict per document) keeps the bounds of each section run: without it
    every hit scans its whole run for sentences, which is quadratic in a long document
    without headings (the run is the document: 22 s for COVID-QA's 2,560 chunks)."""
    a, b = _section_run(d, *hit)
    if memo is None:
        bounds = _run_bounds(d, a, b)
    elif (bounds := memo.get((a, b))) is None:
        bounds = memo[(a, b)] = _run_bounds(d, a, b)
    i = bisect_right(bounds, hit[0]) - 1  # the sentence holding the hit's first character
    j = bisect_left(bounds, hit[1])  # the bound ending the sentence of its last character
    start = bounds[max(0, i - sentences)]
    end = bounds[min(len(bounds) - 1, j + sentences)]
    return _trimmed(d, min(start, hit[0]), max(end, hit[1]), hit)


def build_units(chunks: Sequence[Chunk], docs: Sequence[Document],
                starts: Sequence[np.ndarray], spec: UnitSpec) -> tuple[list[Chunk], list[int]]:
    """The distinct returned units of a chunking, in document order, and for each chunk the
    index of its unit. ``unit=chunk`` returns the chunks themselves."""
    widen = UNIT.get_entry(spec.validate().unit).impl
    if widen is None:
        return list(chunks), list(range(len(chunks)))
    by_id = {doc.doc_id: TokenizedDoc(doc, s) for doc, s in zip(docs, starts, strict=True)}
    order = {doc.doc_id: n for n, doc in enumerate(docs)}
    span_of: list[tuple[str, Span]] = []
    first_chunk: dict[tuple[str, Span], Chunk] = {}
    bounds: dict[str, dict[Span, list[int]]] = {doc.doc_id: {} for doc in docs}
    for c in chunks:
        d = by_id[c.doc_id]
        hit = (c.start, c.end)
        span = widen(d, hit, spec, bounds[c.doc_id])
        span_of.append((c.doc_id, span))
        first_chunk.setdefault((c.doc_id, span), c)
    keys = sorted(first_chunk, key=lambda k: (order[k[0]], k[1]))
    units: list[Chunk] = []
    ordinal: dict[str, int] = {}
    for doc_id, (a, b) in keys:
        d = by_id[doc_id]
        n = ordinal.get(doc_id, 0)
        ordinal[doc_id] = n + 1
        text = d.text[a:b]
        units.append(Chunk(chunk_id=f"{doc_id}@{a}-{b}", doc_id=doc_id, ordinal=n, start=a,
                           end=b, text=text, embed_text=text, n_tokens=d.count(a, b),
                           heading_path=first_chunk[(doc_id, (a, b))].heading_path))
    index = {k: i for i, k in enumerate(keys)}
    return units, [index[k] for k in span_of]


def returned_ranking(ranking: Ranking, unit_of: Sequence[int], units: Sequence[Chunk]
                     ) -> Ranking:
    """A ranking of chunks as the ranking of the units handed over, merged in rank order
    (module docstring).

    Kept units are compared only with the kept units of their own document, and a unit
    already handed over (or inside one) is skipped by a set lookup: the ranking is remapped
    for the final and both diagnosis rankings of every question, and scanning all the kept
    units for each hit cost 38 s of COVID-QA's 1,380 questions at depth 100 (`parent`)."""
    kept: list[int | None] = []  # in rank order; None where a unit was swallowed
    scores: list[float] = []
    covered: set[int] = set()  # units met so far: each is equal to or inside a kept unit
    by_doc: dict[str, list[tuple[int, int, int]]] = {}  # (start, end, position in `kept`)
    for chunk_index, score in zip(ranking.indices, ranking.scores, strict=True):
        u = unit_of[chunk_index]
        if u in covered:
            continue
        covered.add(u)
        unit = units[u]
        s, e = unit.start, unit.end
        live = by_doc.setdefault(unit.doc_id, [])
        if any(a <= s and e <= b for a, b, _ in live):
            continue
        swallowed = [n for n, (a, b, _) in enumerate(live) if s <= a and b <= e]
        if swallowed:  # the first swallowed unit's place (and score) goes to this one
            first = live[swallowed[0]][2]
            kept[first] = u
            for n in swallowed[1:]:
                kept[live[n][2]] = None
            live[swallowed[0]] = (s, e, first)
            gone = set(swallowed[1:])
            by_doc[unit.doc_id] = [x for n, x in enumerate(live) if n not in gone]
            continue
        live.append((s, e, len(kept)))
        kept.append(u)
        scores.append(score)
    pairs = [(k, sc) for k, sc in zip(kept, scores, strict=True) if k is not None]
    return Ranking(tuple(k for k, _ in pairs), tuple(sc for _, sc in pairs))


# The retrieval.unit axis: name -> the span returned around a hit (tokenized document, hit,
# spec, the document's memo of sentence bounds -> span); `chunk` returns the hit itself and is
# the axis's off value (at it, retrieval.unit stays out of config_hash, as before the axis).
UNIT: Registry[Callable[[TokenizedDoc, Span, UnitSpec, dict[Span, list[int]]], Span]] = Registry(
    "retrieval.unit", [
        Entry("chunk", doc="the hit itself"),
        Entry("parent", lambda d, hit, spec, memo: parent_span(d, hit, spec.parent_max_tokens),
              params={"parent_max_tokens": UnitSpec.parent_max_tokens},
              doc="the heading section around the hit"),
        Entry("window",
              lambda d, hit, spec, memo: window_span(d, hit, spec.window_sentences, memo),
              params={"window_sentences": UnitSpec.window_sentences},
              doc="the hit and whole sentences on each side"),
    ], off="chunk")
