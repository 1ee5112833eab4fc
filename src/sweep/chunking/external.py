"""Boundaries that reproduce other tools' chunkers, as spans of the document.

* ``token_text``: windows of ``size`` tokens every ``size - overlap`` tokens, the last one
  possibly short (LangChain's ``TokenTextSplitter``, Chroma's ``FixedTokenChunker``). A window
  is the exact text of its tokens, leading whitespace included (those tools do not strip);
  a token that starts inside a multi-byte character goes with that character, so a window
  never holds half a character (where those tools decode U+FFFD).
* ``langchain_recursive``: LangChain's ``RecursiveCharacterTextSplitter`` itself, with the
  separators of Chroma's ``RecursiveTokenChunker`` (``\\n\\n``, ``\\n``, ``.``, ``?``, ``!``,
  `` ``, ``""``) and sizes counted in tokens of the chunk tokenizer. Separators are kept at the
  start of the following piece, so a chunk can begin with the previous sentence's ``.``.

Both take their sizes in tokens of ``chunk.tokenizer`` (``cl100k`` for Chroma's table).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sweep.chunking.tokenizers import ChunkTokenizer, count_tokens
from sweep.common.errors import SweepError

EXTERNAL_BOUNDARIES = ("token_text", "langchain_recursive")
CHROMA_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")


def token_text_spans(text: str, starts: np.ndarray, size: int, overlap: int
                     ) -> list[tuple[int, int]]:
    """``[start, end)`` of each window of ``size`` token starts, stepping ``size - overlap``.

    The first window starts at 0 and the last ends at ``len(text)``, so with overlap 0 the
    windows tile the text exactly. Whitespace-only windows are dropped (they hold no evidence).
    """
    n = len(starts)
    bounds = [int(s) for s in starts]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < n:
        j = min(i + size, n)
        begin = 0 if i == 0 else bounds[i]
        end = len(text) if j >= n else bounds[j]
        if end > begin and text[begin:end].strip():
            spans.append((begin, end))
        if j >= n:
            break
        i += size - overlap
    return spans


def locate_in_order(text: str, pieces: Sequence[str], overlapping: bool
                    ) -> list[tuple[int, int]]:
    """Spans of ``pieces``, the chunks a splitter cut from ``text`` in order.

    A splitter's next chunk starts after the previous one's start (after its end, without
    overlap), no later than the previous end plus the whitespace it stripped, and ends no
    earlier than the previous end. Among the occurrences that satisfy this, the latest is
    taken: in periodic text (a boilerplate line repeated in a table) several do, the text is
    identical at each, and the latest keeps every later chunk placeable. LangChain's own
    ``add_start_index`` cannot be used: it steps back ``chunk_overlap`` *characters* from the
    previous end, which is wrong when the overlap is counted in tokens. A chunk that cannot
    be placed is an error, never a silently wrong span.
    """
    spans: list[tuple[int, int]] = []
    prev_start, prev_end = -1, 0
    for n, piece in enumerate(pieces):
        limit = prev_end + len(text[prev_end:]) - len(text[prev_end:].lstrip())
        best = -1
        start = text.find(piece, prev_start + 1 if overlapping else prev_end)
        while 0 <= start <= limit:
            if start + len(piece) >= prev_end:
                best = start
            start = text.find(piece, start + 1)
        if best < 0:
            raise SweepError(f"chunk {n} of the splitter's output is not where it should be in "
                             f"the document: {piece[:60]!r}")
        spans.append((best, best + len(piece)))
        prev_start, prev_end = best, best + len(piece)
    return spans


def langchain_recursive_spans(text: str, tokenizer: ChunkTokenizer, size: int, overlap: int
                              ) -> list[tuple[int, int]]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        separators=list(CHROMA_SEPARATORS), chunk_size=size, chunk_overlap=overlap,
        length_function=lambda s: count_tokens(tokenizer, s), keep_separator=True,
        strip_whitespace=True, is_separator_regex=False)
    return locate_in_order(text, splitter.split_text(text), overlapping=overlap > 0)


def external_spans(boundary: str, text: str, starts: np.ndarray, size: int, overlap: int,
                   tokenizer: ChunkTokenizer | None) -> list[tuple[int, int]]:
    if boundary == "token_text":
        return token_text_spans(text, starts, size, overlap)
    if boundary == "langchain_recursive":
        if tokenizer is None:
            raise SweepError("chunk.boundary=langchain_recursive needs the chunk tokenizer to "
                             "count its pieces")
        return langchain_recursive_spans(text, tokenizer, size, overlap)
    raise SweepError(f"chunk.boundary={boundary!r} is not one of {', '.join(EXTERNAL_BOUNDARIES)}")
