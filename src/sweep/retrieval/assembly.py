"""Context assembly: which retrieved chunks reach the prompt, and in what order (issue 47).

Retrieval (and the reranker) end with a ranking; a production system does not hand the model
simply its top k. It drops a chunk that repeats one already kept (overlapping chunks and
small-to-big units return the same text twice), stops adding chunks at a token budget, and
orders what it kept. `assemble` does the three, on plain data, in that order:

1. walk the ranking best first; with ``dedup=overlap`` skip a chunk more than half of whose
   characters lie inside one chunk already kept (same document, by offsets), so the freed slot
   goes to the next chunk of the ranking;
2. keep whole chunks until ``prompt_k`` are kept or the next one would take the context past
   ``budget_tokens`` (0: no budget); a chunk never is cut, and the walk stops at the first that
   does not fit ("best first, until the budget"), so a lower-ranked short chunk cannot jump a
   better one;
3. order the kept chunks: ``rank`` (best first, as retrieved), ``document`` (by document, then
   position in it: the reading order) or ``lost_in_middle`` (best at both ends, the weakest in
   the middle: models read the start and the end of a long context best).

At the defaults (``rank``, no budget, ``none``) the result is the top ``prompt_k``: what the
prompt held before the axis existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sweep.chunking.chunkers import Chunk

ORDERS = ("rank", "document", "lost_in_middle")
DEDUPS = ("none", "overlap")
# "Mostly inside": more than this share of a chunk's characters already in one kept chunk.
MOSTLY = 0.5


@dataclass(frozen=True)
class AssemblySpec:
    order: str = "rank"
    budget_tokens: int = 0  # 0: no budget, only prompt_k counts
    dedup: str = "none"

    @property
    def neutral(self) -> bool:
        """Whether this is the top ``prompt_k`` as retrieved (the defaults)."""
        return self == AssemblySpec()


def mostly_inside(chunk: Chunk, kept: Chunk) -> bool:
    """Whether more than half of ``chunk``'s characters lie inside ``kept``."""
    if chunk.doc_id != kept.doc_id or chunk.end <= chunk.start:
        return False
    shared = min(chunk.end, kept.end) - max(chunk.start, kept.start)
    return shared > MOSTLY * (chunk.end - chunk.start)


def lost_in_middle(kept: Sequence[int]) -> list[int]:
    """Best first and second best last, third second, fourth second to last, and so on:
    ``[1, 2, 3, 4, 5]`` (by rank) becomes ``[1, 3, 5, 4, 2]``."""
    front = list(kept[0::2])
    back = list(kept[1::2])
    return front + back[::-1]


def assemble(ranked: Sequence[int], chunks: Sequence[Chunk], prompt_k: int,
             spec: AssemblySpec) -> list[int]:
    """The indices (into ``chunks``) of the context's chunks, in prompt order."""
    kept: list[int] = []
    tokens = 0
    for i in ranked:
        if len(kept) == prompt_k:
            break
        chunk = chunks[i]
        if spec.dedup == "overlap" and any(mostly_inside(chunk, chunks[j]) for j in kept):
            continue
        if spec.budget_tokens and tokens + chunk.n_tokens > spec.budget_tokens:
            break
        kept.append(i)
        tokens += chunk.n_tokens
    if spec.order == "document":
        return sorted(kept, key=lambda i: (chunks[i].doc_id, chunks[i].start, chunks[i].end))
    if spec.order == "lost_in_middle":
        return lost_in_middle(kept)
    return kept
