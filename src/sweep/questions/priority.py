"""The queue's order, and the reason each candidate sits where it sits.

Rules, in order: negative feedback (more thumbs-down first), then frequency (asked more
often first), then disagreement (BM25 and dense search put different chunks first: a label
there decides between them), then coverage (its passage lies in a document or section no
golden question touches yet). Candidates skipped on the label page go to the back. Ties fall
to the earliest first-seen, then the cid, so the order is the same on every run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sweep.questions.merge import Candidate


@dataclass(frozen=True)
class Signals:
    """What the optional steps found for one candidate (None: the step did not run)."""

    disagree: bool | None = None
    disagree_note: str = ""
    uncovered: bool | None = None
    uncovered_note: str = ""
    # who disagrees: the two retrievers, or the last sweep's best and runner-up
    between: str = "BM25 and dense"


def _reason(c: Candidate, s: Signals, skipped: bool) -> str:
    parts = []
    if c.negative_count:
        parts.append(f"negative feedback {c.negative_count} of {c.count} times asked")
    parts.append(f"asked {c.count} time{'s' if c.count != 1 else ''}")
    if s.disagree:
        parts.append(f"{s.between} disagree ({s.disagree_note})" if s.disagree_note
                     else f"{s.between} disagree")
    if s.uncovered:
        parts.append(f"not covered by the golden set ({s.uncovered_note})" if s.uncovered_note
                     else "not covered by the golden set")
    if skipped:
        parts.append("skipped on the label page, so at the back")
    return "; ".join(parts)


def prioritise(cands: Sequence[Candidate], signals: Mapping[str, Signals] | None = None,
               skipped: frozenset[str] = frozenset()) -> list[Candidate]:
    """``cands`` sorted into queue order, each with ``priority`` (1 = first) and ``reason``."""
    signals = signals or {}
    empty = Signals()

    def key(c: Candidate) -> tuple:
        s = signals.get(c.cid, empty)
        return (c.cid in skipped, -c.negative_count, -c.count, not s.disagree,
                not s.uncovered, c.first_seen is None, c.first_seen or "", c.cid)

    out = sorted(cands, key=key)
    for rank, c in enumerate(out, 1):
        s = signals.get(c.cid, empty)
        c.priority = rank
        c.reason = _reason(c, s, c.cid in skipped)
    return out


def step_counts(cands: Sequence[Candidate], signals: Mapping[str, Signals]) -> dict[str, int]:
    """How many candidates each rule lifted, for the import report."""
    return {
        "negative_feedback": sum(1 for c in cands if c.negative_count),
        "asked_more_than_once": sum(1 for c in cands if c.count > 1),
        "disagreement": sum(1 for c in cands if signals.get(c.cid, Signals()).disagree),
        "uncovered": sum(1 for c in cands if signals.get(c.cid, Signals()).uncovered),
    }
