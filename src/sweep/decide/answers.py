"""Does the retrieval winner also win on answers? The closing statement of an answer run over a
few configurations (``make demo-answers``, or any sweep run with ``generation=...``).

Pure over plain data: each configuration is its name, its retrieval headline value and its
per-question answer verdicts (1/0, live and oracle). The paired intervals are
`sweep.decide.stats.paired_bootstrap` over the questions both configurations graded; the rank
agreement is `sweep.decide.rerun.agreement` (Kendall's concordance of the retrieval order with
the live answer accuracy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sweep.decide.rerun import agreement
from sweep.decide.stats import paired_bootstrap
from sweep.generation.run import DIAGNOSES


@dataclass(frozen=True)
class AnswerRun:
    """One configuration's retrieval headline and its graded answers (qid -> 1.0/0.0)."""

    name: str
    retrieval: float  # the retrieval headline (higher is better)
    live: Mapping[str, float]
    oracle: Mapping[str, float]
    diagnosis: Mapping[str, int] = field(default_factory=dict)

    def accuracy(self, arm: str) -> float | None:
        values = list((self.live if arm == "live" else self.oracle).values())
        return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Pair:
    """The retrieval winner minus another configuration, on live answer accuracy."""

    other: str
    n: int
    diff: float
    lo: float
    hi: float


def compare_to_winner(runs: Sequence[AnswerRun], n: int = 10_000, seed: int = 0
                      ) -> tuple[AnswerRun, list[Pair]]:
    """The retrieval winner (highest headline; the first on a tie) and its paired live-accuracy
    difference with each other configuration over the questions both graded."""
    if not runs:
        raise ValueError("no configuration to compare")
    winner = max(runs, key=lambda r: r.retrieval)  # max keeps the first of equal values
    pairs = []
    for other in runs:
        if other is winner:
            continue
        qids = sorted(set(winner.live) & set(other.live))
        if not qids:
            continue
        diff, lo, hi, _ = paired_bootstrap([winner.live[q] for q in qids],
                                           [other.live[q] for q in qids], n=n, seed=seed)
        pairs.append(Pair(other.name, len(qids), diff, lo, hi))
    return winner, pairs


def closing_statement(runs: Sequence[AnswerRun], n: int = 10_000, seed: int = 0
                      ) -> list[str]:
    """The lines that answer the seed's question, in words and figures."""
    winner, pairs = compare_to_winner(runs, n, seed)
    order = [r.name for r in sorted(runs, key=lambda r: -r.retrieval)]
    live = {r.name: acc for r in runs if (acc := r.accuracy("live")) is not None}
    lines = [f"retrieval winner: {winner.name} (headline {winner.retrieval:.3f}, live answer "
             f"accuracy {_pct(winner.accuracy('live'))})"]
    shown_in_answers = True
    for p in pairs:
        where = (f"{p.diff:+.3f} [95% CI {p.lo:+.3f}, {p.hi:+.3f}] over {p.n} paired questions")
        if p.lo > 0:
            verdict = "wins on answers too"
        elif p.hi < 0:
            verdict = "LOSES on answers: its retrieval win does not show in answers"
            shown_in_answers = False
        elif p.diff > 0:
            verdict = "leads on answers, but the interval includes zero (not shown)"
            shown_in_answers = False
        elif p.diff == 0:
            verdict = "ties on answers: the retrieval win does not show in answers"
            shown_in_answers = False
        else:
            verdict = ("trails on answers (interval includes zero): the retrieval win does "
                       "not show in answers")
            shown_in_answers = False
        lines.append(f"  vs {p.other}: live accuracy {where}: {verdict}")
    a = agreement(order, live, True)
    if a["pairs"]:
        lines.append(f"rank agreement, retrieval vs live answers: {a['pairs_agree']:.0%} of "
                     f"{a['pairs']} pairs in the same order (pairs tied on answers not "
                     f"counted); the retrieval winner is "
                     f"{'also' if a['top1_same'] else 'not'} the answer winner")
    else:
        lines.append("rank agreement, retrieval vs live answers: every configuration ties on "
                     "answers, so the answer ranking orders no pair")
    if not pairs:
        lines.append("no other configuration to compare with")
    elif shown_in_answers:
        lines.append("conclusion: the retrieval winner also wins on answer accuracy, with "
                     "intervals that exclude zero")
    else:
        lines.append("conclusion: the retrieval win does NOT clearly show in answer accuracy on "
                     "these questions; do not pick the configuration on retrieval metrics alone")
    return lines


def summary_rows(runs: Sequence[AnswerRun]) -> list[dict[str, Any]]:
    """One row per configuration: retrieval, live and oracle accuracy, the tax, diagnoses."""
    rows = []
    for r in sorted(runs, key=lambda r: -r.retrieval):
        live, oracle = r.accuracy("live"), r.accuracy("oracle")
        rows.append({"configuration": r.name, "retrieval": r.retrieval, "n": len(r.live),
                     "live": live, "oracle": oracle,
                     "tax": None if live is None or oracle is None else oracle - live,
                     **{f"n_{k}": v for k, v in r.diagnosis.items()}})
    return rows


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def answer_run(name: str, retrieval: float, rows: Iterable[Mapping[str, Any]]
               ) -> AnswerRun | None:
    """A configuration's `AnswerRun` from its per-question rows (``per_question.csv`` read as
    dicts, or a frame's records): ``answer_accuracy_live``/``_oracle`` where the question was
    graded on both sides, ``diagnosis`` where it was answered. None when it answered nothing."""
    live: dict[str, float] = {}
    oracle: dict[str, float] = {}
    counts = dict.fromkeys(DIAGNOSES, 0)
    for row in rows:
        lv = _number(row.get("answer_accuracy_live"))
        ov = _number(row.get("answer_accuracy_oracle"))
        if lv is not None and ov is not None:
            live[str(row["qid"])], oracle[str(row["qid"])] = lv, ov
        d = row.get("diagnosis")
        if isinstance(d, str) and d in counts:
            counts[d] += 1
    if not live and not any(counts.values()):
        return None
    return AnswerRun(name, retrieval, live, oracle, counts)


def _number(value: Any) -> float | None:
    """A finite number from a CSV cell, a float or NaN (pandas' empty cell); else None."""
    if value is None or value == "":
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def answer_lines(runs: Sequence[AnswerRun]) -> list[str]:
    """Each configuration's answers in one line (accuracy live/oracle, the tax, the diagnosis
    counts), in the order given, then the closing statement."""
    if not runs:
        return []
    lines = ["answers (questions graded live and oracle):"]
    for r in runs:
        live, oracle = r.accuracy("live"), r.accuracy("oracle")
        tax = "-" if live is None or oracle is None else f"{oracle - live:+.3f}"
        counts = ", ".join(f"{d} {r.diagnosis.get(d, 0)}" for d in DIAGNOSES)
        lines.append(f"  {r.name}: live {_pct(live)} · oracle {_pct(oracle)} · tax {tax} "
                     f"(n={len(r.live)}) · diagnosis: {counts}")
    return [*lines, *closing_statement(runs)]
