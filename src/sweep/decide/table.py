"""Deciding between the configurations of a sweep: compare, export the winner, flips.

What `sweep compare`, `sweep export` and `sweep flips` do (their options and output are in
sweep.cli.compare, .export and .flips).

The runs are read back from MLflow (``tracking`` holds every MLflow call); per-question scores
come from the ``per_question.csv`` artifacts. The statistics and the choice of the winner are
pure functions over plain data, tested with hand-made numbers.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from statistics import NormalDist
from typing import Any

import yaml

from sweep.common.csvcells import read_csv
from sweep.common.errors import SweepError
from sweep.common.files import atomic_write
from sweep.common.paths import PROJECT_ROOT
from sweep.common.secret import scrub_tree
from sweep.config.identity import INPUT_SECTIONS, RESULT_SECTIONS, inapplicable_keys
from sweep.decide import multiple
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.evaluation.sources import PREFIX, parse_metric
from sweep.outputs import quant, tracking
from sweep.outputs.report import (
    NOT_APPLICABLE,
    differing_keys,
    format_value,
    lower_is_better,
    plot_metric_vs_size,
    pyplot,
    rank_key,
    save_figure,
)
from sweep.outputs.report import rank_number as _num

DEFAULT_METRIC = "recall_at_5"
N_RESAMPLES = 10_000
ALPHA = 0.05
SEED = 0
# Sections of a job's config.yaml that define the configuration (corpus/golden only when they
# differ from the defaults; tracking and hydra never).
WINNERS_DIR = PROJECT_ROOT / "experiments" / "winners"
# Params that never make a configuration different.
_IGNORED_PARAM_PREFIXES = ("tracking.",)


# --- statistics (pure) ---------------------------------------------------------------------

def paired_bootstrap(a: Sequence[float], b: Sequence[float], n: int = N_RESAMPLES,
                     seed: int = SEED) -> tuple[float, float, float, float]:
    """Paired bootstrap of the mean difference ``a - b`` over the same questions.

    Resamples the questions with replacement ``n`` times (fixed ``seed``: same input, same
    numbers). Returns ``(mean_diff, lo, hi, p)``: the observed mean difference, the 95 %
    percentile interval of the resampled means, and a two-sided p-value (twice the smaller
    share of resampled means on either side of zero, at most 1), so that ``p < 0.05`` exactly
    when the interval excludes zero.
    """
    import numpy as np

    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"paired samples must have the same length ({x.shape} vs {y.shape})")
    if x.size == 0:
        raise ValueError("paired_bootstrap needs at least one pair")
    if n < 1:
        raise ValueError("n must be >= 1")
    d = x - y
    m = d.size
    rng = np.random.default_rng(seed)
    boots = np.empty(n)
    step = max(1, 4_000_000 // m)  # bounded memory for large golden sets
    for start in range(0, n, step):
        size = min(step, n - start)
        idx = rng.integers(0, m, size=(size, m))
        boots[start : start + size] = d[idx].mean(axis=1)
    boots = np.round(boots, 12)  # exact zeros stay zeros despite float summation
    lo, hi = np.percentile(boots, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    p = min(1.0, 2.0 * min(float((boots <= 0).mean()), float((boots >= 0).mean())))
    return float(np.round(d.mean(), 12)), float(lo), float(hi), p


@dataclass
class Verdict:
    n_pairs: int
    diff: float | None = None  # this configuration minus the best
    lo: float | None = None
    hi: float | None = None
    p: float | None = None
    tied: bool = True
    text: str = ""
    p_adj: float | None = None  # p adjusted for the table's other comparisons (`correction`)
    correction: str = "none"


def format_p(p: float, n: int = N_RESAMPLES, name: str = "p") -> str:
    """``p=0.031``, ``p=0.0004``, or ``p<1e-04`` when no resample crossed zero."""
    if p < 1 / n:
        return f"{name}<{1 / n:.0e}"
    return f"{name}={p:.4f}" if p < 0.001 else f"{name}={p:.3f}"


def decide_verdict(n_pairs: int, diff: float, lo: float, hi: float, p: float, metric: str,
                   n: int = N_RESAMPLES, p_adj: float | None = None,
                   correction: str = "none") -> Verdict:
    """The verdict of one paired comparison with the best: ``worse`` when the (adjusted)
    p-value is below `ALPHA` and the interval lies on the worse side of zero."""
    decisive = p if p_adj is None or correction == "none" else p_adj
    ci = f"diff {diff:+.3f}, 95% CI [{lo:+.3f}, {hi:+.3f}]"
    if decisive is p:
        shown = f"{format_p(p, n)} ({ci})"
    else:
        shown = f"{format_p(decisive, n, f'p_{correction}')} ({format_p(p, n)}; {ci})"
    sign = -1.0 if lower_is_better(metric) else 1.0
    worse_hi = hi if sign > 0 else -lo  # upper end of the (oriented) improvement interval
    better_lo = lo if sign > 0 else -hi
    common = {"p_adj": p_adj, "correction": correction}
    if decisive < ALPHA and worse_hi < 0:
        return Verdict(n_pairs, diff, lo, hi, p, tied=False, text=f"worse, {shown}", **common)
    if decisive < ALPHA and better_lo > 0:
        # Possible when the two were scored on different questions: not worse than the best.
        return Verdict(n_pairs, diff, lo, hi, p, tied=True,
                       text=f"better on shared questions, {shown}", **common)
    return Verdict(n_pairs, diff, lo, hi, p, tied=True, text=f"tied with best, {shown}",
                   **common)


def verdict_against_best(best: Sequence[float], other: Sequence[float], metric: str,
                         n: int = N_RESAMPLES, seed: int = SEED) -> Verdict:
    """Is ``other`` distinguishable from ``best`` (paired scores, same question order), on its
    own (no correction for the table's other comparisons: `table_verdicts`)?"""
    if len(best) == 0:
        return Verdict(0, tied=True, text="n/a (no question scored in both)")
    diff, lo, hi, p = paired_bootstrap(other, best, n=n, seed=seed)
    return decide_verdict(len(best), diff, lo, hi, p, metric, n)


def resampled_means(scores: Any, n: int = N_RESAMPLES, seed: int = SEED) -> Any:
    """``n`` bootstrap resamples of the questions (rows of ``scores``, one column per
    configuration): each resample's mean per configuration, an ``(n, k)`` array.

    The resamples are those `paired_bootstrap` draws for the same number of questions and
    seed, so a column difference ``means[:, j] - means[:, i]`` is that function's resampled
    mean difference of configuration j minus i (the same numbers, every pair at once)."""
    import numpy as np

    s = np.asarray(scores, dtype=float)
    m = s.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((n, s.shape[1]))
    step = max(1, 4_000_000 // m)  # as paired_bootstrap: the same draws, in the same order
    for start in range(0, n, step):
        size = min(step, n - start)
        idx = rng.integers(0, m, size=(size, m))
        # How often each question is drawn in each resample: one product for every column.
        flat = (idx + (np.arange(size) * m)[:, None]).ravel()
        counts = np.bincount(flat, minlength=size * m).reshape(size, m)
        out[start : start + size] = counts.astype(float) @ s / m  # (an integer matmul: 5x slower)
    return out


def _tail_p(boots: Any, observed: float) -> float:
    """Two-sided p of a resampled difference (as `paired_bootstrap`), and where no resample
    crossed zero, the normal tail beyond it instead of 0: a table of many comparisons
    multiplies small p-values, and "fewer than 1 in 10,000" is not 0."""
    p = min(1.0, 2.0 * min(float((boots <= 0).mean()), float((boots >= 0).mean())))
    if p > 0:
        return p
    sd = float(boots.std())
    if sd <= 0:
        return 0.0
    return min(1 / boots.size, 2 * NormalDist().cdf(-abs(observed) / sd))


def pairwise_p(means: Any, observed: Sequence[float]) -> Any:
    """``p[i, j]``: the two-sided bootstrap p of configuration i against j, for every pair, from
    `resampled_means` (``observed``: each configuration's mean on the same questions)."""
    import numpy as np

    k = means.shape[1]
    n = means.shape[0]
    p = np.ones((k, k))
    for i in range(k - 1):
        boots = np.round(means[:, i + 1 :] - means[:, [i]], 12)  # every j > i at once
        row = np.minimum(1.0, 2.0 * np.minimum((boots <= 0).sum(axis=0),
                                               (boots >= 0).sum(axis=0)) / n)
        for off in np.flatnonzero(row == 0):  # no resample crossed zero: the normal tail
            j = i + 1 + int(off)
            row[off] = _tail_p(boots[:, off], observed[j] - observed[i])
        p[i, i + 1 :] = row
        p[i + 1 :, i] = row
    return p


class Resamples:
    """One set of resamples of the questions for a whole table: `resampled_means` over the
    questions every configuration with scores scored (``common``, sorted), so that any linear
    combination of configurations (a pair, an axis value averaged over cells) gets the
    bootstrap `paired_bootstrap` would give it on those questions, without resampling again.

    ``scores[i]``: row i's ``{qid: score}`` or None (left out)."""

    def __init__(self, scores: Sequence[Mapping[str, float] | None], n: int = N_RESAMPLES,
                 seed: int = SEED) -> None:
        import numpy as np

        self.n = n
        self.present = [i for i, sc in enumerate(scores) if sc is not None]
        self.column = {i: c for c, i in enumerate(self.present)}
        self.common = (sorted(set.intersection(*(set(scores[i] or {}) for i in self.present)))
                       if self.present else [])
        self.means: Any = None
        self.observed: Any = None
        if self.common and self.present:
            matrix = np.array([[scores[i][q] for i in self.present]  # type: ignore[index]
                               for q in self.common])
            self.means = resampled_means(matrix, n=n, seed=seed)
            self.observed = matrix.mean(axis=0)

    def covers(self, rows: Sequence[int], qids: Sequence[str]) -> bool:
        """Whether a comparison of ``rows`` on the questions ``qids`` (sorted) is one of these
        resamples' linear combinations."""
        return (self.means is not None and all(r in self.column for r in rows)
                and list(qids) == self.common)

    def combination(self, weights: Mapping[int, float]) -> tuple[float, float, float, float]:
        """``(mean_diff, lo, hi, p)`` of ``sum(w * row)`` as `paired_bootstrap` reports it."""
        import numpy as np

        w = np.zeros(len(self.present))
        for row, weight in weights.items():
            w[self.column[row]] += weight
        boots = np.round(self.means @ w, 12)
        lo, hi = np.percentile(boots, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
        p = min(1.0, 2.0 * min(float((boots <= 0).mean()), float((boots >= 0).mean())))
        return float(np.round(self.observed @ w, 12)), float(lo), float(hi), p


def paired_or_resampled(res: Resamples | None, a: Mapping[str, float], b: Mapping[str, float],
                        ia: int, ib: int, n: int = N_RESAMPLES, seed: int = SEED
                        ) -> tuple[int, tuple[float, float, float, float]] | None:
    """The paired bootstrap of row ``ia`` minus row ``ib`` on the questions both scored (from
    ``res`` when those are its questions); with the number of questions. None: none shared."""
    shared = sorted(q for q in a if q in b)
    if not shared:
        return None
    if res is not None and res.covers([ia, ib], shared):
        return len(shared), res.combination({ia: 1.0, ib: -1.0})
    return len(shared), paired_bootstrap([a[q] for q in shared], [b[q] for q in shared],
                                         n=n, seed=seed)


def table_verdicts(scores: Sequence[Mapping[str, float] | None], metric: str,
                   correction: str = DEFAULT_CORRECTION, n: int = N_RESAMPLES,
                   seed: int = SEED, resamples: Resamples | None = None
                   ) -> list[Verdict | None]:
    """Every configuration of a table against its best, corrected for the table's comparisons.

    ``scores[0]`` is the best configuration's ``{qid: score}`` (questions it scored), then one
    per other row (None: no per-question scores; its verdict is None). Returns the verdicts of
    ``scores[1:]``, in order. ``resamples``: a `Resamples` of these scores made already.

    Each row's difference, interval and p come from the paired bootstrap over the questions it
    and the best both scored (`paired_bootstrap`). The correction treats the table as the
    family of *every pair* of its configurations, not only the comparisons with the best: the
    best is picked from the same data, and among 40 configurations that differ only by noise
    the observed best is the luckiest, so testing the others against it alone says "worse" by
    chance far more often than 5% (docs/statistics.md measures it). The pairs' p-values come
    from one set of resamples of the questions every configuration scored (`Resamples`), are
    adjusted together (`multiple.adjust`), and a row is "worse" only when its pair with the
    best stays below `ALPHA` after adjustment (a table whose configurations share no question
    has no family: every row stays tied).
    """
    import numpy as np

    best = scores[0]
    out: list[Verdict | None] = [None] * (len(scores) - 1)
    if best is None:
        return out
    res = resamples if resamples is not None else Resamples(scores, n=n, seed=seed)
    family_p: dict[int, float] = {}
    if res.means is not None and len(res.present) > 1:
        p = pairwise_p(res.means, np.round(res.observed, 12).tolist())
        k = len(res.present)
        pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
        adjusted = multiple.adjust([float(p[a, b]) for a, b in pairs], correction)
        family_p = {res.present[b]: float(adj) for (a, b), adj in zip(pairs, adjusted, strict=True)
                    if a == 0 and adj is not None}
    for i in range(1, len(scores)):
        mine = scores[i]
        if mine is None:
            continue
        got = paired_or_resampled(res, mine, best, i, 0, n=n, seed=seed)
        if got is None:
            out[i - 1] = Verdict(0, tied=True, text="n/a (no question scored in both)")
            continue
        n_pairs, (diff, lo, hi, p_raw) = got
        p_adj = None if correction == "none" else family_p.get(i, 1.0)
        out[i - 1] = decide_verdict(n_pairs, diff, lo, hi, p_raw, metric, n, p_adj, correction)
    return out


def _usable(df: Any, metric: str) -> Any:
    """The ``qid`` and ``metric`` of the questions a per_question table scored (a value for
    ``metric``; ``status == scored`` for chunk-level metrics), one row per qid."""
    import pandas as pd

    if metric not in df.columns:
        raise SweepError(f"per_question.csv has no column {metric!r}")
    out = df[["qid", metric] + (["status"] if "status" in df.columns else [])].copy()
    out[metric] = pd.to_numeric(out[metric], errors="coerce")
    out = out[out[metric].notna()]
    if "status" in out.columns and not metric.startswith("doc_"):
        out = out[out["status"].astype(str) == "scored"]
    out["qid"] = out["qid"].astype(str)
    return out.drop_duplicates("qid")[["qid", metric]]


def question_scores(df: Any, metric: str) -> dict[str, float]:
    """``{qid: score}`` of the questions a per_question table scored on ``metric``."""
    u = _usable(df, metric)
    return dict(zip(u["qid"].tolist(), u[metric].astype(float).tolist(), strict=True))


def paired_scores(a: Any, b: Any, metric: str) -> tuple[list[str], list[float], list[float]]:
    """Pair two per_question tables (pandas) on ``qid``, keeping only the questions scored in
    both (a value for ``metric`` in both; ``status == scored`` for chunk-level metrics)."""
    merged = _usable(a, metric).merge(_usable(b, metric), on="qid", suffixes=("_a", "_b"))
    return (merged["qid"].tolist(), merged[f"{metric}_a"].astype(float).tolist(),
            merged[f"{metric}_b"].astype(float).tolist())


# --- comparison rows and the winner (pure over plain data) ---------------------------------

def swept_params(param_rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Param keys whose value differs between configurations (tracking.* excluded)."""
    return [k for k in differing_keys(param_rows) if not k.startswith(_IGNORED_PARAM_PREFIXES)]


def rank_rows(rows: list[dict[str, Any]], metric: str, cost: str, latency: str
              ) -> list[dict[str, Any]]:
    """Best first on ``metric``; equal values ordered by cost, then latency, then the
    configuration's hash (`rank_key`, the end-of-sweep table's order too)."""
    return sorted(rows, key=lambda r: rank_key(metric, r.get(metric), r.get(cost),
                                               r.get(latency),
                                               str(r.get("config_hash") or r.get("run_id"))))


def choose_winner(rows: Sequence[dict[str, Any]], metric: str, cost: str, latency: str
                  ) -> tuple[dict[str, Any], str]:
    """The configuration to export, and the rule that decided.

    ``rows`` are ranked best first and carry ``tied`` (not distinguishable from the best). Among
    the best and the configurations tied with it: fewest ``cost`` (context tokens), then lowest
    ``latency``.
    """
    if not rows:
        raise SweepError("no finished configuration to choose from")
    best = rows[0]
    tied = [r for r in rows if r.get("tied", r is best)]
    if best not in tied:
        tied.insert(0, best)
    if len(tied) == 1:
        return best, (f"highest {metric}" if not lower_is_better(metric) else f"lowest {metric}"
                      ) + ", distinguishable from every other configuration (no tie to break)"
    by_cost = sorted(tied, key=lambda r: (_num(r.get(cost)), _num(r.get(latency)),
                                          rows.index(r)))
    winner = by_cost[0]
    n = len(tied)
    cheapest = [r for r in tied if _num(r.get(cost)) == _num(winner.get(cost))]
    if len(cheapest) == 1:
        rule = (f"fewest {cost} ({format_value(winner.get(cost))}) among the {n} configurations not "
                f"distinguishable from the best on {metric}")
    else:
        fastest = [r for r in cheapest if _num(r.get(latency)) == _num(winner.get(latency))]
        if len(fastest) == 1:
            rule = (f"lowest {latency} ({format_value(winner.get(latency))}) among the {len(cheapest)} "
                    f"with the fewest {cost}, of the {n} configurations not distinguishable "
                    f"from the best on {metric}")
        else:
            rule = (f"{len(fastest)} configurations tied on {metric}, {cost} and {latency}: "
                    f"kept the one ranked first on {metric}")
    if winner is not best:
        rule += f" (the top {metric} was {format_value(best.get(metric))}, this one "
        rule += f"{format_value(winner.get(metric))})"
    return winner, rule


def winner_name(config: Mapping[str, Any]) -> str:
    """``heading-256-ov0-path-minilm`` (+ ``-bm25``/``-hybrid``, ``-rerank``)."""
    c = config.get("chunk", {})
    e = config.get("embedding", {})
    model = re.split(r"[/\\]", str(e.get("name", "model")).rstrip("/\\"))[-1]
    parts = [str(c.get("boundary")), str(c.get("size")), f"ov{c.get('overlap')}",
             str(c.get("header")), model.replace("_", "-")]
    pair = (str(e.get("backend", "torch")), str(e.get("precision", "fp32")))
    if pair != ("torch", "fp32"):
        parts.extend(pair)
    method = config.get("retrieval", {}).get("method", "dense")
    if method != "dense":
        parts.append(str(method))
    if config.get("rerank", {}).get("method", "none") != "none":
        parts.append("rerank")
    kind = (config.get("index") or {}).get("kind", "exact")
    if kind != "exact":
        parts.append(str(kind).replace("_", "-"))
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts)).strip("-").lower()


def winner_sections(config: Mapping[str, Any], defaults: Mapping[str, Any] | None
                    ) -> dict[str, Any]:
    """The part of a job's resolved config that reproduces it as a Hydra experiment."""
    out = {k: config[k] for k in RESULT_SECTIONS if k in config}
    for extra in ("corpus", "golden"):
        if extra not in config:
            continue
        default = (defaults or {}).get(extra) or {}
        if defaults is None or any(v != default.get(k) for k, v in config[extra].items()):
            out[extra] = config[extra]
    return out


def winner_yaml(sections: Mapping[str, Any], header: Sequence[str]) -> str:
    lines = ["# @package _global_", *(f"# {h}" if h else "#" for h in header)]
    # a run of an older chunk-sweep may hold a URL with its password: the file never does
    return "\n".join(lines) + "\n" + yaml.safe_dump(scrub_tree(dict(sections)),
                                                   sort_keys=False)


def flip_rows(a: Any, b: Any, metric: str) -> list[dict[str, Any]]:
    """Questions scored in both where the two per_question tables disagree on ``metric``
    (binary metrics: 1 vs 0; graded: any difference), with the first relevant rank in each."""
    qids, va, vb = paired_scores(a, b, metric)
    ranks_a = _column(a, "first_relevant_rank")
    ranks_b = _column(b, "first_relevant_rank")
    questions = _column(a, "question")
    out = []
    for qid, x, y in zip(qids, va, vb, strict=True):
        if abs(x - y) <= 1e-12:
            continue
        out.append({"qid": qid, "question": questions.get(qid, ""), "a": x, "b": y,
                    "better": "a" if (x > y) != lower_is_better(metric) else "b",
                    "rank_a": ranks_a.get(qid), "rank_b": ranks_b.get(qid)})
    return out


def _column(df: Any, name: str) -> dict[str, Any]:
    if name not in df.columns:
        return {}
    out = {}
    for qid, value in zip(df["qid"].astype(str), df[name], strict=True):
        if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
            out[qid] = None
        elif name.endswith("rank"):
            out[qid] = int(float(value))
        else:
            out[qid] = value
    return out


# --- reading a sweep back from MLflow ------------------------------------------------------

@dataclass
class SweepTable:
    parent: dict[str, Any]
    metric: str
    swept: list[str]
    shown: list[str]
    rows: list[dict[str, Any]]  # best first; params, metrics, run_id, verdict
    per_question: dict[str, Any] = field(repr=False, default_factory=dict)  # run_id -> frame
    cost: str = "context_tokens_at_5"
    latency: str = "latency_end_to_end_p95_ms"
    n_failed: int = 0
    correction: str = DEFAULT_CORRECTION
    n_tests: int = 0  # configurations in the corrected family (with per-question scores)
    # per row: {qid: score} on the metric (None: no per_question.csv), and its verdict
    scores: list[Any] = field(repr=False, default_factory=list)
    verdicts: list[Any] = field(repr=False, default_factory=list)
    resamples: Any = field(repr=False, default=None)  # the table's `Resamples`, reused


def default_uri() -> str:
    """The store when no --tracking-uri is given: $MLFLOW_TRACKING_URI (MLflow's own
    convention), else ./mlflow.db; the same rule as `tracking.uri` in conf/tracking/local.yaml."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd().resolve() / 'mlflow.db'}"


def read_per_question(uri: str, run_id: str, tmp: Path) -> Any:
    path = tracking.download_artifact(uri, run_id, "per_question.csv", tmp / run_id)
    if path is None:
        return None
    return read_csv(path, dtype={"qid": str}, keep_default_na=True)


def _headline_of(uri: str, run_ids: Sequence[str], tmp: Path) -> str | None:
    for run_id in run_ids[:3]:
        path = tracking.download_artifact(uri, run_id, "report.json", tmp / f"report-{run_id}")
        if path is None:
            continue
        try:
            metric = (json.loads(path.read_text(encoding="utf-8")).get("headline") or {}
                      ).get("metric")
        except (OSError, json.JSONDecodeError):
            continue
        if metric:
            return str(metric)
    return None


def finished_records(uri: str, parent: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                  list[str], int]:
    """The sweep's finished runs as ``{run_id, params, <metric>: value}`` records, the metric
    names any of them has, and how many runs did not finish."""
    df = tracking.sweep_runs(uri, parent)
    if df is None or len(df) == 0:
        raise SweepError(f"sweep {parent['run_id']} has no configuration runs")
    finished = df[df["status"] == "FINISHED"]
    n_failed = len(df) - len(finished)
    if len(finished) == 0:
        raise SweepError(f"sweep {parent['run_id']} has no finished configuration "
                         f"({n_failed} failed)")
    metric_cols = sorted(c[len("metrics."):] for c in finished.columns
                         if c.startswith("metrics.") and finished[c].notna().any())
    param_cols = [c for c in finished.columns if c.startswith("params.")]
    records = []
    seen: set[str] = set()
    for _, r in finished.iterrows():
        # One row per configuration: a run the sweep resumed is both its child and named in a
        # `resumed.` tag, and runs with one config_hash differ only in settings they do not read.
        chash = r.get("tags.config_hash")
        key = chash if isinstance(chash, str) and chash else r["run_id"]
        if key in seen or r["run_id"] in seen:
            continue
        seen.update({key, r["run_id"]})
        rec: dict[str, Any] = {"run_id": r["run_id"],
                               "config_hash": chash if isinstance(chash, str) else None,
                               "params": {c[len("params."):]: r[c] for c in param_cols
                                          if isinstance(r[c], str)}}
        # The content fingerprints of the corpus and golden set the run scored (its tags).
        rec["inputs"] = {name: fp for name in INPUT_SECTIONS
                         if isinstance(fp := r.get(f"tags.{name}_fingerprint"), str) and fp}
        for m in metric_cols:
            v = r[f"metrics.{m}"]
            rec[m] = None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
        records.append(rec)
    return records, metric_cols, n_failed


def ranked_table(uri: str, experiment: str | None, sweep: str, metric: str | None,
                 tmp: Path) -> SweepTable:
    """The sweep's finished configurations, best first, without the per-question scores or
    the verdicts (what the labelling page needs: the best run and the swept parameters)."""
    parent = tracking.find_sweep(uri, experiment, sweep)
    records, metric_cols, n_failed = finished_records(uri, parent)
    if metric is None:
        metric = _headline_of(uri, [rec["run_id"] for rec in records], tmp) or DEFAULT_METRIC
    if metric not in metric_cols:
        shown = ", ".join(m for m in metric_cols if not m.startswith(("time_", "n_")))
        raise SweepError(f"unknown metric {metric!r} (available: {shown})")
    swept = swept_params([rec["params"] for rec in records])
    for rec in records:
        unused = inapplicable_keys(rec["params"])
        for p in swept:
            rec[p] = NOT_APPLICABLE if p in unused else _typed(rec["params"].get(p))
    prompt_k = _typed(records[0]["params"].get("eval.prompt_k", "5"))
    cost = f"context_tokens_at_{prompt_k}"
    latency = "latency_end_to_end_p95_ms"
    rows = rank_rows(records, metric, cost, latency)
    for i, rec in enumerate(rows):
        rec["rank"] = i + 1
    shown = [metric]
    # With the parser as an axis (or evidence lost), how much evidence each configuration kept
    # comes first: "pypdf loses 5% of your evidence" before any retrieval figure.
    parser_swept = any(p.startswith("corpus.") and p.endswith("_parser") for p in swept)
    lost = any((rec.get("evidence_found_fraction") or 1.0) < 1.0 for rec in rows)
    evidence = ("evidence_found_fraction", "n_orphans") if parser_swept or lost else ()
    # The ANN tax columns appear when the sweep has an approximate index, the requests and
    # dollars when it has a served model.
    for name in (*evidence, f"recall_at_{prompt_k}", "mrr", f"evidence_recall_at_{prompt_k}",
                 "evidence_recall_at_budget", cost, latency, "n_requests", "served_cost_usd",
                 "ann_overlap_at_10", f"ann_tax_{metric}", "ann_tax_mrr", "index_bytes_ann"):
        if name not in shown and name in metric_cols:
            shown.append(name)
    # A golden set mixing sources: the ranking metric of each source, as a column group.
    shown += [name for name in metric_cols if (ps := parse_metric(name)) and ps[1] == metric]
    return SweepTable(parent, metric, swept, shown, rows, {}, cost, latency, n_failed)


def add_verdicts(t: SweepTable, uri: str, tmp: Path, *, n: int = N_RESAMPLES,
                 seed: int = SEED, correction: str = DEFAULT_CORRECTION) -> None:
    """Read every run's per_question.csv into ``t.per_question`` and test each configuration
    against the best (paired bootstrap, p-values adjusted over the table by ``correction``),
    in place."""
    t.per_question = {rec["run_id"]: read_per_question(uri, rec["run_id"], tmp) for rec in t.rows}
    t.correction = correction
    metric = t.metric
    best_q = t.per_question.get(t.rows[0]["run_id"])
    scores: list[dict[str, float] | None] = []
    for rec in t.rows:
        mine = t.per_question.get(rec["run_id"])
        if best_q is None or mine is None or metric not in best_q.columns \
                or metric not in mine.columns:
            scores.append(None)
            continue
        scores.append(question_scores(mine, metric))
    t.resamples = Resamples(scores, n=n, seed=seed)
    verdicts = table_verdicts(scores, metric, correction, n=n, seed=seed, resamples=t.resamples)
    t.scores, t.verdicts = scores, verdicts
    t.n_tests = sum(1 for sc in scores if sc is not None) if scores[0] is not None else 0
    t.rows[0].update(tied=True, verdict="best", n_pairs=None, diff=None, lo=None, hi=None,
                     p=None, p_adj=None)
    for rec, v in zip(t.rows[1:], verdicts, strict=True):
        if v is None:
            rec.update(tied=True, verdict="n/a (no per-question scores)", n_pairs=None,
                       diff=None, lo=None, hi=None, p=None, p_adj=None)
        else:
            rec.update(tied=v.tied, verdict=v.text, n_pairs=v.n_pairs, diff=v.diff, lo=v.lo,
                       hi=v.hi, p=v.p, p_adj=v.p_adj)


def load_table(uri: str, experiment: str | None, sweep: str, metric: str | None,
               tmp: Path, *, n: int = N_RESAMPLES, seed: int = SEED,
               correction: str = DEFAULT_CORRECTION) -> SweepTable:
    """The sweep's finished configurations, best first, each with its verdict vs the best
    (corrected for the table's comparisons: ``correction``)."""
    t = ranked_table(uri, experiment, sweep, metric, tmp)
    add_verdicts(t, uri, tmp, n=n, seed=seed, correction=correction)
    add_quant_tax(t)
    return t


def add_quant_tax(t: SweepTable) -> None:
    """The quantisation tax of each configuration run off torch fp32 whose reference is in
    the sweep (`sweep.outputs.quant`), from the per-question tables `add_verdicts` read; its
    columns join the table when any row has them."""
    runs = []
    for rec in t.rows:
        frame = t.per_question.get(rec["run_id"])
        retrieved = (quant.retrieved_ids(frame[["qid", "retrieved_ids"]].to_dict("records"))
                     if frame is not None and "retrieved_ids" in frame.columns else None)
        runs.append(quant.Run(rec["params"], rec, rec.get("inputs") or {}, retrieved))
    found = quant.taxes(runs, [t.metric, "recall_at_5", "mrr"])
    for i, values in found.items():
        t.rows[i].update(values)
    for name in ("quant_overlap_at_10", f"quant_tax_{t.metric}", "quant_tax_mrr"):
        if name not in t.shown and any(name in v for v in found.values()):
            t.shown.append(name)


def correction_line(correction: str, n_configs: int, metric: str) -> str:
    """What the verdicts mean, for the header of a table (``n_configs``: the configurations
    with per-question scores, the best included)."""
    how = (f"paired bootstrap vs the best on {metric} ({N_RESAMPLES:,} resamples, seed {SEED}, "
           f"{100 * ALPHA:g}%)")
    if correction == "none":
        return (f"verdicts: {how}, uncorrected: each of the {max(0, n_configs - 1)} comparisons "
                f"with the best on its own ({multiple.GUARANTEE['none']})")
    pairs = n_configs * (n_configs - 1) // 2
    return (f"verdicts: {how}, {multiple.NAMES[correction]}-corrected over all {pairs} pairs of "
            f"the {n_configs} configurations, as the best is picked from the same data "
            f"({multiple.GUARANTEE[correction]})")


def _typed(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            continue
    return value


# --- output ---------------------------------------------------------------------------------

def table_frame(t: SweepTable) -> Any:
    import pandas as pd

    cols = ["rank", *t.swept, *t.shown, "verdict", "run_id"]
    return pd.DataFrame([{c: r.get(c) for c in cols} for r in t.rows], columns=cols)


def print_table(t: SweepTable) -> None:
    import pandas as pd

    frame = table_frame(t)
    for c in t.shown:
        frame[c] = frame[c].map(format_value)
    started = datetime.fromtimestamp((t.parent.get("start_time") or 0) / 1000, UTC)
    print(f"sweep {t.parent['run_id']} (experiment {t.parent['experiment']}, "
          f"{started:%Y-%m-%d %H:%M} UTC): {len(t.rows)} configurations"
          + (f", {t.n_failed} failed (not shown)" if t.n_failed else "")
          + f"; best {t.metric} first")
    print(correction_line(t.correction, t.n_tests, t.metric))
    with pd.option_context("display.max_columns", None, "display.width", 10_000,
                           "display.max_colwidth", 80):
        print(frame.to_string(index=False))
    if any(r.get(p) == NOT_APPLICABLE for r in t.rows for p in t.swept):
        print(f"{NOT_APPLICABLE}: the configuration does not read that setting (e.g. "
              "index.ef_search with index.kind=exact); runs differing only there are one "
              "configuration, shown once")
    shares = source_shares(t.rows[0])
    if shares:
        print("by_source/<source>/" + t.metric + ": the questions of one source only ("
              + ", ".join(f"{s} n={n} ({share:.0%})" for s, n, share in shares) + ")")
    n_tied = sum(1 for r in t.rows[1:] if r.get("tied"))
    pairs = t.n_tests * (t.n_tests - 1) // 2
    corrected = ("" if t.correction == "none"
                 else f", {multiple.NAMES[t.correction]}-corrected over {pairs} pairs")
    print(f"{n_tied} of {len(t.rows) - 1} other configurations are not distinguishable from the "
          f"best on {t.metric} (paired bootstrap over questions scored in both, "
          f"{N_RESAMPLES:,} resamples, 95%, seed {SEED}{corrected})")


def source_shares(row: Mapping[str, Any]) -> list[tuple[str, int, float]]:
    """(source, n, share) from a run's ``by_source/<source>/n`` and ``.../share`` metrics."""
    out = []
    for name, value in row.items():
        ps = parse_metric(name) if isinstance(name, str) else None
        if ps and ps[1] == "n" and value is not None:
            share = row.get(f"{PREFIX}/{ps[0]}/share")
            out.append((ps[0], int(value), float(share) if share is not None else math.nan))
    return out


def table_json(t: SweepTable) -> dict[str, Any]:
    keep = ["rank", "run_id", *t.swept, *t.shown, "tied", "verdict", "n_pairs", "diff", "lo",
            "hi", "p", "p_adj"]
    return {"sweep": {k: t.parent.get(k) for k in ("run_id", "experiment", "experiment_id",
                                                    "start_time", "sweep_dir", "status")},
            "metric": t.metric, "swept": t.swept, "n_failed": t.n_failed,
            "sources": [{"source": s, "n": n, "share": share}
                        for s, n, share in source_shares(t.rows[0])] if t.rows else [],
            "correction": t.correction, "n_tests": t.n_tests,
            "rows": [{k: r.get(k) for k in keep} for r in t.rows]}


def plot_table(t: SweepTable, folder: Path) -> list[Path]:
    """``compare_<metric>_vs_size.png`` (one line per combination of the other swept params)
    and ``compare_recall_vs_tokens.png`` (quality against prompt cost)."""
    folder.mkdir(parents=True, exist_ok=True)
    others = [p for p in t.swept if p != "chunk.size"]

    def label(r: dict[str, Any]) -> str:
        return ", ".join(f"{p.split('.')[-1]}={r.get(p)}" for p in others) or "all"

    groups: dict[str, list[tuple[float, float]]] = {}
    for r in t.rows:
        size, value = _num(r.get("params", {}).get("chunk.size")), _num(r.get(t.metric))
        if math.isfinite(size) and math.isfinite(value):
            groups.setdefault(label(r), []).append((size, value))
    out = [plot_metric_vs_size(groups, t.metric, folder / f"compare_{t.metric}_vs_size.png")]

    recall = next((m for m in t.shown if m.startswith("recall_at_")), t.metric)
    fig, ax = pyplot().subplots(figsize=(8, 5))
    for name in sorted({label(r) for r in t.rows}):
        pts = [(_num(r.get(t.cost)), _num(r.get(recall))) for r in t.rows if label(r) == name]
        pts = [(x, y) for x, y in pts if math.isfinite(x) and math.isfinite(y)]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(xs, ys, label=name, s=30)
    ax.set_xlabel(f"{t.cost} (mean tokens in the prompt)")
    ax.set_ylabel(recall)
    ax.set_title(f"{recall} vs prompt cost")
    if len(groups) > 1:
        ax.legend(fontsize=7, loc="best")
    out.append(save_figure(fig, folder / "compare_recall_vs_tokens.png"))
    return out


# --- what the commands do (argparse and printing: sweep.cli.compare / export / flips) -------

def sweep_folder(parent: Mapping[str, Any]) -> Path:
    """Where a sweep's plots go: its folder when it still exists and is writable, else cwd."""
    folder = Path(str(parent.get("sweep_dir") or ""))
    if parent.get("sweep_dir") and folder.is_dir() and os.access(folder, os.W_OK):
        return folder
    return Path.cwd()


def default_sections() -> dict[str, Any] | None:
    from sweep.config.compose import compose, to_container

    try:
        return to_container(compose([]))
    except SweepError:
        return None


@dataclass
class Export:
    """A sweep's winner, written as a Hydra experiment file."""

    table: SweepTable
    winner: dict[str, Any]
    rule: str
    config: dict[str, Any]
    name: str
    path: Path
    existed: bool


def export_winner(uri: str, experiment: str | None, sweep: str, metric: str | None,
                  name: str | None, out_dir: Path, *, top: bool = False,
                  correction: str = DEFAULT_CORRECTION) -> Export:
    """Choose the sweep's winner on ``metric`` (None: the sweep's headline), write it to
    ``out_dir/NAME.yaml`` (sections that differ from the defaults) and tag the runs in MLflow.
    The winner is the cheapest of the configurations not distinguishable from the best after
    ``correction``; ``top``: the first row of `sweep compare`, without that rule."""
    with tempfile.TemporaryDirectory(prefix="sweep-export-") as tmp:
        t = load_table(uri, experiment, sweep, metric, Path(tmp), correction=correction)
        if top:
            winner = t.rows[0]
            rule = (f"the top row of `sweep compare` (best {t.metric}; ties by fewer {t.cost}, "
                    f"then lower {t.latency}, then config hash)")
        else:
            winner, rule = choose_winner(t.rows, t.metric, t.cost, t.latency)
        cfg_path = tracking.download_artifact(uri, winner["run_id"], "config.yaml",
                                              Path(tmp) / "winner")
        if cfg_path is None:
            raise SweepError(f"run {winner['run_id']} has no config.yaml artifact")
        config = yaml.safe_load(cfg_path.read_text(encoding="utf-8")) or {}
    name = name or winner_name(config)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise SweepError(f"--name {name!r}: use letters, digits, '.', '_' and '-' only")
    sections = winner_sections(config, default_sections())
    now = datetime.now(UTC)
    shown = "  ".join(f"{m}={format_value(winner.get(m))}" for m in t.shown)
    header = [
        f"Winner of sweep {t.parent['run_id']} (experiment {t.parent['experiment']}), "
        f"exported {now:%Y-%m-%d %H:%M} UTC by `sweep export --metric {t.metric}"
        f"{' --top' if top else ''} --correction {t.correction}`",
        f"sweep folder: {t.parent.get('sweep_dir') or '-'}",
        f"run: {winner['run_id']}  config_hash: "
        f"{tracking.run_info(uri, winner['run_id'])['tags'].get('config_hash', '-')}",
        f"chosen by: {rule}",
        f"{correction_line(t.correction, t.n_tests, t.metric)}",
        f"metrics: {shown}",
        f"re-run: python -m sweep experiment=winners/{name}",
    ]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.yaml"
    existed = path.exists()
    atomic_write(path, winner_yaml(sections, header))
    tracking.set_tags(uri, winner["run_id"], {"winner": "true", "winner_name": name,
                                              "winner_metric": t.metric})
    tracking.set_tags(uri, t.parent["run_id"], {"winner_run_id": winner["run_id"],
                                                "winner_name": name})
    return Export(t, winner, rule, config, name, path, existed)


def per_question_for(ref: str, uri: str, tmp: Path) -> tuple[Any, str]:
    """A per_question table from a job folder, a CSV file, or an MLflow run id."""
    p = Path(ref)
    if p.is_dir() and (p / "per_question.csv").is_file():
        p = p / "per_question.csv"
    if p.is_file():
        return read_csv(p, dtype={"qid": str}), str(p)
    info = tracking.run_info(uri, ref)
    df = read_per_question(uri, info["run_id"], tmp)
    if df is None:
        raise SweepError(f"run {ref} has no per_question.csv artifact")
    return df, f"{info['run_name'] or ref} ({ref})"


@dataclass
class Flips:
    name_a: str
    name_b: str
    metric: str
    n_paired: int
    rows: list[dict[str, Any]]  # flip_rows: the questions scored in both that differ


def flips(uri: str, run_a: str, run_b: str, metric: str) -> Flips:
    """The questions two configurations score differently on ``metric``."""
    with tempfile.TemporaryDirectory(prefix="sweep-flips-") as tmp:
        a, name_a = per_question_for(run_a, uri, Path(tmp))
        b, name_b = per_question_for(run_b, uri, Path(tmp))
    for df in (a, b):
        if metric not in df.columns:
            cols = [c for c in df.columns if re.match(r"(recall|hit|ndcg|evidence|mrr|doc_|"
                                                      r"context_tokens)", c)]
            raise SweepError(f"unknown per-question metric {metric!r} "
                             f"(available: {', '.join(cols)})")
    qids, _, _ = paired_scores(a, b, metric)
    return Flips(name_a, name_b, metric, len(qids), flip_rows(a, b, metric))
