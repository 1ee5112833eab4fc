"""One sweep, one set of questions: evidence a configuration lost counts as its miss.

Each job scores the questions whose evidence its own parsed text holds; a question whose quote
its parser dropped is an orphan of that job, kept out of its means (a job cannot know that
another parser kept the text). Compared that way, a parser that throws the answer away is
scored on fewer, easier questions and can rank first. Where a sweep's configurations are put
side by side, the rule is therefore:

* a question scored in some configuration and an orphan in another is *lost* by the latter
  (``lost_in_parsing``): it counts there as a miss (0) in the headline, the verdicts and the
  axis effects, so every configuration is scored on the same questions;
* a question that is an orphan in every configuration is a label problem: listed, kept out.

Pure functions over ``{qid: status}`` and ``{qid: score}`` maps; the callers read the files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweep.outputs.report import lower_is_better

ORPHAN = "orphan"
SCORED = "scored"


@dataclass
class Lost:
    """``lost[i]``: the questions row i lost (sorted; empty for a row without per-question
    rows); ``everywhere``: the questions orphaned in every row that has them (sorted)."""

    lost: list[list[str]]
    everywhere: list[str]

    @property
    def any(self) -> bool:
        return any(self.lost)


def statuses(frame: Any) -> dict[str, str] | None:
    """``{qid: status}`` of a per_question table (None: no table, or one without a status)."""
    if frame is None or "status" not in frame.columns or "qid" not in frame.columns:
        return None
    return dict(zip(frame["qid"].astype(str), frame["status"].astype(str), strict=True))


def lost_questions(rows: Sequence[Mapping[str, str] | None],
                   groups: Sequence[str | None] | None = None) -> Lost:
    """Which questions each configuration lost, from each one's ``{qid: status}``. With
    ``groups`` (each row's golden set fingerprint, None when unknown), only rows of one group
    are compared: a sweep over golden sets scores other questions under the same ids."""
    keys = list(groups) if groups is not None else [None] * len(rows)
    lost: list[list[str]] = [[] for _ in rows]
    everywhere: set[str] = set()
    for key in dict.fromkeys(keys):
        members = [i for i, k in enumerate(keys) if k == key and rows[i] is not None]
        if not members:
            continue
        scored = {q for i in members for q, s in rows[i].items() if s == SCORED}  # type: ignore[union-attr]
        orphaned = [{q for q, s in rows[i].items() if s == ORPHAN} for i in members]  # type: ignore[union-attr]
        for i, mine in zip(members, orphaned, strict=True):
            lost[i] = sorted(mine & scored)
        everywhere |= set.intersection(*orphaned)
    return Lost(lost, sorted(everywhere))


def miss_value(metric: str) -> float | None:
    """What a lost question scores: 0 on a metric where higher is better (a recall, a rank's
    reciprocal, a hit); None where a miss has no value (a cost)."""
    return None if lower_is_better(metric) or metric.startswith("n_") else 0.0


def with_misses(scores: Mapping[str, float], lost: Sequence[str], metric: str
                ) -> dict[str, float]:
    """``scores`` with each lost question that has no score there counted as a miss."""
    value = miss_value(metric)
    out = dict(scores)
    if value is not None:
        for q in lost:
            out.setdefault(q, value)
    return out


def mean(scores: Mapping[str, float]) -> float | None:
    return sum(scores.values()) / len(scores) if scores else None


def lost_line(names: Sequence[str], found: Lost) -> list[str]:
    """What the summary and `sweep compare` say about lost and everywhere-orphaned questions
    (nothing when there are none)."""
    out = []
    for name, qids in zip(names, found.lost, strict=True):
        if qids:
            shown = ", ".join(qids[:8]) + (" ..." if len(qids) > 8 else "")
            out.append(f"lost_in_parsing: {name} lost the evidence of {len(qids)} question(s) "
                       f"another configuration kept ({shown}); counted as misses there, so "
                       "every configuration is scored on the same questions")
    if found.everywhere and found.any:
        shown = ", ".join(found.everywhere[:8]) + (" ..." if len(found.everywhere) > 8 else "")
        out.append(f"orphans in every configuration (a label problem; kept out of every "
                   f"mean): {len(found.everywhere)} ({shown})")
    return out
