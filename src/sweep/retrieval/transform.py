"""Query transforms (``retrieval.query_transform``): what is searched in place of the question.

- ``none``: the question itself (the axis's off value: at it the axis and its settings stay out
  of ``config_hash``, so every run recorded before the axis keeps its hash).
- ``hyde``: a chat model writes a short passage that answers the question (Hypothetical
  Document Embeddings); the dense search embeds ``question + passage`` (``hyde.embed=
  question_passage``, the default) or the passage alone (``passage``). The question is kept by
  default because a small model's passage is often off the subject: with the question beside
  it the query vector cannot drift further than the passage pulls it. BM25 (hybrid) and the
  reranker always read the question: the passage's invented details are lexical noise.
- ``multi_query``: the model rewrites the question ``multi_query.n`` ways; the question and
  each rewrite run the first stage (dense, BM25 or hybrid), and their rankings are fused by
  reciprocal rank (`rrf_fuse`, the fusion hybrid uses, with ``retrieval.rrf_k``), each list
  weighted 1. The question is one of the lists: a rewrite that drifts can pull a chunk up, never
  push the question's own hits out. The reranker then reorders the fused list for the question.

The model calls and their cache live in `sweep.generation.queries`; this module is the pure
part: the registry, parsing a reply into rewrites, the text HyDE embeds, and the fusion.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from sweep.common.registry import Entry, Registry, Traits
from sweep.retrieval.ranking import rrf_fuse
from sweep.retrieval.search import ConfigSearch, SearchResult

HYDE_SYSTEM = ("Write a short passage, two or three sentences, that answers the question as a "
               "help page would. Reply with the passage only.")
HYDE_PROMPT = "Question: {question}\nPassage:"
MULTI_SYSTEM = "You rewrite search questions. Reply with the questions only, one a line."
MULTI_PROMPT = "Write {n} different ways to ask this question:\n{question}"
EMBEDS = ("question_passage", "passage")


@dataclass(frozen=True)
class HydeSpec:
    embed: str = "question_passage"  # question_passage | passage (`hyde_text`)
    system_prompt: str = HYDE_SYSTEM
    prompt: str = HYDE_PROMPT  # {question}
    max_tokens: int = 96
    temperature: float = 0.0


@dataclass(frozen=True)
class MultiQuerySpec:
    n: int = 3  # rewrites asked for, in one call per question
    system_prompt: str = MULTI_SYSTEM
    prompt: str = MULTI_PROMPT  # {question}, {n}
    max_tokens: int = 96
    temperature: float = 0.0


def hyde_text(question: str, passage: str, embed: str) -> str:
    """What the dense search embeds for ``question`` given the model's ``passage``: an empty
    passage (the model said nothing) leaves the question alone, whatever ``embed`` says."""
    passage = " ".join(passage.split())
    if not passage:
        return question
    return passage if embed == "passage" else f"{question}\n{passage}"


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\(?\d{1,2}[.):]|[Qq]\d*[.:])\s*")


def parse_rewrites(reply: str, question: str, n: int) -> list[str]:
    """The first ``n`` distinct rewrites of a one-a-line reply: list marks (``1.``, ``-``,
    ``Q2:``) and surrounding quotes dropped; lines without a letter, lines equal to the
    question (case and spacing aside) and repeats skipped.

    >>> parse_rewrites('1. How do I get a refund?\\n2. "Can I return it?"\\n\\n3. how do I '
    ...                'get a refund?', 'What is the return policy?', 3)
    ['How do I get a refund?', 'Can I return it?']
    """
    seen = {" ".join(question.casefold().split())}
    out: list[str] = []
    for line in reply.splitlines():
        text = _BULLET.sub("", line).strip().strip("\"'\u201c\u201d").strip()
        key = " ".join(text.casefold().split())
        # a line without a letter ("1.1.1.1", "---") is a small model stuck, not a question
        if not any(ch.isalpha() for ch in key) or key in seen:
            continue
        seen.add(key)
        out.append(text)
        if len(out) == n:
            break
    return out


def fused_search(search: ConfigSearch, groups: Sequence[Sequence[str]],
                 query_vecs: np.ndarray | None) -> list[SearchResult]:
    """``multi_query``: each group (the question first, then its rewrites) searched query by
    query, the first stage's rankings fused by reciprocal rank, then reranked for the question.
    ``query_vecs`` holds one row per query, the groups' queries in order (None: a search that
    needs no vectors, or embeds each query itself). The diagnosis lists (``dense``, ``bm25``)
    are the question's own."""
    flat = [q for g in groups for q in g]
    first = replace(search, reranker=None).run_all(flat, query_vecs)
    out: list[SearchResult] = []
    at = 0
    for group in groups:
        own = first[at : at + len(group)]
        at += len(group)
        fused = rrf_fuse([r.final.indices for r in own], [1.0] * len(own), search.rrf_k,
                         search.tiebreak, search.depth) if len(own) > 1 else own[0].final
        if search.reranker is not None:
            fused = search._rerank(group[0], fused)
        out.append(SearchResult(fused, own[0].dense, own[0].bm25))
    return out


def group_heads(groups: Sequence[Sequence[str]], query_vecs: np.ndarray | None
                ) -> np.ndarray | None:
    """The rows of ``query_vecs`` that embed each group's question (its first query)."""
    if query_vecs is None:
        return None
    starts = np.cumsum([0, *(len(g) for g in groups[:-1])]).astype(np.int64)
    return query_vecs[starts]


# The retrieval.query_transform axis: its off value searches the question as it is. A
# transform asks a chat model (outside the machine, billed, and not deterministic in general:
# the gate's memo never reuses a run with one). `transform` (the endpoint) and each method's
# own settings enter config_hash only when that method is chosen.
_CHAT = Traits(remote=True, costs_money=True, deterministic=False)
_ENDPOINT = {"base_url": "http://127.0.0.1:11434/v1", "model": ""}
QUERY_TRANSFORM: Registry[str] = Registry("retrieval.query_transform", [
    Entry("none", doc="the question as it is"),
    Entry("hyde", "hyde", params={"transform": _ENDPOINT,
                                  "hyde": {"embed": HydeSpec.embed,
                                           "max_tokens": HydeSpec.max_tokens}},
          traits=Traits(remote=True, costs_money=True, deterministic=False,
                        needs_embedder=True),
          doc="a model-written passage that answers the question, embedded for the dense "
              "search"),
    Entry("multi_query", "multi_query",
          params={"transform": _ENDPOINT, "multi_query": {"n": MultiQuerySpec.n,
                                                          "max_tokens": MultiQuerySpec.max_tokens}},
          traits=_CHAT,
          doc="the question and model-written rewrites, each searched, fused by reciprocal "
              "rank"),
], off="none")
