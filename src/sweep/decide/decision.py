"""What a finished sweep can decide, in one place for the end-of-sweep summary and
`sweep compare`: the corrected verdicts, the power line, each axis's effect and the Pareto
fronts. Pure over plain rows (best first) and per-question scores; the callers read the files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sweep.common.csvcells import read_csv, read_header
from sweep.common.errors import SweepError
from sweep.decide import agreement as ag
from sweep.decide import axes as ax
from sweep.decide import lost, multiple, power, winner
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.decide.runs import ranked_table, read_per_question, row_name
from sweep.decide.stats import (
    N_RESAMPLES,
    SEED,
    Resamples,
    Verdict,
    correction_line,
    format_p,
    question_scores,
    table_verdicts,
)
from sweep.evaluation.catalog import lower_is_better
from sweep.outputs import written as memo
from sweep.outputs.report import PER_QUESTION

LATENCY = "latency_end_to_end_p95_ms"

Scores = Mapping[str, float]


def same_scores(a: Scores, b: Scores) -> bool:
    """Whether two configurations score every question they both scored the same (on a corpus
    without headings, ``heading`` and ``recursive`` cut the same chunks: one configuration)."""
    return all(abs(a[q] - b[q]) < 1e-12 for q in a if q in b)


def power_pair(scores: Sequence[Scores | None]) -> int | None:
    """The configuration the power line compares with the best (row 0): the runner-up, or
    the next row that has per-question scores, skipping those that score every question as
    the best does (no paired variation: the same configuration in effect). When every one
    does, the first with scores (its line says so)."""
    if not scores or scores[0] is None:
        return None
    with_scores = [i for i in range(1, len(scores)) if scores[i] is not None]
    differ = (i for i in with_scores if not same_scores(scores[0], scores[i]))  # type: ignore[arg-type]
    return next(differ, with_scores[0] if with_scores else None)


def power_of(scores: Sequence[Scores | None], detect: float | None, names: Sequence[str]
             ) -> dict[str, Any] | None:
    """`power.power_summary` of the best against the runner-up (paired on the questions both
    scored), with ``pair`` (their row indices) and ``pair_text`` naming them."""
    j = power_pair(scores)
    if j is None:
        return None
    best, other = scores[0], scores[j]
    qids = [q for q in best if q in other]  # type: ignore[union-attr,operator]
    out = power.power_summary([best[q] - other[q] for q in qids],  # type: ignore[index]
                              detect=detect)
    out["pair"] = [0, j]
    skipped = [i for i in range(1, j) if scores[i] is not None]
    if j == 1:
        which = "runner-up"
    elif skipped:
        which = (f"#{j + 1} (#{', #'.join(str(i + 1) for i in skipped)} score every question "
                 "as the best does)")
    else:
        which = f"#{j + 1} (the runner-up has no per-question scores)"
    out["pair_text"] = f"best ({names[0]}) vs {which} ({names[j]})"
    said = out["text"] if out["mde"] is not None else f"not estimated ({out['reason']})"
    out["line"] = f"power, from {out['pair_text']}: {said}"
    return out


def short_verdict(v: Verdict | None) -> str:
    """``worse (p_holm=0.003)`` for a table cell."""
    if v is None:
        return "n/a"
    word = "worse" if not v.tied else ("tied" if v.text.startswith("tied") else v.text.split(",")[0])
    if v.p is None:
        return word
    decisive = v.p if v.p_adj is None or v.correction == "none" else v.p_adj
    name = "p" if decisive is v.p else f"p_{v.correction}"
    return f"{word} ({format_p(decisive, N_RESAMPLES, name)})"


def inversion_line(scores: Sequence[Scores | None], verdicts: Sequence[Verdict | None],
                   lower_better: bool = False, shown: int = 6) -> str | None:
    """Why a row marked worse can rank above a row marked tied (rows best first; ``verdicts``
    one per row after the best): the paired test weighs the questions on which a
    configuration scores differently from the best, not the gap in means. One line naming,
    for each row in such a pair, on how many questions it differs and which way; None when
    no worse row ranks above a tied one."""
    worse = [i for i, v in enumerate(verdicts, start=1) if v is not None and not v.tied]
    tied = [i for i, v in enumerate(verdicts, start=1) if v is not None and v.tied]
    if not worse or not tied or min(worse) > max(tied) or scores[0] is None:
        return None
    involved = sorted({i for i in worse if any(j > i for j in tied)}
                      | {j for j in tied if any(i < j for i in worse)})
    best = scores[0]
    cells = []
    for i in involved:
        other = scores[i]
        if other is None:
            continue
        diffs = [other[q] - best[q] for q in best if q in other]
        if lower_better:
            diffs = [-d for d in diffs]
        lower = sum(1 for d in diffs if d < -1e-12)
        higher = sum(1 for d in diffs if d > 1e-12)
        word = "worse" if i in worse else "tied"
        cells.append(f"#{i + 1} ({word}) differs on {lower + higher} of {len(diffs)} "
                     f"questions ({lower} worse, {higher} better)")
    if not cells:
        return None
    more = f"; and {len(cells) - shown} more" if len(cells) > shown else ""
    return ("a worse row above a tied one: the paired test weighs the questions on which a "
            "configuration scores differently from the best, not the gap in means: "
            + "; ".join(cells[:shown]) + more)


def decide_sweep(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], metric: str,
                 scores: Sequence[Scores | None], *, costs: Sequence[str] = (),
                 names: Sequence[str] | None = None, correction: str = DEFAULT_CORRECTION,
                 detect: float | None = power.DEFAULT_DETECT, n: int = N_RESAMPLES,
                 seed: int = SEED, verdicts: Sequence[Verdict | None] | None = None,
                 resamples: Resamples | None = None, latency: str = LATENCY,
                 margin: float = winner.DEFAULT_MARGIN, notes: Sequence[str] = ()
                 ) -> dict[str, Any]:
    """Everything the sweep can decide. ``rows`` best first, each with its axis values and
    metrics; ``scores[i]`` its per-question scores on ``metric`` (None: none). Returns
    ``verdicts`` (one per row after the best), ``n_tests`` (configurations in the corrected
    family), ``power`` (or None),
    ``axes`` (`axes.axis_effects`), ``fronts`` (`axes.pareto_fronts` against ``costs``) and
    ``lines``: the text the summary prints (``axis_lines``: its part about the axes and
    fronts, which `sweep compare --axes` prints). ``verdicts``: those
    `table_verdicts` gave already for these rows (not computed again), ``resamples`` the
    `Resamples` of ``scores`` made already. ``offer``: the cheaper configuration
    `winner.cheaper_offer` offers beside the best (on the first context-token cost of
    ``costs``, equal within ``margin``), said in ``lines``; ``notes``: lines
    said after the verdicts' (the questions configurations lost: `sweep.decide.lost`)."""
    names = list(names) if names is not None else [str(i + 1) for i in range(len(rows))]
    low = lower_is_better(metric)
    # One set of resamples for the verdicts, the axes and the fronts (the same draws each
    # would make on its own: one bootstrap of the table instead of one per comparison).
    res = resamples if resamples is not None else Resamples(scores, n=n, seed=seed)
    if verdicts is None:
        verdicts = (table_verdicts(scores, metric, correction, n=n, seed=seed, resamples=res)
                    if rows else [])
    n_tests = (sum(1 for sc in scores if sc is not None)
               if scores and scores[0] is not None else 0)
    pw = power_of(scores, detect, names)
    effects = ax.axis_effects(rows, axes, metric, scores, lower_is_better=low,
                              correction=correction, n=n, seed=seed, resamples=res)
    fronts = ax.pareto_fronts(rows, metric, costs, scores, lower_is_better=low,
                              correction=correction, n=n, seed=seed, resamples=res)
    n_worse = sum(1 for v in verdicts if v is not None and not v.tied)
    inverted = inversion_line(scores, verdicts, low)
    lines = [correction_line(correction, n_tests, metric)
             + f": {n_worse} of {len(rows) - 1} worse than the best",
             *([inverted] if inverted else []), *notes]
    if pw is not None:
        lines.append(pw["line"])
    tokens = next((c for c in costs if c.startswith("context_tokens_at_")), None)
    offer = (winner.cheaper_offer(rows, verdicts, tokens, latency, margin)
             if tokens is not None else None)
    lines += winner.offer_lines(names, metric, offer)
    axis_lines: list[str] = []
    if effects:
        how = ("" if correction == "none"
               else f"; intervals 95%, 'within noise' {multiple.NAMES[correction]}-corrected")
        axis_lines.append(f"what each axis did (mean {metric} over the other axes; each value "
                          f"minus the axis's best, paired over questions{how}):")
        axis_lines += [f"  {e['text']}" for e in effects]
    agreement = ag.model_agreement(rows, axes, metric, scores, lower_is_better=low,
                                   correction=correction, n=n, seed=seed)
    axis_lines += ag.agreement_lines(agreement, metric)
    if effects:
        axis_lines += ag.recheck_offer(axes)
    for front in fronts:
        if len(front["points"]) > 1:
            axis_lines += ax.front_text(front, rows, axes, metric)
    return {"verdicts": verdicts, "n_tests": n_tests, "correction": correction, "power": pw,
            "offer": offer, "inversion": inverted,
            "axes": effects, "agreement": agreement, "fronts": fronts,
            "axis_lines": axis_lines,
            "lines": lines + axis_lines}


def plot_data(decision: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
              metric: str) -> dict[str, Any]:
    """The plain data `outputs.report.plot_axes` draws (picklable, for the MLflow worker)."""
    fronts = []
    for front in decision["fronts"]:
        cost = front["cost"]
        fronts.append({"cost": cost,
                       "all": [(float(r[cost]), float(r[metric])) for r in rows
                               if isinstance(r.get(cost), int | float)
                               and isinstance(r.get(metric), int | float)],
                       "front": [(p["cost"], p["value"]) for p in front["points"]]})
    effects = [{"axis": e["axis"], "best": str(e["best"]),
                "values": [{"value": str(v["value"]), "mean": v["mean"], "diff": v["diff"],
                            "lo": v["lo"], "hi": v["hi"], "within_noise": v["within_noise"]}
                           for v in e["values"]]}
               for e in decision["axes"] if e["best"] is not None]
    return {"metric": metric, "axes": effects, "fronts": fronts}


def costs_of(rows: Sequence[Mapping[str, Any]], cost: str, latency: str) -> list[str]:
    """The costs a sweep's rows report, for the Pareto fronts: context tokens, p95 latency,
    and dollars (served models, or generation's estimate)."""
    return [c for c in (cost, latency, "served_cost_usd", "cost_estimate_usd")
            if any(isinstance(r.get(c), int | float) for r in rows)]


def decide_table(t: Any, detect: float | None = power.DEFAULT_DETECT,
                 margin: float = winner.DEFAULT_MARGIN) -> dict[str, Any]:
    """`decide_sweep` of a `table.SweepTable` read back from MLflow (its verdicts reused)."""
    return decide_sweep(t.rows, t.swept, t.metric, t.scores,
                        costs=costs_of(t.rows, t.cost, t.latency),
                        names=[row_name(r, t.swept) for r in t.rows],
                        correction=t.correction, detect=detect,
                        verdicts=t.verdicts, resamples=t.resamples, latency=t.latency,
                        margin=margin, notes=t.lost_lines)


def read_questions(folder: Path, columns: Sequence[str]) -> Any:
    """The ``qid``, ``status`` and ``columns`` (those it has) of a job folder's
    per_question.csv, or None when it has none (or cannot be read): what a job of this
    process wrote there when it is still that file (`sweep.outputs.written`), else the file
    read with pandas. Read either through `statuses_of` and `scores_of`."""
    path = folder / PER_QUESTION
    kept = memo.recall(path, columns)
    if kept is not None:
        return kept
    if not path.is_file():
        return None
    try:
        head = read_header(path)
        if "qid" not in head:
            return None
        cols = list(dict.fromkeys(c for c in ("qid", "status", *columns) if c in head))
        return read_csv(path, usecols=cols, dtype={"qid": str})
    except (OSError, ValueError, SweepError):
        return None


def statuses_of(frame: Any) -> dict[str, str] | None:
    """`lost.statuses` of what `read_questions` gave."""
    return frame.status_of() if isinstance(frame, memo.Written) else lost.statuses(frame)


def scores_of(frame: Any, metric: str) -> dict[str, float]:
    """`stats.question_scores` of what `read_questions` gave (``metric`` among its columns)."""
    if isinstance(frame, memo.Written):
        return frame.scores(metric)
    return question_scores(frame, metric)


def read_scores(folder: Path, metric: str) -> dict[str, float] | None:
    """``{qid: score}`` from a job folder's per_question.csv, or None when it has none (or not
    the metric: a job of an older chunk-sweep)."""
    frame = read_questions(folder, [metric])
    if frame is None or metric not in frame.columns:
        return None
    try:
        return scores_of(frame, metric)
    except (ValueError, SweepError):
        return None


def _count_lost(rows: list[dict[str, Any]], finished: Sequence[dict[str, Any]],
                frames: Sequence[Any], reports: Mapping[str, Mapping[str, Any]],
                metric: str) -> lost.Lost:
    """`sweep.decide.lost` at the end of a sweep: the questions each finished row lost (in
    ``finished``'s order), counted as misses in its headline and its per-question table
    metrics, ``lost_in_parsing`` on every finished row, and ``rows`` sorted again in place
    (as `outputs.report.comparison_rows` sorts them) when any row lost one."""
    from sweep.outputs.report import TABLE_METRICS, rank_key

    found = lost.lost_questions(
        [statuses_of(f) for f in frames],
        [((reports.get(str(r.get("folder"))) or {}).get("fingerprints") or {}).get("golden")
         for r in finished])
    if not found.any:
        return found
    for r, qids in zip(finished, found.lost, strict=True):
        r["lost_in_parsing"] = len(qids)
        if not qids:
            continue
        frame = read_questions(Path(str(r.get("folder"))), [metric, *TABLE_METRICS])
        if frame is None:
            continue
        for name in dict.fromkeys([metric, *TABLE_METRICS]):
            if name in frame.columns and lost.miss_value(name) is not None:
                value = lost.mean(lost.with_misses(scores_of(frame, name), qids, name))
                if name == metric:
                    r["headline"] = value
                if name in r:
                    r[name] = value
    order = {id(r): qids for r, qids in zip(finished, found.lost, strict=True)}

    def key(r: Mapping[str, Any]) -> tuple[int, tuple[float, float, float, str]]:
        rep = reports.get(str(r.get("folder"))) or {}
        m = rep.get("metrics") or {}
        k = ((rep.get("config") or {}).get("eval") or {}).get("prompt_k", 5)
        ok = r.get("status") == "FINISHED" and isinstance(r.get("headline"), int | float)
        return (0 if ok else 1, rank_key(str(r.get("headline_metric") or ""),
                                         r.get("headline") if ok else None,
                                         m.get(f"context_tokens_at_{k}"), m.get(LATENCY),
                                         str(rep.get("config_hash") or "")))

    rows.sort(key=key)
    again = [r for r in rows if id(r) in order]
    return lost.Lost([order[id(r)] for r in again], found.everywhere)


def finished_sweep(axes: Sequence[str], rows: list[dict[str, Any]],
                   reports: Mapping[str, Mapping[str, Any]], *,
                   correction: str = DEFAULT_CORRECTION,
                   detect: float | None = power.DEFAULT_DETECT,
                   margin: float = winner.DEFAULT_MARGIN,
                   on_ranked: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """`decide_sweep` at the end of a sweep, from its folder: ``rows`` are
    `outputs.report.comparison_rows` (best first; each with its job ``folder``), ``reports``
    the job reports by folder. Sets each finished row's ``verdict`` (short form) in place;
    when a configuration lost questions another scored (`sweep.decide.lost`), its headline
    counts them as misses and ``rows`` are sorted again in place, so that the table, its
    ``best:`` line and `sweep compare` agree. None when fewer than two configurations
    finished. ``on_ranked`` is called once ``rows`` have their final order and headlines,
    before the bootstrap (not when None is returned): the sweep's end has its headline plot
    drawn meanwhile."""
    def usable() -> list[dict[str, Any]]:
        return [r for r in rows if r.get("status") == "FINISHED"
                and isinstance(r.get("headline"), int | float)]

    finished = usable()
    if len(finished) < 2:
        return None
    metric = str(finished[0]["headline_metric"])
    frames = [read_questions(Path(str(r.get("folder"))), [metric]) if r.get("folder") else None
              for r in finished]
    found = _count_lost(rows, finished, frames, reports, metric)
    if found.any:
        by_row = {id(r): f for r, f in zip(finished, frames, strict=True)}
        finished = usable()
        frames = [by_row[id(r)] for r in finished]
    if on_ranked is not None:
        on_ranked()
    plain: list[dict[str, Any]] = []
    scores: list[dict[str, float] | None] = []
    for r, frame, qids in zip(finished, frames, found.lost, strict=True):
        rep = reports.get(str(r.get("folder"))) or {}
        metrics = rep.get("metrics") or {}
        prompt_k = ((rep.get("config") or {}).get("eval") or {}).get("prompt_k", 5)
        cost = f"context_tokens_at_{prompt_k}"
        row = {a: r.get(a) for a in axes}
        row[metric] = float(r["headline"])
        for name in (cost, LATENCY, "served_cost_usd", "cost_estimate_usd"):
            if isinstance(metrics.get(name), int | float):
                row[name] = float(metrics[name])
        plain.append(row)
        scores.append(lost.with_misses(scores_of(frame, metric), qids, metric)
                      if frame is not None and metric in frame.columns else None)
    costs = costs_of(plain, next((k for k in plain[0] if k.startswith("context_tokens_at_")),
                                 "context_tokens_at_5"), LATENCY)
    names = [row_name(r, axes) for r in plain]
    out = decide_sweep(plain, axes, metric, scores, costs=costs, names=names,
                       correction=correction, detect=detect, margin=margin,
                       notes=lost.lost_line(names, found))
    finished[0]["verdict"] = "best"
    for r, v in zip(finished[1:], out["verdicts"], strict=True):
        r["verdict"] = short_verdict(v)
    out["rows"] = plain
    out["metric"] = metric
    out["lost"] = found
    return out


# --- the audit's power line -------------------------------------------------------------------

def audit_power(pw: Mapping[str, Any] | None, metric: str | None, sweep: str | None,
                reason: str | None = None) -> dict[str, Any]:
    """The golden set audit's ``set.power``: what the set can decide, from `power_of` of a
    sweep scored on it (``metric``: its headline; ``sweep``: its parent run id, None for the
    sweep in progress), or why it is not estimated (``reason``, when ``pw`` is None or has no
    figure). Always has ``mde``, ``n_needed``, ``detect`` and ``line``."""
    if pw is None:
        why = reason or "no two configurations with per-question scores"
        return {"mde": None, "n_needed": None, "detect": None, "n": None, "metric": metric,
                "sweep": sweep, "reason": why, "line": f"power: not estimated ({why})"}
    where = f"sweep {sweep}" if sweep else "this sweep"
    said = pw["text"] if pw["mde"] is not None else f"not estimated ({pw['reason']})"
    return {**pw, "metric": metric, "sweep": sweep,
            "line": f"power, on {metric} from {where}, {pw['pair_text']}: {said}"}


def sweep_power(uri: str, experiment: str | None, sweep: str, golden_fingerprint: str | None,
                tmp: Path, detect: float | None = power.DEFAULT_DETECT) -> dict[str, Any]:
    """`audit_power` from a sweep in MLflow (``sweep``: latest or a parent run id): its best
    configuration against the runner-up on its headline, among the configurations that scored
    the golden set of ``golden_fingerprint`` (None: any). Only those two configurations'
    per_question.csv are read: the line needs no bootstrap. Never raises `SweepError`: no
    store, no sweep or another golden set is the line's reason."""
    try:
        t = ranked_table(uri, experiment, sweep, None, tmp)
    except SweepError as exc:
        return audit_power(None, None, None,
                           f"no sweep to size it from ({exc}); the sweep's summary and "
                           "`sweep compare` print it, or run `sweep audit` where its mlflow.db is")
    run_id = t.parent["run_id"]
    rows = [r for r in t.rows if golden_fingerprint is None
            or (r.get("inputs") or {}).get("golden") == golden_fingerprint]
    if len(rows) < 2:
        return audit_power(None, t.metric, run_id,
                           f"sweep {run_id} has {len(rows)} finished configuration(s) scored on "
                           "this golden set (its file changed since, or the sweep used another); "
                           "run a sweep on it, or --sweep PARENT_RUN_ID")
    scores: list[dict[str, float] | None] = []
    for r in rows:
        frame = read_per_question(uri, r["run_id"], tmp)
        scores.append(question_scores(frame, t.metric)
                      if frame is not None and t.metric in frame.columns else None)
        if scores[0] is None or (len(scores) > 1 and scores[-1] is not None
                                 and not same_scores(scores[0], scores[-1])):
            break  # the best without scores has no pair; else the first pair that differs
    pw = power_of(scores, detect, [row_name(r, t.swept) for r in rows[: len(scores)]])
    if pw is not None:
        pw["pair_run_ids"] = [rows[i]["run_id"] for i in pw["pair"]]
    missing = ("its best configuration" if scores[0] is None
               else "no configuration but the best")
    return audit_power(pw, t.metric, run_id,
                       f"in sweep {run_id}, {missing} has per-question scores")
