"""Rows and an existing queue into the new queue, and what each step did.

The model, the corpus search and the files are passed in (``embed``, ``locate``), so the
whole path runs in a test on hand-made rows without a model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sweep.questions.merge import (
    Candidate,
    Merger,
    Tally,
    default_negative_below,
    merge_into,
    merge_near,
    settle,
)
from sweep.questions.priority import Signals, prioritise, step_counts
from sweep.questions.queue import FINAL
from sweep.questions.rows import Row


@dataclass
class Built:
    queue: list[Candidate]
    report: dict[str, Any] = field(default_factory=dict)


def build_queue(rows: Iterable[Row], existing: Sequence[Candidate],
                decisions: Mapping[str, str], *, redact: bool = True,
                negative_below: float | None = None,
                embed: Callable[[list[str]], np.ndarray] | None = None,
                near_threshold: float = 0.9,
                locate: Callable[[list[Candidate]], dict[str, Signals]] | None = None
                ) -> Built:
    decided = {cid for cid, d in decisions.items() if d in FINAL}
    skipped = frozenset(cid for cid, d in decisions.items() if d == "skipped")
    tally = Tally()
    merger = Merger(redact=redact, skip=decided.__contains__, tally=tally)
    for row in rows:
        merger.add(row)
    new = list(merger.by_cid.values())
    threshold = (negative_below if negative_below is not None
                 else default_negative_below(tally.ratings_max))
    settle(new, threshold)
    # Candidates of the queue file that have been labelled or rejected since stay in the
    # merge as leaders (a rephrasing of them is not a new question), then leave the queue.
    before_existing = {c.cid: c.count for c in existing}
    merged, matched = merge_into(list(existing), new)
    near_info: dict[str, Any] = {"ran": False}
    if embed is not None and len(merged) > 1:
        vectors = embed([c.question for c in merged])
        merged, tally.merged_near = merge_near(merged, vectors, near_threshold)
        near_info = {"ran": True, "threshold": near_threshold, "merged": tally.merged_near}
    elif embed is None:
        near_info["why_not"] = "--no-near"
    kept = []
    for c in merged:
        if c.cid in decided:
            tally.skipped_decided += c.count - before_existing.get(c.cid, 0)
            continue
        kept.append(c)
    signals = locate(kept) if locate is not None and kept else {}
    queue = prioritise(kept, signals, skipped)
    report = {
        "rows_read": tally.rows_read,
        "rows_empty": tally.rows_empty,
        "rows_kept": tally.rows_kept,
        "merged_exact": tally.merged_exact,
        "merged_near": tally.merged_near,
        "merged_into_queue": matched,
        "skipped_decided": tally.skipped_decided,
        "dropped_decided": sum(1 for c in merged if c.cid in decided),
        "candidates_before": len(existing),
        "candidates_new": sum(1 for c in queue if not c.existing),
        "queue_size": len(queue),
        "redaction": "on" if redact else "off",
        "redactions": dict(tally.redactions) if redact else {},
        "feedback": {
            "words": tally.feedback_words, "ratings": tally.feedback_ratings,
            "ratings_max": tally.ratings_max, "negative_below": threshold,
            "negative_below_from": "--negative-below" if negative_below is not None else
            "no ratings" if tally.ratings_max is None else
            ("bottom of a 1-5 scale" if threshold == 1.0 else "bottom of a 0-1 scale"),
            "unrecognised": tally.feedback_unrecognised,
            "unrecognised_examples": tally.unrecognised_examples,
        },
        "near_duplicates": near_info,
        "priority": {"counts": step_counts(queue, signals),
                     "skipped_at_back": sum(1 for c in queue if c.cid in skipped)},
    }
    return Built(queue, report)


def summary(report: Mapping[str, Any]) -> list[str]:
    """The terminal lines of an import report."""
    r = report
    red = r.get("redactions") or {}
    red_text = (", ".join(f"{n} {k}" for k, n in red.items() if n) or "none found") \
        if r.get("redaction") == "on" else "off (--no-redact)"
    near = r.get("near_duplicates", {})
    near_text = (f"{r['merged_near']} near duplicates merged (cosine >= {near['threshold']}, "
                 f"{near.get('model', '')})" if near.get("ran")
                 else f"near duplicates not merged ({near.get('why_not', 'nothing to merge')})")
    fb = r["feedback"]
    counts = r["priority"]["counts"]
    steps = r["priority"].get("steps", {})
    dis = steps.get("disagreement", {})
    lines = [
        f"read {r['rows_read']} rows ({r['rows_empty']} blank), kept {r['rows_kept']}; "
        f"{r['merged_exact']} exact duplicates merged; {near_text}",
        f"redacted: {red_text}",
        f"already labelled or rejected: {r['skipped_decided']} rows skipped, "
        f"{r['dropped_decided']} candidates left the queue",
        f"feedback: {fb['words']} words, {fb['ratings']} ratings (negative at or below "
        f"{fb['negative_below']:g}, {fb['negative_below_from']}), {fb['unrecognised']} "
        "unrecognised" + (f" e.g. {', '.join(map(repr, fb['unrecognised_examples']))}"
                          if fb["unrecognised_examples"] else ""),
        f"priority: {counts['negative_feedback']} with negative feedback, "
        f"{counts['asked_more_than_once']} asked more than once, "
        + (f"{counts['disagreement']} where "
           + ("the last sweep's best and runner-up" if dis.get("between") else "BM25 and dense")
           + " disagree" + (" (" + ", ".join(f"{k} {v['disagree']} of {v['candidates']}"
                                             for k, v in dis["by_source"].items()) + ")"
                            if dis.get("by_source") else "")
           if dis.get("ran")
           else f"disagreement not computed ({steps.get('disagreement', {}).get('why_not', '')})")
        + ", "
        + (f"{counts['uncovered']} outside the golden set's coverage"
           if steps.get("coverage", {}).get("ran")
           else f"coverage not computed ({steps.get('coverage', {}).get('why_not', '')})"),
        f"queue: {r['queue_size']} candidates ({r['candidates_new']} new, "
        f"{r['candidates_before']} before)",
    ]
    return lines
