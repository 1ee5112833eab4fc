"""Chunkers: the variables under test.

A chunk is a span ``[start, end)`` of its document's text, so relevance can be computed from
character overlap whatever the chunking. All sizes are counted in tokens of ONE chunking
tokenizer (default: MiniLM's WordPiece), so the same chunk config yields the same chunks
whichever embedding model is being swept.

Mechanics shared by every boundary: a region of text is cut into contiguous pieces (sections,
paragraphs, sentences or token windows) whose union is the region; each piece is trimmed of
surrounding whitespace; pieces are then packed greedily into chunks of at most ``size`` tokens.
Because pieces tile the region, the chunks of a no-overlap chunking cover every non-blank
character of the document.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import pickle
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sweep.chunking.cache import TokenStartsCache
from sweep.chunking.external import external_spans, token_text_spans
from sweep.chunking.tokenizers import ChunkTokenizer
from sweep.common.errors import SweepError
from sweep.common.registry import Entry, Registry, Traits
from sweep.common.sqlite import source_key, text_key
from sweep.data import corpus as _corpus
from sweep.data.corpus import Document, Section


@dataclass(frozen=True)
class ChunkSpec:
    """One chunking; its defaults are THE chunk defaults (the schema's ChunkConfig, the golden
    sets' reference chunking and the labelling page take theirs from here)."""

    boundary: str = "recursive"
    # 254, not 256: MiniLM (the default model) reads 256 tokens *including* its two special
    # tokens ([CLS], [SEP]), so a 256-token chunk lost its last words to the model's cut
    # (3 of 153 demo chunks, 93 of 127 under fixed-256). A default must fit the default model.
    size: int = 254
    overlap: int = 0
    header: str = "none"

    def validate(self) -> ChunkSpec:
        BOUNDARY.get_entry(self.boundary)
        HEADER.get_entry(self.header)
        if self.size < 1:
            raise SweepError(f"chunk.size={self.size} must be at least 1 token")
        if self.overlap < 0 or self.overlap >= self.size:
            raise SweepError(
                f"chunk.overlap={self.overlap} must be >= 0 and smaller than chunk.size={self.size}"
            )
        return self


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_id: str
    ordinal: int
    start: int
    end: int
    text: str  # exactly doc.text[start:end]
    embed_text: str  # text with the injected header, if any
    n_tokens: int
    heading_path: tuple[str, ...] = ()
    oversize: bool = False  # more than `size` tokens because one sentence could not be split


# --------------------------------------------------------------------------- tokenizers


# --------------------------------------------------------------------------- splitting

_BLANK_LINES = re.compile(r"\n[ \t]*\n\s*")
# A sentence ends at . ! ? (plus closing quotes/brackets) followed by whitespace; a cut is made
# only when the next character is not a lowercase letter, so "e.g. this" stays one sentence.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")
# Lines that start a new unit in markdown even without a blank line before them.
_BLOCK_START = re.compile(r"\n(?=[ \t]*(?:[-*+][ \t]|\d{1,3}[.)][ \t]|\||#{1,6}[ \t]|>))")
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*$", re.MULTILINE)
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` by the rules the ``sentence`` boundary cuts with (a sentence
    end followed by a non-lowercase character, a blank line, a markdown block start), plus the
    end of a heading line; stripped, empty pieces dropped. Used by the extractive reader."""
    cuts = {m.end() for m in _SENTENCE_END.finditer(text)
            if m.end() < len(text) and not text[m.end()].islower()}
    cuts |= {m.end() for m in _BLANK_LINES.finditer(text)}
    cuts |= {m.end() for m in _BLOCK_START.finditer(text)}
    cuts |= {m.end() for m in _HEADING_LINE.finditer(text)}  # a heading is never a sentence's start
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(text)), len(text)]
    return [piece for a, b in itertools.pairwise(bounds)
            if (piece := text[a:b].strip())]


class TokenizedDoc:
    """A document with its token starts; answers token counts for any span in O(log n)."""

    def __init__(self, doc: Document, starts: np.ndarray,
                 tokenizer: ChunkTokenizer | None = None) -> None:
        self.doc = doc
        self.text = doc.text
        # bisect and indexing read Python ints from this; an `array` holds 8 bytes a token
        # where a list of ints held ~36 (0.5 GB for a 52 MB document).
        self.starts = array("q")
        self.starts.frombytes(memoryview(np.ascontiguousarray(starts, dtype=np.int64)).cast("B"))
        self.starts_array = starts
        # Chunkers that count pieces themselves (LangChain's splitter) need the tokenizer.
        self.tokenizer = tokenizer

    def count(self, a: int, b: int) -> int:
        return bisect_left(self.starts, b) - bisect_left(self.starts, a)

    def trim(self, a: int, b: int) -> tuple[int, int] | None:
        piece = self.text[a:b]
        stripped = piece.strip()
        if not stripped:
            return None
        lead = len(piece) - len(piece.lstrip())
        return a + lead, a + lead + len(stripped)

    # Each splitter returns cut positions strictly inside (a, b); pieces are between cuts.

    def fence_ranges(self, a: int, b: int) -> list[tuple[int, int]]:
        """Fenced code blocks inside [a, b): never cut inside them except by tokens."""
        ranges, open_at, fence = [], None, ""
        for m in _FENCE_LINE.finditer(self.text, a, b):
            if open_at is None:
                open_at, fence = m.start(), m.group(1)
            elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                ranges.append((open_at, m.end()))
                open_at = None
        if open_at is not None:
            ranges.append((open_at, b))
        return ranges

    def _outside_fences(self, cuts: list[int], a: int, b: int) -> list[int]:
        fences = self.fence_ranges(a, b)
        return [c for c in cuts if not any(fs < c < fe for fs, fe in fences)]

    def paragraph_cuts(self, a: int, b: int) -> list[int]:
        cuts = [m.end() for m in _BLANK_LINES.finditer(self.text, a, b) if a < m.end() < b]
        return self._outside_fences(cuts, a, b)

    def sentence_cuts(self, a: int, b: int) -> list[int]:
        cuts = {
            m.end()
            for m in _SENTENCE_END.finditer(self.text, a, b)
            if m.end() < b and not self.text[m.end()].islower()
        }
        cuts |= {m.end() for m in _BLANK_LINES.finditer(self.text, a, b)}
        cuts |= {m.end() for m in _BLOCK_START.finditer(self.text, a, b)}
        return self._outside_fences(sorted(c for c in cuts if a < c < b), a, b)

    def token_cuts(self, a: int, b: int, size: int) -> list[int]:
        """Cuts every ``size`` tokens, only where a character starts: tokens that share a start
        (a character split into several word pieces) stay on one side of the cut."""
        starts = self.starts
        lo, hi = bisect_left(starts, a), bisect_left(starts, b)
        cuts, i = [], lo
        while hi - i > size:
            j = bisect_left(starts, starts[i + size])
            if j <= i:  # one character holds more than `size` tokens
                j = bisect_right(starts, starts[i])
            if j >= hi:
                break
            cuts.append(starts[j])
            i = j
        return cuts

    def section_cuts(self, a: int, b: int) -> list[int]:
        return [s for s in self.heading_section_starts() if a < s < b]

    def heading_section_starts(self) -> list[int]:
        """Section starts, with a heading-only section merged into the one after it.

        "# Title" directly followed by "## Part" would otherwise be a chunk holding only a title.
        """
        starts = []
        sections = self.doc.sections
        for i, sec in enumerate(sections):
            if i > 0 and not _has_body(self.text, sections[i - 1]):
                continue
            starts.append(sec.start)
        return starts


def _has_body(text: str, section: Section) -> bool:
    if section.level == 0:  # the preamble before the first heading
        return True
    newline = text.find("\n", section.start, section.end)
    return newline >= 0 and bool(text[newline : section.end].strip())


def cut_pieces(a: int, b: int, cuts: Sequence[int]) -> list[tuple[int, int]]:
    bounds = [a, *cuts, b]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


Splitter = Callable[[TokenizedDoc, int, int, int], list[int]]
_SPLITTERS: dict[str, Splitter] = {
    "section": lambda d, a, b, size: d.section_cuts(a, b),
    "paragraph": lambda d, a, b, size: d.paragraph_cuts(a, b),
    "sentence": lambda d, a, b, size: d.sentence_cuts(a, b),
    "token": lambda d, a, b, size: d.token_cuts(a, b, size),
}


def _units(d: TokenizedDoc, a: int, b: int, levels: Sequence[str], size: int) -> list[tuple[int, int]]:
    """Split [a, b) by the first level, and oversize pieces by the next levels, recursively."""
    if not levels or d.count(a, b) <= size:
        return [(a, b)]
    out: list[tuple[int, int]] = []
    for pa, pb in cut_pieces(a, b, _SPLITTERS[levels[0]](d, a, b, size)):
        out.extend(_units(d, pa, pb, levels[1:], size))
    return out


def pack_units(d: TokenizedDoc, units: list[tuple[int, int]], size: int, overlap: int
               ) -> list[tuple[int, int]]:
    """Greedy packing of trimmed units into spans of <= size tokens, carrying up to
    ``overlap`` tokens of whole trailing units into the next chunk."""
    spans = [t for t in (d.trim(a, b) for a, b in units) if t is not None]
    chunks: list[tuple[int, int]] = []
    current: list[tuple[int, int]] = []
    for unit in spans:
        if current and d.count(current[0][0], unit[1]) > size:
            chunks.append((current[0][0], current[-1][1]))
            carry: list[tuple[int, int]] = []
            for prev in reversed(current):
                # Strictly fewer units than the chunk it came from, or chunks would repeat.
                if len(carry) + 1 >= len(current) or d.count(prev[0], current[-1][1]) > overlap:
                    break
                carry.insert(0, prev)
            while carry and d.count(carry[0][0], unit[1]) > size:
                carry.pop(0)
            current = carry
        current.append(unit)
    if current:
        chunks.append((current[0][0], current[-1][1]))
    return chunks


def _fixed_windows(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of ``size`` tokens every ``size - overlap`` tokens, cut where characters start."""
    starts, n = d.starts, len(d.starts)
    if n == 0:
        trimmed = d.trim(0, len(d.text))
        return [trimmed] if trimmed else []
    spans, i, stride = [], 0, size - overlap
    while True:
        if i + size >= n:
            end_index = n
        else:
            end_index = bisect_left(starts, starts[i + size])
            if end_index <= i:  # one character holds more than `size` tokens
                end_index = bisect_right(starts, starts[i])
        begin = 0 if i == 0 else starts[i]
        end = len(d.text) if end_index >= n else starts[end_index]
        trimmed = d.trim(begin, end)
        if trimmed:
            spans.append(trimmed)
        if end_index >= n:
            return spans
        # The next window starts at a character boundary no later than this one's end, so
        # windows never leave a gap.
        nxt = bisect_left(starts, starts[i + stride])
        i = nxt if nxt > i else bisect_right(starts, starts[i])


def _fixed(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    return _fixed_windows(d, size, overlap)


def _sentence(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    whole = (0, len(d.text))
    return pack_units(d, cut_pieces(*whole, d.sentence_cuts(*whole)), size, overlap)


def _paragraph(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    return pack_units(d, _units(d, 0, len(d.text), ["paragraph", "sentence"], size), size, overlap)


def _heading(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for a, b in cut_pieces(0, len(d.text), d.section_cuts(0, len(d.text))):
        units = _units(d, a, b, ["paragraph", "sentence", "token"], size)
        spans.extend(pack_units(d, units, size, overlap))
    return spans


def _recursive(d: TokenizedDoc, size: int, overlap: int) -> list[tuple[int, int]]:
    levels = ["section", "paragraph", "sentence", "token"]
    return pack_units(d, _units(d, 0, len(d.text), levels, size), size, overlap)


Chunker = Callable[[TokenizedDoc, int, int], list[tuple[int, int]]]

_TILES = Traits(tiling=True)

# The chunk.boundary axis: name -> chunker (document with token starts, size, overlap ->
# [start, end) spans in document order). The schema's `Boundary` enum is built from these
# names, so a new boundary is a function (here, or a module of this package) plus its entry.
# The boundaries that cut by meaning (`needs_embedder`) register themselves from
# sweep.chunking.semantic, which the package imports, so the registry is whole whenever any
# chunking module is loaded.
BOUNDARY: Registry[Callable[..., list[tuple[int, int]]]] = Registry("chunk.boundary", [
    # the boundaries whose chunks are trimmed pieces that tile the document (the invariants
    # the property tests hold them to)
    Entry("fixed", _fixed, traits=_TILES, doc="windows of `size` tokens"),
    Entry("sentence", _sentence, traits=_TILES, doc="sentences packed up to `size`"),
    Entry("paragraph", _paragraph, traits=_TILES,
          doc="paragraphs packed up to `size`, long ones by sentence"),
    Entry("heading", _heading, traits=_TILES,
          doc="each heading section on its own, packed inside"),
    Entry("recursive", _recursive, traits=_TILES,
          doc="sections, then paragraphs, sentences, tokens (the default)"),
    # Other tools' chunkers, reproduced (chunking/external.py); they keep those tools'
    # whitespace rules.
    Entry("token_text", lambda d, size, overlap: token_text_spans(d.text, d.starts_array, size,
                                                                  overlap),
          doc="Chroma's TokenTextSplitter, reproduced"),
    Entry("langchain_recursive", lambda d, size, overlap: external_spans(
        "langchain_recursive", d.text, d.starts_array, size, overlap, d.tokenizer),
          doc="LangChain's RecursiveCharacterTextSplitter, reproduced"),
])


def local_boundaries() -> tuple[str, ...]:
    """The boundaries `chunk_spans` cuts alone (no embedding model)."""
    return BOUNDARY.having("needs_embedder", False)


BOUNDARIES = local_boundaries()
TILING_BOUNDARIES = BOUNDARY.having("tiling")
# The code that cuts them (`spans_key`): this module and the document model it reads.
_SPANS_SOURCE = f"{source_key(__file__)}|{source_key(_corpus.__file__)}"


def _no_header(doc: Document, heading_path: tuple[str, ...]) -> str:
    return ""


def _title_header(doc: Document, heading_path: tuple[str, ...]) -> str:
    return doc.title


def _path_header(doc: Document, heading_path: tuple[str, ...]) -> str:
    crumbs = list(heading_path)
    if crumbs and crumbs[0] == doc.title:
        crumbs = crumbs[1:]
    return " > ".join([doc.title, *crumbs])


# The chunk.header axis: name -> the text put before a chunk's body for embedding only
# (the schema's `Header` enum is built from these names).
HEADER: Registry[Callable[[Document, tuple[str, ...]], str]] = Registry("chunk.header", [
    Entry("none", _no_header, doc="the body alone"),
    Entry("title", _title_header, doc="the document title"),
    Entry("path", _path_header, doc="title > headings"),
    # A chat model writes this header after chunking (sweep.generation.contextual); its
    # settings are the chunk.context group, read only with it.
    Entry("contextual", _no_header, params={"context": {}},
          traits=Traits(remote=True, costs_money=True, deterministic=False),
          doc="a chat model's summary of the chunk's place in its document"),
])
HEADERS = HEADER.names()


def chunk_spans(doc: Document, starts: np.ndarray, spec: ChunkSpec,
                tokenizer: ChunkTokenizer | None = None) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of ``doc``'s chunks under ``spec``, in document order."""
    entry = BOUNDARY.get_entry(spec.boundary)
    if entry.traits.needs_embedder:
        raise SweepError(f"chunk.boundary={spec.boundary} needs an embedding model: "
                         "use sweep.chunking.semantic")
    return entry.impl(TokenizedDoc(doc, starts, tokenizer), spec.size, spec.overlap)


def header_for(doc: Document, heading_path: tuple[str, ...], header: str) -> str:
    return HEADER.impl(header)(doc, heading_path)


def chunk_document(doc: Document, starts: np.ndarray, spec: ChunkSpec,
                   tokenizer: ChunkTokenizer | None = None) -> list[Chunk]:
    return chunks_from_spans(doc, starts, spec, chunk_spans(doc, starts, spec, tokenizer))


def chunks_from_spans(doc: Document, starts: np.ndarray, spec: ChunkSpec,
                      spans: Sequence[tuple[int, int]]) -> list[Chunk]:
    """`Chunk` objects (ids, heading path, header, token count) for spans in document order."""
    if len(spans) == 0:
        return []
    section_starts = [s.start for s in doc.sections]
    bounds = np.array(spans, dtype=np.int64).reshape(-1, 2)
    # A span's tokens: the token starts before its end less those before its start (what
    # `bisect_left` on each bound gives), for every span in one call.
    lefts = np.searchsorted(starts, bounds, side="left")
    n_tokens = (lefts[:, 1] - lefts[:, 0]).tolist()
    make_header = HEADER.impl(spec.header)
    headers: dict[int, tuple[tuple[str, ...], str]] = {}  # section -> (path, header)
    chunks = []
    doc_id, text, size = doc.doc_id, doc.text, spec.size
    for ordinal, ((start, end), n) in enumerate(zip(spans, n_tokens, strict=True)):
        idx = bisect_right(section_starts, start) - 1
        if idx not in headers:
            path = doc.sections[idx].heading_path if idx >= 0 else ()
            headers[idx] = (path, make_header(doc, path))
        heading_path, header = headers[idx]
        body = text[start:end]
        chunks.append(
            Chunk(
                chunk_id=f"{doc_id}#{ordinal}",
                doc_id=doc_id,
                ordinal=ordinal,
                start=start,
                end=end,
                text=body,
                embed_text=f"{header}\n\n{body}" if header else body,
                n_tokens=n,
                heading_path=heading_path,
                oversize=n > size,
            )
        )
    return chunks


def corpus_token_starts(docs: Sequence[Document], tokenizer: ChunkTokenizer,
                        cache: TokenStartsCache | None = None) -> list[np.ndarray]:
    """Token starts of every document: the same for every chunking with this tokenizer, so a
    sweep computes them once (tokenising is most of the cost of chunking), and with ``cache``
    once per document text and tokenizer across processes. Kept as 4-byte offsets when the
    document is shorter than 2**31 characters: half the memory of the tokenizer's int64
    (~117 MB for the ~14.6M tokens of a 52 MB document, issue 14, item 3); `TokenizedDoc`
    reads them as int64 again."""
    fingerprint = getattr(tokenizer, "fingerprint", "") if cache is not None else ""
    found = cache.get_many(fingerprint, [d.text for d in docs]) if fingerprint else {}
    out = []
    fresh: list[tuple[str, np.ndarray]] = []
    for i, doc in enumerate(docs):
        if i in found:
            out.append(found[i])
            continue
        starts = tokenizer.token_starts(doc.text)
        out.append(starts.astype(np.int32) if len(doc.text) < 2**31 else starts)
        fresh.append((doc.text, out[-1]))
    if fingerprint and fresh:
        cache.put_many(fingerprint, fresh)  # type: ignore[union-attr]
    return out


def chunk_corpus(
    docs: Sequence[Document], spec: ChunkSpec, tokenizer: ChunkTokenizer,
    starts: Sequence[np.ndarray] | None = None,
    spans: Sequence[Sequence[tuple[int, int]]] | None = None,
) -> list[Chunk]:
    """Every document's chunks under ``spec``. ``spans``: each document's `chunk_spans` under
    the same boundary, size and overlap, computed already (`corpus_spans`): the header does
    not move a cut, so chunkings that differ only in ``spec.header`` share them."""
    spec.validate()
    if starts is None:
        starts = corpus_token_starts(docs, tokenizer)
    if spans is None:
        spans = corpus_spans(docs, spec, tokenizer, starts)
    chunks: list[Chunk] = []
    for doc, doc_starts, doc_spans in zip(docs, starts, spans, strict=True):
        chunks.extend(chunks_from_spans(doc, doc_starts, spec, doc_spans))
    return chunks


def _spans_source(boundary: str) -> str:
    """`_SPANS_SOURCE`, plus the module of a boundary registered from elsewhere (its code
    cuts too, so an edit to it must not be served stale spans)."""
    impl = BOUNDARY.get_entry(boundary).impl
    try:
        path = inspect.getsourcefile(impl) if impl is not None else None
    except TypeError:  # a builtin or a C function: nothing to read
        path = None
    if path is None or Path(path).resolve() == Path(__file__).resolve():
        return _SPANS_SOURCE
    return f"{_SPANS_SOURCE}|{source_key(path)}"


def spans_key(doc: Document, spec: ChunkSpec, tokenizer_fingerprint: str,
              source: str | None = None) -> bytes:
    """What a tiling boundary's cuts of ``doc`` depend on, hashed: the whole document (its
    text's sha256, every other field pickled), boundary, size, overlap, the tokenizer (its
    fingerprint covers the token starts) and the source of this module and of
    `sweep.data.corpus`, whose code cuts (``source``: `_spans_source` of the boundary, when
    the caller has it already: it reads the file system, the same for every document)."""
    if source is None:
        source = _spans_source(spec.boundary)
    h = hashlib.sha256(f"spans1|{source}|{tokenizer_fingerprint}|"
                       f"{spec.boundary}|{spec.size}|{spec.overlap}|".encode())
    h.update(text_key(doc.text))  # the text by its hash: no second copy of a big document
    h.update(pickle.dumps(replace(doc, text=""), protocol=5))
    return h.digest()


def corpus_spans(docs: Sequence[Document], spec: ChunkSpec, tokenizer: ChunkTokenizer,
                 starts: Sequence[np.ndarray], cache: TokenStartsCache | None = None
                 ) -> list[list[tuple[int, int]]]:
    """`chunk_spans` of every document: what `chunk_corpus` cuts, before headers. With
    ``cache`` (and a tiling boundary, a tokenizer with a fingerprint), each document's spans
    are read from it, or cut and written to it."""
    spec.validate()
    fingerprint = getattr(tokenizer, "fingerprint", "")
    if cache is None or not fingerprint or not BOUNDARY.has(spec.boundary, "tiling"):
        return [chunk_spans(doc, doc_starts, spec, tokenizer)
                for doc, doc_starts in zip(docs, starts, strict=True)]
    source = _spans_source(spec.boundary)
    keys = [spans_key(doc, spec, fingerprint, source) for doc in docs]
    found = cache.get_spans(keys, [len(d.text) for d in docs])
    out: list[list[tuple[int, int]]] = []
    fresh = []
    for i, (doc, doc_starts) in enumerate(zip(docs, starts, strict=True)):
        if i in found:
            out.append(found[i])
            continue
        out.append(chunk_spans(doc, doc_starts, spec, tokenizer))
        fresh.append((keys[i], out[-1]))
    cache.put_spans(fresh)
    return out


def chunk_stats(chunks: Sequence[Chunk]) -> dict[str, float]:
    tokens = np.array([c.n_tokens for c in chunks], dtype=float) if chunks else np.zeros(1)
    return {
        "n_chunks": len(chunks),
        "chunk_tokens_mean": float(tokens.mean()),
        "chunk_tokens_p50": float(np.median(tokens)),
        "chunk_tokens_max": float(tokens.max()),
        "n_oversize_chunks": sum(c.oversize for c in chunks),
    }
