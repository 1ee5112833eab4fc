"""Where a question's answer probably lies: the first chunk BM25 and dense search return on
the corpus. Two signals for the queue's order come from it: the two retrievers disagree (a
label there decides between them) and the place is not covered by the golden set.

Pure over plain data: chunks, a BM25 index, the vectors; the caller builds them (from the
configured chunking and model, through the caches a sweep uses).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import Document
from sweep.questions.merge import Candidate
from sweep.questions.priority import Signals
from sweep.retrieval.ranking import lexical_search, tiebreak_order, top_k

# How deep each retriever's list is looked at: the two disagree when neither's first chunk is
# among the other's first DEPTH. On COVID-QA (2,560 chunks) the first chunks alone differed
# for 75% of the questions, too many to rank by.
DEPTH = 5


@dataclass(frozen=True)
class Tops:
    """Each retriever's first chunks (indices into the chunk list), best first; BM25's is
    empty when it matched no word, dense's when dense search did not run."""

    bm25: tuple[int, ...]
    dense: tuple[int, ...]


def first_chunks(questions: Sequence[str], chunks: Sequence[Chunk],
                 bm25_scores: Callable[[str], np.ndarray] | None,
                 chunk_vecs: np.ndarray | None, query_vecs: np.ndarray | None,
                 depth: int = DEPTH) -> list[Tops]:
    """The first ``depth`` chunks of each retriever for each question (ties by chunk id, as a
    sweep breaks them)."""
    ties = tiebreak_order([c.chunk_id for c in chunks])
    out = []
    for i, q in enumerate(questions):
        b: tuple[int, ...] = ()
        d: tuple[int, ...] = ()
        if bm25_scores is not None:
            b = lexical_search(bm25_scores(q), ties, depth).indices
        if chunk_vecs is not None and query_vecs is not None:
            d = top_k(chunk_vecs @ query_vecs[i], ties, depth).indices
        out.append(Tops(b, d))
    return out


def _overlap(a: Chunk, b: Chunk) -> bool:
    return a.doc_id == b.doc_id and a.start < b.end and b.start < a.end


def _among(first: Chunk, others: Sequence[Chunk]) -> bool:
    # two chunks of an overlapping chunking that share text count as the same place
    return any(first.chunk_id == o.chunk_id or _overlap(first, o) for o in others)


def disagreement(tops: Tops, chunks: Sequence[Chunk]) -> tuple[bool, str]:
    """BM25 matches no word, or neither retriever's first chunk is among the other's first
    chunks (`DEPTH`)."""
    if not tops.dense:
        return False, ""
    d0 = chunks[tops.dense[0]]
    if not tops.bm25:
        return True, f"BM25 matches no word; dense: {d0.chunk_id}"
    b0 = chunks[tops.bm25[0]]
    if _among(b0, [chunks[i] for i in tops.dense]) or _among(d0, [chunks[i] for i in tops.bm25]):
        return False, ""
    return True, f"BM25: {b0.chunk_id}, dense: {d0.chunk_id}"


Place = tuple[str, int, int]  # (doc_id, start, end) of a returned chunk


def places_disagree(a: Sequence[Place], b: Sequence[Place]) -> bool | None:
    """Two configurations' first places for one question (each its own chunking, so compared
    by where the text lies, not by chunk id): they disagree when neither's first is among the
    other's first `DEPTH` (sharing text counts as the same place). None when either returned
    nothing."""
    if not a or not b:
        return None

    def among(first: Place, others: Sequence[Place]) -> bool:
        return any(first[0] == o[0] and first[1] < o[2] and o[1] < first[2]
                   for o in others[:DEPTH])

    return not (among(a[0], b) or among(b[0], a))


def with_sweep_disagreement(signals: dict[str, Signals], cands: Sequence[Candidate],
                            best: Sequence[Sequence[Place]], runner_up: Sequence[Sequence[Place]],
                            names: tuple[str, str]) -> dict[str, Signals]:
    """``signals`` with disagreement taken from the last sweep's best and runner-up
    configurations instead of BM25 vs dense (coverage kept)."""
    out = dict(signals)
    for c, a, b in zip(cands, best, runner_up, strict=True):
        old = signals.get(c.cid, Signals())
        d = places_disagree(a, b)
        note = f"best {names[0]}: {a[0][0]}@{a[0][1]}, runner-up {names[1]}: {b[0][0]}@{b[0][1]}" \
            if d else ""
        out[c.cid] = replace(old, disagree=d, disagree_note=note,
                             between="the last sweep's best and runner-up")
    return out


def place_of(doc: Document, offset: int) -> tuple[str, tuple[str, ...]]:
    section = doc.section_at(offset)
    return doc.doc_id, section.heading_path if section is not None else ()


def covered_places(spans: Iterable[tuple[str, int, int]], docs: Sequence[Document]
                   ) -> tuple[set[str], set[tuple[str, tuple[str, ...]]]]:
    """The documents and the sections (document, heading path) the golden set's evidence
    spans touch."""
    by_id = {d.doc_id: d for d in docs}
    doc_ids: set[str] = set()
    sections: set[tuple[str, tuple[str, ...]]] = set()
    for doc_id, start, end in spans:
        doc = by_id.get(doc_id)
        if doc is None:
            continue
        doc_ids.add(doc_id)
        for s in doc.sections or ():
            if s.start < end and start < s.end:
                sections.add((doc_id, s.heading_path))
        if not doc.sections:
            sections.add((doc_id, ()))
    return doc_ids, sections


def coverage(doc_id: str, heading_path: tuple[str, ...], covered_docs: set[str],
             covered_sections: set[tuple[str, tuple[str, ...]]]) -> tuple[bool, str]:
    """Not covered when no golden evidence lies in the candidate's document, or none in its
    section."""
    if doc_id not in covered_docs:
        return True, f"no golden question in {doc_id}"
    if (doc_id, heading_path) not in covered_sections:
        where = " > ".join(heading_path) or "its opening text"
        return True, f"no golden question in {doc_id}: {where}"
    return False, ""


def signals_for(cands: Sequence[Candidate], tops: Sequence[Tops], chunks: Sequence[Chunk],
                docs: Sequence[Document],
                covered: tuple[set[str], set[tuple[str, tuple[str, ...]]]] | None
                ) -> dict[str, Signals]:
    """Disagreement for every candidate; coverage when the golden set's places are given.
    A synthetic candidate's place is its passage; another's is dense search's first chunk
    (BM25's when dense did not run)."""
    by_id = {d.doc_id: d for d in docs}
    out: dict[str, Signals] = {}
    for c, t in zip(cands, tops, strict=True):
        disagree, note = disagreement(t, chunks)
        unc: bool | None = None
        unc_note = ""
        if covered is not None:
            place: tuple[str, tuple[str, ...]] | None = None
            if c.passage and c.passage.get("doc_id") in by_id:
                place = place_of(by_id[c.passage["doc_id"]], int(c.passage.get("start") or 0))
            else:
                first = t.dense or t.bm25
                if first:
                    ch = chunks[first[0]]
                    place = place_of(by_id[ch.doc_id], ch.start) if ch.doc_id in by_id else None
            if place is not None:
                unc, unc_note = coverage(*place, *covered)
        out[c.cid] = Signals(disagree if t.dense else None, note, unc, unc_note)
    return out
