"""What a golden set can be trusted to decide: an audit of the set itself (issue 28).

Per item and for the set:

- the synthetic smell (`sweep.evaluation.smell`): the share of the question's content words
  found in its evidence, and in the paragraphs around its evidence (``smell_paragraph``: the
  text a question writer looking at the passage saw; with short answer spans, as SQuAD's, the
  evidence alone holds few of the question's words however it was written);
- near-duplicate questions: the same question once normalised (`normalise_question`), or
  question embeddings whose cosine similarity reaches a threshold (the vectors are computed by
  the caller, with the model it names);
- evidence in several places: a passage whose text occurs verbatim (`sweep.data.quotes`,
  the first level that matches) more than once in the corpus, so that another place would
  answer as well and a configuration that retrieves it is scored as a miss;
- answers split across chunks: a passage no single chunk of the reference chunking holds;
- coverage: the documents and sections no question's evidence touches.

Plain data in, a plain dict out: no file, model or configuration is read here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import Document
from sweep.data.quotes import QuoteIndex
from sweep.evaluation.relevance import ChunkLocator, ResolvedItem, paragraph_around
from sweep.evaluation.smell import mean_smell, synthetic_smell


@dataclass(frozen=True)
class AuditSpec:
    # Cosine similarity at or above which two questions are near-duplicates. 0.9 on MiniLM
    # marks rewordings ("how long is the warranty" / "how long does the warranty last") and
    # leaves questions about the same topic apart.
    dup_threshold: float = 0.9
    max_pairs: int = 500  # near-duplicate pairs listed (all are counted)
    max_places: int = 5  # other places listed per ambiguous passage


_TRAILING = "?!."
_QUOTES_AROUND = "\"'\u201c\u201d\u2018\u2019"


def normalise_question(question: str) -> str:
    """NFKC, casefold, whitespace collapsed, trailing ``?!.`` and surrounding quotes stripped:
    the normalisation the labelling queue uses for exact duplicates."""
    text = " ".join(unicodedata.normalize("NFKC", question).casefold().split())
    previous = None
    while previous != text:
        previous = text
        text = text.rstrip(_TRAILING).strip().strip(_QUOTES_AROUND).strip()
    return text


def duplicate_pairs(questions: Sequence[str], vectors: np.ndarray | None, threshold: float,
                    block: int = 1024) -> list[tuple[int, int, float, str]]:
    """Pairs ``(i, j, similarity, how)`` with i < j: ``how`` is ``text`` when the normalised
    questions are equal (similarity 1.0), else ``embedding`` when the cosine similarity of
    their (L2-normalised) ``vectors`` is at least ``threshold``. Most similar first."""
    pairs: dict[tuple[int, int], tuple[float, str]] = {}
    seen: dict[str, int] = {}
    groups: dict[int, list[int]] = {}
    for i, q in enumerate(questions):
        key = normalise_question(q)
        if key in seen:
            groups.setdefault(seen[key], [seen[key]]).append(i)
        else:
            seen[key] = i
    for members in groups.values():
        for a, i in enumerate(members):
            for j in members[a + 1:]:
                pairs[(i, j)] = (1.0, "text")
    if vectors is not None and len(questions) > 1:
        vecs = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms == 0, 1.0, norms)
        for lo in range(0, len(vecs), block):  # blocks keep a 10k-question set's matrix small
            sims = vecs[lo:lo + block] @ vecs.T
            rows, cols = np.nonzero(sims >= threshold)
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
                i = lo + r
                if c > i and (i, c) not in pairs:
                    pairs[(i, c)] = (min(float(sims[r, c]), 1.0), "embedding")
    return sorted(((i, j, s, how) for (i, j), (s, how) in pairs.items()),
                  key=lambda p: (-p[2], p[0], p[1]))


_WORD = re.compile(r"\w+")


class Occurrences:
    """Where a text occurs in the corpus (`QuoteIndex.find`, so at the first level that
    matches), searched only in the documents that hold its words: one ``find`` per document
    and evidence text would cost 10^7 calls for a 5,000-document corpus."""

    def __init__(self, docs: Sequence[Document]) -> None:
        self.quotes = QuoteIndex({d.doc_id: d.text for d in docs})
        self.docs_with: dict[str, set[str]] = {}
        for d in docs:
            for word in set(_WORD.findall(d.text.lower())):
                self.docs_with.setdefault(word, set()).add(d.doc_id)

    def find(self, text: str) -> tuple[str | None, list[Any]]:
        # The first and last words may be parts of longer words elsewhere ("ship" in
        # "shipping"): only the words inside the text must occur in a document holding it.
        inner = set(_WORD.findall(text.lower())[1:-1])
        if not inner:
            return self.quotes.find(text)
        rarest = sorted((self.docs_with.get(w, set()) for w in inner), key=len)[:3]
        return self.quotes.find(text, sorted(set.intersection(*rarest)))


def _extent(spans: Sequence[tuple[str, int, int]]) -> tuple[str, int, int]:
    """The stretch of text a passage covers (its spans are in one document)."""
    return spans[0][0], min(s for _, s, _ in spans), max(e for _, _, e in spans)


def _held_by(locator: ChunkLocator, doc_id: str, start: int, end: int) -> tuple[bool, list[str]]:
    """Whether one chunk holds all of ``[start, end)``, and the chunks that hold part of it."""
    chunks = locator.overlapping(doc_id, start, end)
    whole = any(c.start <= start and end <= c.end for c in chunks)
    return whole, [c.chunk_id for c in chunks]


def audit(resolved: Sequence[ResolvedItem], docs: Sequence[Document],
          reference_chunks: Sequence[Chunk], question_vectors: np.ndarray | None = None,
          spec: AuditSpec | None = None) -> dict[str, Any]:
    """The audit of a golden set: ``{"items": [...], "set": {...}}`` (see the module)."""
    spec = spec or AuditSpec()
    by_id = {d.doc_id: d for d in docs}
    quotes = Occurrences(docs)
    locator = ChunkLocator(reference_chunks)
    questions = [r.item.question for r in resolved]
    pairs = duplicate_pairs(questions, question_vectors, spec.dup_threshold)
    dups: dict[int, list[dict[str, Any]]] = {}
    for i, j, sim, how in pairs:
        for a, b in ((i, j), (j, i)):
            dups.setdefault(a, []).append({"qid": resolved[b].item.qid,
                                           "similarity": round(sim, 4), "how": how})
    items = []
    touched_docs: set[str] = set()
    touched: dict[str, list[tuple[int, int]]] = {}
    for n, res in enumerate(resolved):
        texts = [by_id[d].text[s:e] for d, s, e in res.spans]
        paragraphs = [by_id[d].text[slice(*paragraph_around(by_id[d].text, s, e))]
                      for d, s, e in res.spans]
        touched_docs |= set(res.doc_ids)
        for d, s, e in res.spans:
            touched.setdefault(d, []).append((s, e))
        passages = res.passage_spans()
        elsewhere, split = [], []
        for p, spans in enumerate(passages):
            doc_id, start, end = _extent(spans)
            whole, held = _held_by(locator, doc_id, start, end)
            if not whole:
                split.append({"passage": p, "n_chunks": len(held), "chunk_ids": held})
            for d, s, e in spans:
                level, places = quotes.find(by_id[d].text[s:e])
                others = [pl for pl in places if not (pl.doc_id == d and pl.start == s)]
                if level is not None and others:
                    elsewhere.append({
                        "passage": p, "text": by_id[d].text[s:e][:200], "level": level,
                        "occurrences": len(places),
                        "others": [{"doc_id": pl.doc_id, "start": pl.start}
                                   for pl in others[:spec.max_places]]})
        items.append({
            "qid": res.item.qid, "line": res.item.line, "question": res.item.question,
            "source": res.item.extra.get("source"),
            "level": res.level, "needs": res.needs, "n_passages": len(passages),
            "passages_needed": res.passages_needed,
            "smell": synthetic_smell(res.item.question, texts),
            "smell_paragraph": synthetic_smell(res.item.question, paragraphs),
            "near_duplicates": dups.get(n, []),
            "evidence_elsewhere": elsewhere,
            "split": split,
        })
    return {"items": items,
            "set": _set_summary(items, pairs, docs, touched_docs, touched, resolved, spec)}


def _set_summary(items: Sequence[Mapping[str, Any]], pairs: Sequence[tuple[int, int, float, str]],
                 docs: Sequence[Document], touched_docs: set[str],
                 touched: Mapping[str, list[tuple[int, int]]],
                 resolved: Sequence[ResolvedItem], spec: AuditSpec) -> dict[str, Any]:
    smell, n_smell = mean_smell(i["smell"] for i in items)
    smell_par, _ = mean_smell(i["smell_paragraph"] for i in items)
    by_source: dict[str, list[Mapping[str, Any]]] = {}
    for i in items:
        by_source.setdefault(i["source"] or "unspecified", []).append(i)
    sources = {}
    for name, group in sorted(by_source.items()):
        mean, n = mean_smell(i["smell"] for i in group)
        sources[name] = {"mean": mean, "n": n, "items": len(group),
                         "mean_paragraph": mean_smell(i["smell_paragraph"] for i in group)[0]}
    needs = {"1": 0, "2": 0, "3plus": 0}
    for i in items:
        if i["passages_needed"]:
            needs[("1", "2", "3plus")[min(i["passages_needed"], 3) - 1]] += 1
    untouched_docs = [d.doc_id for d in docs if d.doc_id not in touched_docs]
    sections = [(d.doc_id, s) for d in docs for s in d.sections]
    untouched_sections = [
        {"doc_id": doc_id, "heading_path": list(s.heading_path), "start": s.start}
        for doc_id, s in sections
        if not any(a < s.end and s.start < b for a, b in touched.get(doc_id, ()))]
    return {
        "n_items": len(items),
        "n_spans": sum(1 for r in resolved if r.spans),
        "smell_mean": smell, "smell_n": n_smell, "smell_paragraph_mean": smell_par,
        "smell_by_source": sources,
        "passages_needed": needs,
        "n_needs_any": sum(1 for i in items if i["needs"] == "any" and i["n_passages"] > 1),
        "near_duplicates": {
            "threshold": spec.dup_threshold, "n_pairs": len(pairs),
            "n_items": sum(1 for i in items if i["near_duplicates"]),
            "n_text": sum(1 for p in pairs if p[3] == "text"),
            "pairs": [{"a": items[i]["qid"], "b": items[j]["qid"],
                       "similarity": round(s, 4), "how": how}
                      for i, j, s, how in pairs[:spec.max_pairs]]},
        "n_evidence_elsewhere": sum(1 for i in items if i["evidence_elsewhere"]),
        "n_split": sum(1 for i in items if i["split"]),
        "coverage": {
            "documents": len(docs), "documents_touched": len(docs) - len(untouched_docs),
            "untouched_documents": untouched_docs,
            "sections": len(sections),
            "sections_touched": len(sections) - len(untouched_sections),
            "untouched_sections": untouched_sections,
        },
    }


def headings(untouched: Mapping[str, Any]) -> str:
    """``doc_id › Heading › Sub`` of an untouched section, for the text and HTML views."""
    return " › ".join([untouched["doc_id"], *untouched["heading_path"]])


_SPACES = re.compile(r"\s+")


def one_line(text: str, limit: int = 90) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = _SPACES.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
