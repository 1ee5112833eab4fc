"""Score rankings against resolved relevance: per-question rows and their averages."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from operator import itemgetter, methodcaller
from typing import Any

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.evaluation import metrics as m
from sweep.evaluation.catalog import METRICS, Documents, Plan, Question
from sweep.evaluation.placement import placed_spans
from sweep.evaluation.relevance import ChunkLocator, ResolvedItem, relevant_chunks
from sweep.retrieval.ranking import Ranking


@dataclass(frozen=True)
class EvalSpec:
    k: tuple[int, ...] = (1, 3, 5, 10)
    prompt_k: int = 5
    token_budget: int = 1024
    min_overlap: float = 0.5
    span_mode: str = "exact"  # exact | chroma (evaluation/placement.py)

    def metric_names(self) -> list[str]:
        return metric_names(self.k, self.prompt_k)


# "Min" retrieval (Chroma's): each question reads as many chunks as touch its evidence, at most:
MIN_MODE_CAP = 20


def metric_names(k: Sequence[int], prompt_k: int) -> list[str]:
    """Every per-question metric `evaluate` averages (`catalog.METRICS`), for a headline
    check before any work."""
    return METRICS.question_names(k, prompt_k)


def _picked(values: Sequence[Any], indices: Sequence[int]) -> list[Any]:
    """``[values[i] for i in indices]``, picked in one call (read 100 deep per question)."""
    if len(indices) > 1:
        return list(itemgetter(*indices)(values))
    return [values[i] for i in indices]


class _Placed:
    """Each chunk's span as the metrics read it (``spec.span_mode``), and which of them touch
    a question's evidence."""

    def __init__(self, chunks: Sequence[Chunk], mode: str, texts: Mapping[str, str] | None
                 ) -> None:
        self.spans = placed_spans(chunks, mode, texts)
        self.closed = mode == "chroma"
        by_doc: dict[str, list[int]] = {}
        for i, (doc_id, _, _) in enumerate(self.spans):
            by_doc.setdefault(doc_id, []).append(i)
        self.by_doc = by_doc
        # Where a document's starts and ends both never decrease (a chunker's spans in exact
        # mode) the chunks touching a span are one slice of them, found by bisection; else
        # (chroma's moved spans, nested units) one comparison over arrays of the bounds.
        self.bounds: dict[str, tuple[Any, Any, bool]] = {}
        for d, ix in by_doc.items():
            starts = [self.spans[i][1] for i in ix]
            ends = [self.spans[i][2] for i in ix]
            if all(a <= b for a, b in pairwise(starts)) and all(a <= b for a, b in pairwise(ends)):
                self.bounds[d] = (starts, ends, True)
            else:
                self.bounds[d] = (np.array(starts), np.array(ends), False)

    def touching(self, evidence: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
        """Chunks that touch ``evidence`` (a pre-filter on the bounds; the metric decides)."""
        hit: set[int] = set()
        for doc_id, s, e in evidence:
            if doc_id in self.by_doc:
                ix = self.by_doc[doc_id]
                st, en, ordered = self.bounds[doc_id]
                if ordered and self.closed:  # st <= e and en >= s
                    hit.update(ix[bisect_left(en, s):bisect_right(st, e)])
                elif ordered:  # st < e and en > s
                    hit.update(ix[bisect_right(en, s):bisect_left(st, e)])
                else:
                    mask = ((st <= e) & (en >= s)) if self.closed else ((st < e) & (en > s))
                    hit.update(ix[j] for j in np.flatnonzero(mask))
        return m.touching_spans([self.spans[i] for i in sorted(hit)], evidence, self.closed)


class _Scores:
    """Per-question metric values, written into the rows; the rows that got each `Plan`'s
    values are kept (not the values again) and read back per metric for the averages."""

    def __init__(self, plans: Sequence[Plan]) -> None:
        self._plans = plans
        self._rows: list[list[dict[str, Any]]] = [[] for _ in plans]

    def put_all(self, row: dict[str, Any], which: int, values: list[Any]) -> None:
        """``values`` of plan ``which`` into ``row``, by the plan's names."""
        row.update(zip(self._plans[which].names, values, strict=True))
        self._rows[which].append(row)

    def by_metric(self) -> dict[str, list[Any]]:
        """Each metric's values, in question order."""
        out: dict[str, list[Any]] = {}
        for plan, rows in zip(self._plans, self._rows, strict=True):
            if rows:
                values = zip(*map(itemgetter(*plan.names), rows), strict=True)
                out.update(zip(plan.names, map(list, values), strict=True))
        return out


@dataclass(frozen=True)
class _Fixed:
    """What scoring a question some chunk answers reads of the chunking alone, before any
    ranking: its relevant chunks (ids, and positions in the chunk list), the chunks touching
    its evidence (Precision_Ω) and the "Min" k, and each evidence passage's relevant chunks."""

    relevant: set[str]
    positions: set[int]
    near: list[tuple[str, int, int]]
    k_min: int
    passages: list[set[str]]
    unheld: int  # passages no chunk holds


class _Prepared:
    """Everything `evaluate` reads of a chunking and the questions before any ranking, per
    question: its relevant chunk ids in first-seen order (`relevant_chunks`) and, for a
    question some chunk answers, its `_Fixed`."""

    def __init__(self, resolved: Sequence[ResolvedItem], chunks: Sequence[Chunk],
                 spec: EvalSpec, texts: Mapping[str, str] | None) -> None:
        locator = ChunkLocator(chunks)
        self.placed = placed = _Placed(chunks, spec.span_mode, texts)
        position = {c.chunk_id: i for i, c in enumerate(chunks)}
        self.relevant: list[list[str]] = []
        self.fixed: list[_Fixed | None] = []
        for item in resolved:
            relevant = relevant_chunks(item.spans, locator, spec.min_overlap)
            self.relevant.append(relevant)
            if not relevant:
                self.fixed.append(None)
                continue
            near = placed.touching(item.spans)
            # Each evidence passage's relevant chunks, found the way the item's are, for the
            # metrics that ask whether the whole answer was found.
            passages = [set(relevant_chunks(p, locator, spec.min_overlap))
                        for p in item.passage_spans()]
            rel = set(relevant)
            self.fixed.append(_Fixed(
                relevant=rel, positions={position[c] for c in rel if c in position},
                near=near, k_min=min(max(len(near), 1), MIN_MODE_CAP), passages=passages,
                unheld=sum(1 for p in passages if not p)))


# The chunkings `evaluate` prepared last, with what they were prepared from: the two jobs of
# a sweep whose chunks differ only in what is embedded (chunk.header) score the same spans
# for the same questions, so the second reuses the first's `_Prepared`.
_PREPARED: list[tuple[tuple[Any, ...], list[ResolvedItem], _Prepared]] = []
PREPARED_KEPT = 2


def _prepared(resolved: Sequence[ResolvedItem], chunks: Sequence[Chunk], spec: EvalSpec,
              texts: Mapping[str, str] | None) -> _Prepared:
    """`_Prepared` of these questions and chunks, reused where an earlier call of this
    process had equal questions, chunk spans and ids, and settings. Only span mode
    ``exact``: ``chroma`` places chunks by their text, which is not in the key."""
    if spec.span_mode != "exact":
        return _Prepared(resolved, chunks, spec, texts)
    # All `_Prepared` reads of a chunk in exact mode (its place and its id), and of the spec.
    key = (spec.span_mode, spec.min_overlap,
           tuple([(c.chunk_id, c.doc_id, c.start, c.end) for c in chunks]))
    items = list(resolved)
    for kept_key, kept_items, prepared in reversed(_PREPARED):
        if kept_key == key and kept_items == items:
            return prepared
    prepared = _Prepared(items, chunks, spec, texts)
    _PREPARED.append((key, items, prepared))
    del _PREPARED[:-PREPARED_KEPT]
    return prepared


def _question(row: dict[str, Any], item: ResolvedItem, fixed: _Fixed, ranked_ids: list[str],
              indices: Sequence[int], placed: _Placed, chunk_tokens: list[int],
              spec: EvalSpec, ks: Sequence[int]) -> Question:
    """What the chunk-level metrics of a question some chunk answers read: the ranks, the
    span metrics and the passages found of its ranking for every k, from one pass each
    (`metrics.TopKRanks`, `metrics.TopKSpans`, `metrics.TopKPassages`, equal to the
    per-metric functions: tests/unit/evaluation/test_topk.py), every chunk that touches the
    evidence (Precision_Ω) and the "Min" k."""
    near, k_min = fixed.near, fixed.k_min
    tokens = _picked(chunk_tokens, indices)
    # Deep enough for every k read: the ks, the "Min" k and the chunks in the budget;
    # one span more tells TopKSpans whether the ranking goes on below that depth.
    depth = max(ks[-1], k_min, m.take_within_budget(tokens, spec.token_budget))
    top = m.TopKSpans(_picked(placed.spans, indices[: depth + 1]), item.spans,
                      depth)
    row["n_touching"] = len(near)
    passages = fixed.passages
    row["n_passages"] = len(passages)
    row["passages_needed"] = item.passages_needed
    row["needs"] = item.needs
    if fixed.unheld:  # never found, in any k: this chunking cannot hand over the whole answer
        row["n_passages_without_chunk"] = fixed.unheld
    rel = fixed.relevant
    return Question(ranked_ids=ranked_ids, relevant=rel, tokens=tokens,
                    ranks=m.TopKRanks(ranked_ids, rel, ks[-1]), spans=top,
                    passages=passages,
                    found=m.TopKPassages(ranked_ids, passages, item.needs, ks[-1]),
                    needs=item.needs,
                    evidence=item.spans, touching=near, closed=placed.closed, k_min=k_min,
                    token_budget=spec.token_budget)


def _found_by(row: dict[str, Any], rel_positions: set[int],
              diagnostics: Mapping[str, Ranking], prompt_k: int) -> str | None:
    """Each diagnostic ranking's first relevant rank into ``row``; with two of them, which
    found the answer in the top ``prompt_k``."""
    found = []
    for name, ranking in diagnostics.items():
        r = m.first_relevant_rank(ranking.indices, rel_positions)
        row[f"{name}_first_relevant_rank"] = r
        if r is not None and r <= prompt_k:
            found.append(name)
    if len(diagnostics) != 2:
        return None
    return "both" if len(found) == 2 else f"{found[0]}_only" if found else "neither"


def _unscored_status(row: dict[str, Any], item: ResolvedItem) -> None:
    row["first_relevant_rank"] = None
    if item.spans:
        row["status"] = "orphan"
        row["orphan_reason"] = "no chunk of this configuration covers the evidence"
    elif item.level == "doc":
        row["status"] = "doc_only"
    else:
        row["status"] = "orphan"
        row["orphan_reason"] = item.orphan_reason or "evidence could not be placed in the corpus"


def evaluate(
    resolved: Sequence[ResolvedItem],
    chunks: Sequence[Chunk],
    rankings: Sequence[Ranking],
    spec: EvalSpec,
    diagnostics: Mapping[str, Sequence[Ranking | None]] | None = None,
    texts: Mapping[str, str] | None = None,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Per-question rows and the mean of each metric over the questions it applies to.

    Chunk-level metrics average over items whose evidence some chunk of this configuration
    covers; document-level metrics over items that name a document. The rest are orphans,
    counted in ``n_orphans`` and listed with a reason in the rows, never averaged as 0.

    ``diagnostics`` holds other rankings of the same questions (``{"dense": [...], "bm25":
    [...]}``): each row gets the rank of the first relevant chunk in each, and ``found_by``
    says which of them had one in the top ``prompt_k`` (``dense_only``, ``bm25_only``,
    ``both``, ``neither``), which is the seed's decision table made visible: answers only BM25
    finds call for hybrid search; answers found but ranked 5-15 call for a reranker.

    Span metrics (evidence recall, span precision and IoU, Precision_Ω and the "Min" k) use
    the chunk spans of ``spec.span_mode``; ``chroma`` needs ``texts`` ({doc_id: text}).
    ``precision_omega`` and ``*_at_min`` read every chunk that touches the evidence:
    ``n_touching`` in the row, with Chroma's closed interval test in ``chroma`` mode.
    """
    prepared = _prepared(resolved, chunks, spec, texts)
    placed = prepared.placed
    # Read per ranked index below: cheaper than the chunk's attributes, 100 deep per question.
    chunk_ids = [c.chunk_id for c in chunks]
    chunk_tokens = [c.n_tokens for c in chunks]
    chunk_docs = [c.doc_id for c in chunks]
    ks = sorted(set(spec.k) | {spec.prompt_k})
    rows: list[dict[str, Any]] = []
    chunk_plan, doc_plan = Plan(METRICS.at("chunk"), ks), Plan(METRICS.at("doc"), ks)
    scores = _Scores((chunk_plan, doc_plan))
    diagnostics = {k: v for k, v in (diagnostics or {}).items() if v and v[0] is not None}
    found_counts: dict[str, int] = {}
    for n, (item, ranking) in enumerate(zip(resolved, rankings, strict=True)):
        ranked_ids = _picked(chunk_ids, ranking.indices)
        relevant = prepared.relevant[n]
        row: dict[str, Any] = {
            "qid": item.item.qid,
            "question": item.item.question,
            "retrieved_ids": " ".join(ranked_ids[: max(ks)]),
            "relevant_ids": " ".join(relevant),
            "evidence_source": item.source,
        }
        fixed = prepared.fixed[n]
        if fixed is not None:
            row["status"] = "scored"
            row["first_relevant_rank"] = m.first_relevant_rank(ranked_ids, fixed.relevant)
            question = _question(row, item, fixed, ranked_ids, ranking.indices, placed,
                                 chunk_tokens, spec, ks)
            scores.put_all(row, 0, chunk_plan.values(question))
            row["evidence_coverage_at_prompt_k"] = row[f"evidence_recall_at_{spec.prompt_k}"]
            found = _found_by(row, fixed.positions,
                              {name: lists[n] for name, lists in diagnostics.items()},
                              spec.prompt_k)
            if found is not None:
                row["found_by"] = found
                found_counts[found] = found_counts.get(found, 0) + 1
        else:
            _unscored_status(row, item)
        if item.doc_ids:
            docs = m.collapse_to_docs(_picked(chunk_docs, ranking.indices))
            documents = Documents(docs, item.doc_ids, m.TopKRanks(docs, item.doc_ids, ks[-1]))
            scores.put_all(row, 1, doc_plan.values(documents))
        rows.append(row)

    summary = {name: m.mean(vals) for name, vals in sorted(scores.by_metric().items())}
    statuses = [r["status"] for r in rows]
    summary["n_questions"] = len(rows)
    summary["n_scored"] = statuses.count("scored")
    summary["n_doc_only"] = statuses.count("doc_only")
    summary["n_orphans"] = statuses.count("orphan")
    if len(diagnostics) == 2:
        for name in diagnostics:
            summary[f"n_found_only_by_{name}"] = found_counts.get(f"{name}_only", 0)
    return summary, rows


# The groups of the per-need split: how many passages an answer needs.
NEED_GROUPS = ("1", "2", "3plus")


def need_group(passages_needed: int) -> str | None:
    """``"1"``, ``"2"`` or ``"3plus"``; None for an item without passages (document-level)."""
    if passages_needed <= 0:
        return None
    return NEED_GROUPS[min(passages_needed, 3) - 1]


def by_needs(rows: Sequence[Mapping[str, Any]], names: Sequence[str]
             ) -> dict[str, dict[str, float]]:
    """Each of ``names`` averaged per group of questions needing 1, 2 or 3+ passages, with
    ``n`` (the scored questions of the group): ``{"1": {"n": 40, "recall_at_5": 0.8}, ...}``.

    A metric's mean is over the group's rows that hold it (the filtered mean of
    per_question.csv); a group without questions has ``n`` 0 and no means.
    """
    grouped: dict[str, list[Mapping[str, Any]]] = {g: [] for g in NEED_GROUPS}
    for row in rows:
        group = need_group(int(row.get("passages_needed") or 0))
        if group is not None and row.get("status") == "scored":
            grouped[group].append(row)
    out: dict[str, dict[str, float]] = {}
    for group, mine in grouped.items():
        out[group] = {"n": len(mine)}
        for name in names:  # one pass over the group's rows per name, no call per row
            values = [float(v) for v in map(methodcaller("get", name), mine)
                      if isinstance(v, int | float)]
            if values:
                out[group][name] = m.mean(values)
    return out


def by_needs_metrics(split: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The split as flat, MLflow-safe metric names: ``n_needs_2``, ``recall_at_5_needs_2``."""
    flat: dict[str, float] = {}
    for group, values in split.items():
        for name, value in values.items():
            flat[f"n_needs_{group}" if name == "n" else f"{name}_needs_{group}"] = float(value)
    return flat
