"""Boundaries that cut by meaning: ``semantic`` and ``cluster``.

Both are pure functions of a document, its token starts, a spec and an ``embed`` callable
(``list[str] -> array``, one row per text): the pipeline passes the cached `Embedder`, tests a
fake. Like ``heading``, both cut at every heading section first and never join two sections;
like every boundary, a chunk is a span of its document (``text == doc.text[start:end]``) and
holds at most ``size`` tokens of the chunking tokenizer.

``semantic`` (the LangChain / LlamaIndex SemanticChunker idea): the section is split into
sentences; the gap after sentence k is scored by the cosine similarity between the window of
``window`` sentences ending at k and the window of ``window`` sentences starting at k+1; its
*drop* is ``1 - similarity``. A cut is made at every gap whose drop is at least the
``threshold``-th percentile of all the drops of the document (95 = the largest 5%), unless
every drop of the document is equal (no change of meaning anywhere). A piece longer than
``size`` tokens is then packed greedily by sentences (and by tokens inside a sentence that is
itself too long), like the ``sentence`` boundary.

``cluster`` (Chroma's ClusterSemanticChunker idea): the section is cut into small pieces of
about ``piece_tokens`` tokens (sentences packed greedily), the pieces are embedded, and
consecutive pieces are grouped by dynamic programming to maximise within-group similarity
under the size limit (`best_grouping`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sweep.chunking.chunkers import (
    BOUNDARY,
    Chunk,
    ChunkSpec,
    TokenizedDoc,
    chunks_from_spans,
    cut_pieces,
    pack_units,
)
from sweep.common.errors import SweepError
from sweep.common.registry import Entry, Traits
from sweep.data.corpus import Document

Embed = Callable[[list[str]], np.ndarray]
Span = tuple[int, int]


@dataclass(frozen=True)
class SemanticParams:
    """The settings of the embedded boundaries (``chunk.semantic.*``, ``chunk.cluster.*``)."""

    window: int = 3
    threshold: float = 95.0
    piece_tokens: int = 50

    def validate(self) -> SemanticParams:
        if self.window < 1:
            raise SweepError(f"chunk.semantic.window={self.window} must be at least 1 sentence")
        if not 0.0 <= self.threshold <= 100.0:
            raise SweepError(f"chunk.semantic.threshold={self.threshold} must be a percentile "
                             "between 0 and 100")
        if self.piece_tokens < 1:
            raise SweepError(f"chunk.cluster.piece_tokens={self.piece_tokens} must be at "
                             "least 1 token")
        return self


def _normalised(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms == 0, 1.0, norms)


def _embed_spans(d: TokenizedDoc, spans: Sequence[Span], embed: Embed) -> np.ndarray:
    """Unit vectors of the texts of ``spans``, each distinct text sent once."""
    texts = [d.text[a:b] for a, b in spans]
    distinct = list(dict.fromkeys(texts))
    if not distinct:
        return np.zeros((0, 1))
    vectors = np.asarray(embed(distinct))
    if vectors.shape[0] != len(distinct):
        raise SweepError(f"the embedding model returned {vectors.shape[0]} vectors for "
                         f"{len(distinct)} texts")
    row = {t: i for i, t in enumerate(distinct)}
    return _normalised(vectors)[[row[t] for t in texts]]


def _sections(d: TokenizedDoc) -> list[Span]:
    return cut_pieces(0, len(d.text), d.section_cuts(0, len(d.text)))


def _sentences(d: TokenizedDoc, a: int, b: int, size: int) -> list[Span]:
    """Trimmed sentences of [a, b), each longer than ``size`` tokens split by tokens."""
    out: list[Span] = []
    for pa, pb in cut_pieces(a, b, d.sentence_cuts(a, b)):
        parts = cut_pieces(pa, pb, d.token_cuts(pa, pb, size)) if d.count(pa, pb) > size \
            else [(pa, pb)]
        out.extend(t for t in (d.trim(x, y) for x, y in parts) if t is not None)
    return out


# --------------------------------------------------------------------------- semantic


def _window_pairs(units: Sequence[Span], window: int) -> list[tuple[Span, Span]]:
    """For each gap k of ``units`` (one section's sentences): the window of ``window``
    sentences ending at k and the one starting at k+1."""
    m = len(units)
    return [((units[max(0, k - window + 1)][0], units[k][1]),
             (units[k + 1][0], units[min(m - 1, k + window)][1])) for k in range(m - 1)]


def gap_drops(d: TokenizedDoc, sections: Sequence[Sequence[Span]], window: int, embed: Embed
              ) -> list[np.ndarray]:
    """``1 - cos`` between the two windows around each gap of each section, the whole
    document's windows embedded in one call."""
    pairs = [_window_pairs(units, window) for units in sections]
    flat = [p for section in pairs for p in section]
    if not flat:
        return [np.zeros(0) for _ in sections]
    vectors = _embed_spans(d, [a for a, _ in flat] + [b for _, b in flat], embed)
    n = len(flat)
    drops = 1.0 - np.sum(vectors[:n] * vectors[n:], axis=1)
    out, i = [], 0
    for section in pairs:
        out.append(drops[i : i + len(section)])
        i += len(section)
    return out


def semantic_spans(doc: Document, starts: np.ndarray, size: int, params: SemanticParams,
                   embed: Embed) -> list[Span]:
    d = TokenizedDoc(doc, starts)
    sections = [_sentences(d, a, b, size) for a, b in _sections(d)]
    drops = gap_drops(d, sections, params.window, embed)
    every = np.concatenate(drops) if drops else np.zeros(0)
    # Equal drops everywhere (e.g. a one-topic document) mean no change of meaning: no cut.
    varied = every.size > 0 and float(every.max() - every.min()) > 1e-9
    cut_at = float(np.percentile(every, params.threshold)) if varied else np.inf
    spans: list[Span] = []
    for units, gaps in zip(sections, drops, strict=True):
        if not units:
            continue
        segment = [units[0]]
        for unit, drop in zip(units[1:], gaps, strict=True):
            if drop >= cut_at - 1e-12:
                spans.extend(_fit(d, segment, size))
                segment = []
            segment.append(unit)
        spans.extend(_fit(d, segment, size))
    return spans


def _fit(d: TokenizedDoc, units: list[Span], size: int) -> list[Span]:
    """One span for the units if it holds at most ``size`` tokens, else greedy packing."""
    if d.count(units[0][0], units[-1][1]) <= size:
        return [(units[0][0], units[-1][1])]
    return pack_units(d, units, size, 0)


# --------------------------------------------------------------------------- cluster


def best_grouping(sim: np.ndarray, fits: Callable[[int, int], bool],
                  baseline: float | None = None) -> list[Span]:
    """Consecutive groups ``[i, j)`` of the n pieces of ``sim`` (n x n cosine similarities)
    that maximise the total within-group score, every group satisfying ``fits(i, j)``.

    Objective: the score of a group ``[i, j)`` is the sum over its pairs ``i <= a < b < j`` of
    ``sim[a, b] - baseline``; a single piece scores 0. ``baseline`` defaults to the mean
    off-diagonal similarity of ``sim`` (0 when n < 2): without it every similarity of a
    normalised text model is positive and the largest groups that fit would always win; with
    it, two pieces are grouped only if they are more alike than two pieces of this document
    are on average. ``fits`` must be monotone (a sub-range of a group that fits fits too) and
    every single piece must fit.

    Dynamic programming over end positions: ``best[j] = max_i best[i] + score(i, j)`` over the
    starts i whose group fits; ties go to the longest last group. O(n * L^2) for groups of at
    most L pieces.
    """
    n = sim.shape[0]
    if n == 0:
        return []
    if baseline is None:
        baseline = float((sim.sum() - np.trace(sim)) / (n * (n - 1))) if n > 1 else 0.0
    best = np.full(n + 1, -np.inf)
    best[0] = 0.0
    choice = [0] * (n + 1)
    for j in range(1, n + 1):
        pair_sum = 0.0  # score of the group [i, j), grown by lowering i
        i = j - 1
        while i >= 0 and fits(i, j):
            pair_sum += float(np.sum(sim[i, i + 1 : j]) - baseline * (j - 1 - i))
            total = best[i] + pair_sum
            if total >= best[j]:
                best[j], choice[j] = total, i
            i -= 1
        if not np.isfinite(best[j]):
            raise ValueError(f"piece {j - 1} does not fit in a group on its own")
    groups: list[Span] = []
    j = n
    while j > 0:
        groups.append((choice[j], j))
        j = choice[j]
    return groups[::-1]


def cluster_spans(doc: Document, starts: np.ndarray, size: int, params: SemanticParams,
                  embed: Embed) -> list[Span]:
    d = TokenizedDoc(doc, starts)
    piece_size = min(params.piece_tokens, size)
    sections = [pack_units(d, _sentences(d, a, b, piece_size), piece_size, 0)
                for a, b in _sections(d)]
    pieces = [p for section in sections for p in section]
    if not pieces:
        return []
    vectors = _embed_spans(d, pieces, embed)
    sim = vectors @ vectors.T
    n = len(pieces)
    # One baseline per document, so sections are grouped against the same standard.
    baseline = float((sim.sum() - np.trace(sim)) / (n * (n - 1))) if n > 1 else 0.0
    spans: list[Span] = []
    offset = 0
    for section in sections:
        m = len(section)
        local = sim[offset : offset + m, offset : offset + m]

        def fits(i: int, j: int, section: list[Span] = section) -> bool:
            return j - i == 1 or d.count(section[i][0], section[j - 1][1]) <= size

        spans.extend((section[i][0], section[j - 1][1])
                     for i, j in best_grouping(local, fits, baseline))
        offset += m
    return spans


# --------------------------------------------------------------------------- corpus


def chunk_corpus_embedded(docs: Sequence[Document], spec: ChunkSpec, params: SemanticParams,
                          starts: Sequence[np.ndarray], embed: Embed) -> list[Chunk]:
    """`chunk_corpus` for the ``semantic`` and ``cluster`` boundaries."""
    spec.validate()
    params.validate()
    if spec.overlap:
        raise SweepError(f"chunk.overlap={spec.overlap}: chunk.boundary={spec.boundary} cuts "
                         "between meanings and takes no overlap (set chunk.overlap=0)")
    entry = BOUNDARY.get_entry(spec.boundary)
    if not entry.traits.needs_embedder:
        raise SweepError(f"chunk.boundary={spec.boundary!r} does not cut by meaning: "
                         "use sweep.chunking.chunkers.chunk_corpus")
    cut = entry.impl
    chunks: list[Chunk] = []
    for doc, doc_starts in zip(docs, starts, strict=True):
        spans = cut(doc, doc_starts, spec.size, params, embed)
        chunks.extend(chunks_from_spans(doc, doc_starts, spec, spans))
    return chunks


# The two boundaries of this module, on the chunk.boundary axis. Each reads its own group of
# settings (chunk.semantic.*, chunk.cluster.*: the schema's SemanticConfig and ClusterConfig
# hold their defaults and documentation); its `model` names the model that embeds for cutting
# ("" = the swept embedding).
_DEFAULTS = SemanticParams()
BOUNDARY.register(Entry(
    "semantic", semantic_spans,
    params={"semantic": {"window": _DEFAULTS.window, "threshold": _DEFAULTS.threshold,
                         "model": ""}},
    traits=Traits(needs_embedder=True), model_keys=("semantic.model",),
    doc="cut where the meaning between sentence windows drops most"))
BOUNDARY.register(Entry(
    "cluster", cluster_spans,
    params={"cluster": {"piece_tokens": _DEFAULTS.piece_tokens, "model": ""}},
    traits=Traits(needs_embedder=True), model_keys=("cluster.model",),
    doc="small pieces grouped by similarity (dynamic programming)"))
