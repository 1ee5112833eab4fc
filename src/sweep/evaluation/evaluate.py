"""Score rankings against resolved relevance: per-question rows and their averages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep.chunking.chunkers import Chunk
from sweep.evaluation import metrics as m
from sweep.evaluation.relevance import ChunkLocator, ResolvedItem, relevant_chunks
from sweep.retrieval.ranking import Ranking


@dataclass(frozen=True)
class EvalSpec:
    k: tuple[int, ...] = (1, 3, 5, 10)
    prompt_k: int = 5
    token_budget: int = 1024
    min_overlap: float = 0.5


def metric_names(k: Sequence[int], prompt_k: int) -> list[str]:
    """Every per-question metric `evaluate` averages, for a headline check before any work."""
    ks = sorted(set(k) | {prompt_k})
    names = ["mrr", "doc_mrr", "evidence_recall_at_budget"]
    for prefix in ("recall", "hit", "ndcg", "evidence_recall", "context_tokens", "doc_recall"):
        names += [f"{prefix}_at_{n}" for n in ks]
    return names


def evaluate(
    resolved: Sequence[ResolvedItem],
    chunks: Sequence[Chunk],
    rankings: Sequence[Ranking],
    spec: EvalSpec,
    diagnostics: Mapping[str, Sequence[Ranking | None]] | None = None,
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
    """
    locator = ChunkLocator(chunks)
    position = {c.chunk_id: i for i, c in enumerate(chunks)}
    ks = sorted(set(spec.k) | {spec.prompt_k})
    rows: list[dict[str, Any]] = []
    values: dict[str, list[float]] = {}

    def put(row: dict[str, Any], name: str, value: float) -> None:
        row[name] = value
        values.setdefault(name, []).append(value)

    diagnostics = {k: v for k, v in (diagnostics or {}).items() if v and v[0] is not None}
    found_counts: dict[str, int] = {}
    for n, (item, ranking) in enumerate(zip(resolved, rankings, strict=True)):
        ranked = [chunks[i] for i in ranking.indices]
        ranked_ids = [c.chunk_id for c in ranked]
        relevant = relevant_chunks(item.spans, locator, spec.min_overlap)
        row: dict[str, Any] = {
            "qid": item.item.qid,
            "question": item.item.question,
            "retrieved_ids": " ".join(ranked_ids[: max(ks)]),
            "relevant_ids": " ".join(relevant),
            "evidence_source": item.source,
        }
        if relevant:
            rel = set(relevant)
            spans = [(c.doc_id, c.start, c.end) for c in ranked]
            tokens = [c.n_tokens for c in ranked]
            rank = m.first_relevant_rank(ranked_ids, rel)
            row["status"] = "scored"
            row["first_relevant_rank"] = rank
            put(row, "mrr", m.reciprocal_rank(ranked_ids, rel))
            for k in ks:
                put(row, f"recall_at_{k}", m.recall_at_k(ranked_ids, rel, k))
                put(row, f"hit_at_{k}", m.hit_at_k(ranked_ids, rel, k))
                put(row, f"ndcg_at_{k}", m.ndcg_at_k(ranked_ids, dict.fromkeys(rel, 1.0), k))
                put(row, f"evidence_recall_at_{k}", m.evidence_recall_at_k(spans, item.spans, k))
                put(row, f"context_tokens_at_{k}", m.context_tokens_at_k(tokens, k))
            put(row, "evidence_recall_at_budget",
                m.evidence_recall_at_budget(spans, tokens, item.spans, spec.token_budget))
            row["evidence_coverage_at_prompt_k"] = row[f"evidence_recall_at_{spec.prompt_k}"]
            found = []
            rel_positions = {position[c] for c in rel if c in position}
            for name, lists in diagnostics.items():
                r = m.first_relevant_rank(lists[n].indices, rel_positions)
                row[f"{name}_first_relevant_rank"] = r
                if r is not None and r <= spec.prompt_k:
                    found.append(name)
            if len(diagnostics) == 2:
                row["found_by"] = ("both" if len(found) == 2 else f"{found[0]}_only" if found
                                   else "neither")
                found_counts[row["found_by"]] = found_counts.get(row["found_by"], 0) + 1
        else:
            row["first_relevant_rank"] = None
            if item.spans:
                row["status"] = "orphan"
                row["orphan_reason"] = "no chunk of this configuration covers the evidence"
            elif item.level == "doc":
                row["status"] = "doc_only"
            else:
                row["status"] = "orphan"
                row["orphan_reason"] = (item.orphan_reason
                                        or "evidence could not be placed in the corpus")
        if item.doc_ids:
            docs = m.collapse_to_docs([c.doc_id for c in ranked])
            put(row, "doc_mrr", m.reciprocal_rank(docs, item.doc_ids))
            for k in ks:
                put(row, f"doc_recall_at_{k}", m.recall_at_k(docs, set(item.doc_ids), k))
        rows.append(row)

    summary = {name: m.mean(vals) for name, vals in sorted(values.items())}
    statuses = [r["status"] for r in rows]
    summary["n_questions"] = len(rows)
    summary["n_scored"] = statuses.count("scored")
    summary["n_doc_only"] = statuses.count("doc_only")
    summary["n_orphans"] = statuses.count("orphan")
    if len(diagnostics) == 2:
        for name in diagnostics:
            summary[f"n_found_only_by_{name}"] = found_counts.get(f"{name}_only", 0)
    return summary, rows
