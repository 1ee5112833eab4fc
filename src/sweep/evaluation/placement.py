"""Where chunks are placed for the span metrics.

chunk-sweep knows each chunk's true span (`Chunk.start`/`end`), and by default (``exact``) the
span metrics use it. ``chroma`` places chunks as Chroma's chunking evaluation does
(``chunking_evaluation/utils.py`` ``rigorous_document_search``, at commit d451fc4): one
trailing ``.`` is dropped from the chunk text, then the chunk goes at the FIRST occurrence of
the rest in its document (``str.find``). In a document with repeated passages that moves a
chunk to an earlier copy; with Chroma's interval test a chunk that only touches the evidence
also counts as touching it. Both change Precision_Ω and the "Min" k, so reproducing Chroma's
published figures needs this mode; measuring a chunker of your own does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sweep.chunking.chunkers import Chunk

Span = tuple[str, int, int]
SPAN_MODES = ("exact", "chroma")


def chroma_span(chunk: Chunk, text: str) -> Span:
    """The span Chroma's evaluation gives ``chunk`` in its document ``text``."""
    target = chunk.text[:-1] if chunk.text.endswith(".") else chunk.text
    start = text.find(target)
    if start < 0:  # cannot happen for an exact chunk; keep its true place rather than guess
        return chunk.doc_id, chunk.start, chunk.end
    return chunk.doc_id, start, start + len(target)


def placed_spans(chunks: Sequence[Chunk], mode: str, texts: Mapping[str, str] | None = None
                 ) -> list[Span]:
    """The span of every chunk under ``mode`` (``exact`` or ``chroma``), in chunk order."""
    if mode == "exact":
        return [(c.doc_id, c.start, c.end) for c in chunks]
    if mode == "chroma":
        if texts is None:
            raise ValueError("span_mode=chroma needs the document texts")
        return [chroma_span(c, texts[c.doc_id]) for c in chunks]
    raise ValueError(f"span_mode={mode!r} is not one of {', '.join(SPAN_MODES)}")
