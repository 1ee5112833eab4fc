"""The quantisation tax: what running the embedding model off the reference (torch fp32) costs
a configuration, measured against the same configuration at the reference in the same sweep.

Like the ANN tax (an approximate index against exact search over the same vectors), but across
two jobs: the pair (``embedding.backend``, ``embedding.precision``) is the only difference, so
the two scored the same questions on the same chunks. ``quant_overlap_at_k`` is the mean over
questions of the share of the reference's top k (``retrieved_ids`` of per_question.csv: the
ranking the configuration returns, after fusion or reranking) that this one also returns in its
top k; ``quant_tax_<metric>`` is the reference's value minus this one's (positive: the cheaper
pair lost that much). A configuration with no reference in the sweep reports neither.

Pure functions over plain data: the end-of-sweep table reads job folders, `sweep compare`
MLflow runs; both hand this module the flat settings, metrics and rankings of each.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.common.csvcells import restore_row
from sweep.common.files import open_regular
from sweep.common.mapping import flatten
from sweep.config.identity import (
    GENERATION_SECTIONS,
    RESULT_SECTIONS,
    inapplicable_keys,
    unhashed_flat_keys,
)

BACKEND_KEY = "embedding.backend"
PRECISION_KEY = "embedding.precision"
REFERENCE = ("torch", "fp32")
# What the comparison tables show of it (the headline's tax is added by name).
TABLE_COLUMNS = ("quant_overlap_at_10", "quant_tax_recall_at_5", "quant_tax_mrr")


@dataclass
class Run:
    """One configuration: its flat settings (``section.key``), its metrics, the content
    fingerprints of its inputs, and each question's returned ids, best first (None: not read
    yet, `needs_rankings`)."""

    flat: Mapping[str, Any]
    metrics: Mapping[str, Any]
    inputs: Mapping[str, str]
    retrieved: Mapping[str, list[str]] | None = None


def pair(flat: Mapping[str, Any]) -> tuple[str, str]:
    """(backend, precision) of a configuration; a run from before the axis ran the reference."""
    return (str(flat.get(BACKEND_KEY) or REFERENCE[0]),
            str(flat.get(PRECISION_KEY) or REFERENCE[1]))


def group_key(run: Run) -> str:
    """The configuration without its backend and precision: the settings that can change a
    result and apply to it, and the inputs it scored."""
    skip = {BACKEND_KEY, PRECISION_KEY, *unhashed_flat_keys(), *inapplicable_keys(run.flat)}
    sections = (*RESULT_SECTIONS, *GENERATION_SECTIONS)
    kept = {k: v for k, v in run.flat.items()
            if k.split(".", 1)[0] in sections and k not in skip}
    return json.dumps([kept, dict(run.inputs)], sort_keys=True, default=str)


def references(runs: Sequence[Run]) -> dict[int, int]:
    """Index of each run off the reference -> index of the same configuration at the
    reference (the first such run), for those that have one."""
    ref_of: dict[str, int] = {}
    for i, run in enumerate(runs):
        if pair(run.flat) == REFERENCE:
            ref_of.setdefault(group_key(run), i)
    return {i: ref_of[key] for i, run in enumerate(runs)
            if pair(run.flat) != REFERENCE and (key := group_key(run)) in ref_of}


def overlap_at_k(reference: Mapping[str, list[str]], other: Mapping[str, list[str]], k: int
                 ) -> float | None:
    """Mean over the questions both returned something for of the share of the reference's
    top k that ``other`` also has in its top k; None when no question is shared."""
    shares = []
    for qid, ref_ids in reference.items():
        mine = other.get(qid)
        top = ref_ids[:k]
        if mine is None or not top:
            continue
        shares.append(len(set(top) & set(mine[:k])) / len(top))
    return sum(shares) / len(shares) if shares else None


def _ks(flat: Mapping[str, Any]) -> list[int]:
    value = flat.get("eval.k", [1, 3, 5, 10])
    if isinstance(value, str):  # an MLflow param: "[1, 3, 5, 10]"
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [int(k) for k in value] if isinstance(value, list) else []


def tax(run: Run, ref: Run, names: Iterable[str]) -> dict[str, float]:
    """The quantisation tax of ``run`` against ``ref``: overlaps (when both rankings are read)
    and the difference on each of ``names`` that both report."""
    out: dict[str, float] = {}
    if run.retrieved is not None and ref.retrieved is not None:
        for k in _ks(run.flat):
            share = overlap_at_k(ref.retrieved, run.retrieved, k)
            if share is not None:
                out[f"quant_overlap_at_{k}"] = share
    for name in sorted(set(names)):
        a, b = ref.metrics.get(name), run.metrics.get(name)
        if isinstance(a, int | float) and isinstance(b, int | float):
            out[f"quant_tax_{name}"] = float(a) - float(b)
    return out


def taxes(runs: Sequence[Run], names: Iterable[str]) -> dict[int, dict[str, float]]:
    """Index of each run that has a reference -> its quantisation tax."""
    names = list(names)
    return {i: tax(runs[i], runs[j], names) for i, j in references(runs).items()}


def retrieved_ids(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """qid -> returned ids, best first, from per_question rows (``retrieved_ids`` is the top
    max(eval.k), space-separated)."""
    out: dict[str, list[str]] = {}
    for row in rows:
        ids = row.get("retrieved_ids")
        if isinstance(ids, str) and ids.strip():
            out[str(row.get("qid"))] = ids.split()
    return out


def read_retrieved(path: Path) -> dict[str, list[str]] | None:
    """`retrieved_ids` of a job's per_question.csv; None when it cannot be read."""
    try:
        with open_regular(path) as raw:
            fh = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            reader = csv.reader(fh)
            header = restore_row(next(reader, []))
            return retrieved_ids(dict(zip(header, restore_row(r), strict=False))
                                 for r in reader)
    except (OSError, csv.Error, UnicodeDecodeError):
        return None


def add_to_reports(items: Sequence[tuple[Path, dict[str, Any]]]) -> int:
    """The end-of-sweep table's quantisation tax: each finished job report with a reference
    gets the tax in its ``metrics`` (in memory; the job's report.json is its own), rankings
    read from the jobs' per_question.csv. Returns how many reports got one."""
    finished = [(folder, rep) for folder, rep in items if rep.get("status") == "FINISHED"]
    runs = [Run(flatten(rep.get("config") or {}), rep.get("metrics") or {},
                {k: str(v) for k, v in (rep.get("fingerprints") or {}).items()
                 if k in ("corpus", "golden")})
            for _, rep in finished]
    refs = references(runs)
    if not refs:
        return 0
    for i in {*refs, *refs.values()}:
        runs[i].retrieved = read_retrieved(finished[i][0] / "per_question.csv")
    for i, j in refs.items():
        headline = (finished[i][1].get("headline") or {}).get("metric")
        found = tax(runs[i], runs[j], [n for n in (headline, "recall_at_5", "mrr") if n])
        finished[i][1].setdefault("metrics", {}).update(found)
    return len(refs)
