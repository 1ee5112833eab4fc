"""Every item's source scored apart (issue 27): a mean over a golden set that mixes a team's
logged questions with synthetic ones hides that the synthetic ones borrow their passage's
words and flatter retrieval. Each row of per_question.csv gets its item's ``source`` and its
synthetic ``smell`` (`sweep.evaluation.smell`); the headline metrics are then averaged per
source exactly as `evaluate` averages them over the whole set (over the rows that have the
metric), with each source's share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import methodcaller
from typing import Any

from sweep.evaluation import metrics as m
from sweep.evaluation.relevance import ResolvedItem
from sweep.evaluation.smell import mean_smell, synthetic_smell

UNSPECIFIED = "unspecified"  # an item without `source`
PREFIX = "by_source"  # metric names: by_source/<source>/<metric> (MLflow groups on "/")


def source_of(item: ResolvedItem) -> str:
    return item.item.source or UNSPECIFIED


def item_smells(resolved: Sequence[ResolvedItem], texts: Mapping[str, str]
                ) -> list[float | None]:
    """Each item's smell: its question against the text its resolved evidence spans cover
    (None: no span, or no content word). The same in every configuration of a sweep."""
    return [synthetic_smell(item.item.question,
                            [texts[d][a:b] for d, a, b in item.spans if d in texts])
            for item in resolved]


def add_source_columns(rows: Sequence[dict[str, Any]], resolved: Sequence[ResolvedItem],
                       smells: Sequence[float | None]) -> None:
    """``source`` and ``smell`` (`item_smells`) in each row, in place."""
    for row, item, smell in zip(rows, resolved, smells, strict=True):
        row["source"] = source_of(item)
        row["smell"] = smell


def headline_names(ks: Sequence[int], prompt_k: int, headline: str) -> list[str]:
    """The metrics reported per source: the headline, then the usual table's."""
    ks = sorted(set(ks) | {prompt_k})
    names = [headline, "mrr", "evidence_recall_at_budget", f"ndcg_at_{prompt_k}", "doc_mrr"]
    for prefix in ("recall", "hit", "evidence_recall"):
        names += [f"{prefix}_at_{k}" for k in ks]
    return list(dict.fromkeys(names))


def score_by_source(rows: Sequence[Mapping[str, Any]], names: Sequence[str]
                    ) -> dict[str, dict[str, Any]]:
    """``{source: {n, share, n_scored, smell_mean, n_smell, metrics: {name: mean}}}``, sources
    in order of first appearance. A metric is the mean over the source's rows that have it
    (as in `evaluate`: orphans and document-only items are not averaged in as 0); a source
    none of whose rows has it gets no entry for it."""
    total = len(rows)
    out: dict[str, dict[str, Any]] = {}
    for source in dict.fromkeys(str(r.get("source") or UNSPECIFIED) for r in rows):
        mine = [r for r in rows if str(r.get("source") or UNSPECIFIED) == source]
        smell, n_smell = mean_smell(r.get("smell") for r in mine)
        scored: dict[str, float] = {}
        for name in names:
            # A row's value is a number, as a float: not a bool, a NaN, a text or a missing
            # one (tested inline: a call per row and name was most of the cost).
            values = [v if v.__class__ is float else float(v)
                      for v in map(methodcaller("get", name), mine)
                      if v == v and (v.__class__ is float or (
                          v is not None and v.__class__ is not bool
                          and isinstance(v, int | float)))]
            if values:
                scored[name] = m.mean(values)
        out[source] = {"n": len(mine), "share": len(mine) / total if total else 0.0,
                       "n_scored": sum(1 for r in mine if r.get("status") == "scored"),
                       "smell_mean": smell, "n_smell": n_smell, "metrics": scored}
    return out


def mixed(sources: Mapping[str, Any]) -> bool:
    return len(sources) > 1


def source_metrics(sources: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Flat, MLflow-safe names: ``by_source/log/recall_at_5``, ``by_source/log/n``,
    ``by_source/log/share``, ``by_source/log/smell``; only when the set mixes sources (one
    source's figures are the set's own)."""
    if not mixed(sources):
        return {}
    out: dict[str, float] = {}
    for source, s in sources.items():
        base = f"{PREFIX}/{source}"
        out[f"{base}/n"] = float(s["n"])
        out[f"{base}/share"] = float(s["share"])
        if s["smell_mean"] is not None:
            out[f"{base}/smell"] = float(s["smell_mean"])
        for name, value in s["metrics"].items():
            out[f"{base}/{name}"] = value
    return out


def parse_metric(name: str) -> tuple[str, str] | None:
    """``by_source/log/recall_at_5`` -> ``("log", "recall_at_5")``; None for other names."""
    parts = name.split("/", 2)
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    return parts[1], parts[2]


def summary_line(sources: Mapping[str, Mapping[str, Any]], metric: str) -> str | None:
    """``log n=30 (60%) recall_at_5=0.533 smell=0.41 · synthetic ...`` for the end of a sweep."""
    if not mixed(sources):
        return None
    parts = []
    for source, s in sources.items():
        value = s["metrics"].get(metric)
        smell = s["smell_mean"]
        parts.append(f"{source} n={s['n']} ({s['share']:.0%}) "
                     f"{metric}={'-' if value is None else f'{value:.3f}'}"
                     f" smell={'-' if smell is None else f'{smell:.2f}'}")
    return " · ".join(parts)
