"""What the model gets: each question's assembled context scored against its evidence
(issue 47; the assembly itself: `sweep.retrieval.assembly`).

Evidence recall at k asks whether the evidence is in the top k of the ranking; once chunks are
dropped for a token budget or as repeats, and reordered, the prompt holds something else. The
figures here are read off the context `assemble` builds, per scored question, into its row of
per_question.csv, and averaged over the scored questions as `evaluate` averages its metrics:

* ``assembled_evidence_recall``: share of the evidence characters inside the context;
* ``assembled_tokens``: the context's tokens (the chunks' own counts), its cost;
* ``assembled_chunks``: how many chunks it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sweep.chunking.chunkers import Chunk
from sweep.evaluation import metrics as m
from sweep.evaluation.relevance import ResolvedItem
from sweep.retrieval.assembly import AssemblySpec, assemble
from sweep.retrieval.ranking import Ranking

NAMES = ("assembled_evidence_recall", "assembled_tokens", "assembled_chunks")


def context_scores(context: Sequence[Chunk], evidence: Sequence[m.Span]) -> dict[str, float]:
    """The three figures of one question's context."""
    covered, total = m.covered_chars(evidence, [(c.doc_id, c.start, c.end) for c in context])
    return {"assembled_evidence_recall": covered / total if total else 0.0,
            "assembled_tokens": float(sum(c.n_tokens for c in context)),
            "assembled_chunks": float(len(context))}


def score_assembled(rows: Sequence[dict[str, Any]], resolved: Sequence[ResolvedItem],
                    chunks: Sequence[Chunk], rankings: Sequence[Ranking], prompt_k: int,
                    spec: AssemblySpec) -> dict[str, float]:
    """Each scored row gets its context's figures and ``assembled_ids`` (prompt order), in
    place; returns their means over the scored rows (none when no row is scored)."""
    values: dict[str, list[float]] = {n: [] for n in NAMES}
    for row, item, ranking in zip(rows, resolved, rankings, strict=True):
        if row.get("status") != "scored":
            continue
        context = [chunks[i] for i in assemble(ranking.indices, chunks, prompt_k, spec)]
        scores = context_scores(context, item.spans)
        row.update(scores)
        row["assembled_ids"] = " ".join(c.chunk_id for c in context)
        for name, value in scores.items():
            values[name].append(value)
    return {name: m.mean(v) for name, v in values.items() if v}
