"""Reading a sweep back from MLflow: its finished configurations, ranked, with their verdicts.

The runs come from MLflow (``tracking`` holds every MLflow call); per-question scores come from
the ``per_question.csv`` artifacts; the statistics are `sweep.decide.stats`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweep.common.csvcells import read_csv
from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.config.identity import (
    INPUT_KEYS,
    INPUT_SECTIONS,
    OPERATIONAL_SECTIONS,
    inapplicable_keys,
    unhashed_flat_keys,
)
from sweep.config.naming import config_name
from sweep.decide import lost
from sweep.decide.multiple import DEFAULT_CORRECTION
from sweep.decide.stats import N_RESAMPLES, SEED, Resamples, question_scores, table_verdicts
from sweep.evaluation.content import parse_metric as content_metric
from sweep.evaluation.sources import parse_metric
from sweep.outputs import quant, tracking
from sweep.outputs.report import (
    NOT_APPLICABLE,
    RETRIEVAL_LATENCY,
    differing_keys,
    embedding_dominates,
    rank_key,
)

DEFAULT_METRIC = "recall_at_5"
# Params that never make a configuration different.
_IGNORED_PARAM_PREFIXES = ("tracking.",)


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
    # Questions orphaned in every configuration (kept out), and what `sweep.decide.lost` says
    # about the questions some configuration lost (counted as its misses).
    orphans: list[str] = field(default_factory=list)
    lost_lines: list[str] = field(default_factory=list)
    note: str | None = None  # how the sweep was chosen, when not as asked (a failed latest)
    # Every sweep's parent run when several were joined into one table (``parent`` is the
    # first); empty for one sweep.
    joined: list[dict[str, Any]] = field(default_factory=list)


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
            metric = (json.loads(read_text_regular(path)).get("headline") or {}
                      ).get("metric")
        except (OSError, json.JSONDecodeError):
            continue
        if metric:
            return str(metric)
    return None


class NoResults(SweepError):
    """A sweep without a finished configuration (it failed, or was stopped, before one)."""


def finished_records(uri: str, parent: Mapping[str, Any]) -> tuple[list[dict[str, Any]],
                                                                  list[str], int]:
    """The sweep's finished runs as ``{run_id, params, <metric>: value}`` records, the metric
    names any of them has, and how many runs did not finish."""
    df = tracking.sweep_runs(uri, parent)
    if df is None or len(df) == 0:
        raise NoResults(f"sweep {parent['run_id']} has no configuration runs")
    finished = df[df["status"] == "FINISHED"]
    n_failed = len(df) - len(finished)
    if len(finished) == 0:
        raise NoResults(f"sweep {parent['run_id']} has no finished configuration "
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


def _by_section(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A run's flat params (``chunk.size``) as the config's sections, for `config_name`."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in params.items():
        section, _, rest = key.partition(".")
        if rest:
            out.setdefault(section, {})[rest] = _typed(value)
    return out


def _typed(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            continue
    return value


def ranked_table(uri: str, experiment: str | None, sweep: str | Sequence[str],
                 metric: str | None, tmp: Path) -> SweepTable:
    """The sweep's finished configurations, best first, without the per-question scores or
    the verdicts (what the labelling page needs: the best run and the swept parameters).
    Several sweeps (a list of two or more): the configurations of all of them in one table
    (`joined_records`); the keys that differ between them are axes like any swept one."""
    joined: list[dict[str, Any]] = []
    if isinstance(sweep, str) or len(sweep) == 1:
        parent, (records, metric_cols, n_failed), note = sweep_with_results(
            uri, experiment, sweep if isinstance(sweep, str) else sweep[0])
    else:
        joined, (records, metric_cols, n_failed), note = joined_records(uri, experiment, sweep)
        parent = joined[0]
    if metric is None:
        metric = _headline_of(uri, [rec["run_id"] for rec in records], tmp) or DEFAULT_METRIC
    if metric not in metric_cols:
        shown = ", ".join(m for m in metric_cols if not m.startswith(("time_", "n_")))
        raise SweepError(f"unknown metric {metric!r} (available: {shown})")
    # (a sweep whose every configuration an earlier one holds has no rows of its own)
    lacking = [p["run_id"] for p in joined
               if (mine := [rec for rec in records if rec["sweep"] == p["run_id"]])
               and all(rec.get(metric) is None for rec in mine)]
    if lacking:
        # ranked on a metric one sweep never logged, its rows would sink unjudged
        raise SweepError(f"cannot join the sweeps: sweep {lacking[0]} has no {metric}; "
                         "choose a metric every sweep logged with --metric")
    swept = swept_params([rec["params"] for rec in records])
    if joined:
        swept = joined_axes(swept, [[rec["params"] for rec in records
                                     if rec["sweep"] == p["run_id"]] for p in joined])
    for rec in records:
        unused = inapplicable_keys(rec["params"])
        for p in swept:
            rec[p] = NOT_APPLICABLE if p in unused else _typed(rec["params"].get(p))
        # the one name of a configuration: its run's, its exported file's
        rec["name"] = config_name(_by_section(rec["params"]), swept)
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
    # dollars when it has a served model, the answer columns when it answered.
    for name in (*evidence, f"recall_at_{prompt_k}", "mrr", f"evidence_recall_at_{prompt_k}",
                 "evidence_recall_at_budget", cost, latency, RETRIEVAL_LATENCY, "n_requests",
                 "served_cost_usd", "ann_overlap_at_10", f"ann_tax_{metric}", "ann_tax_mrr",
                 "index_bytes_ann",
                 # a sweep that ran the answer half (generation=...): both arms and the tax
                 "answer_accuracy_live", "answer_accuracy_oracle", "retrieval_tax"):
        if name == RETRIEVAL_LATENCY and not embedding_dominates(rows):
            continue  # the end-to-end latency tells the rows apart (as in the sweep's table)
        if name not in shown and name in metric_cols:
            shown.append(name)
    # A golden set mixing sources: the ranking metric of each source, as a column group.
    shown += [name for name in metric_cols if (ps := parse_metric(name)) and ps[1] == metric]
    # eval.by_content: the ranking metric per kind of content the evidence sits in
    shown += [name for name in metric_cols if (pc := content_metric(name)) and pc[1] == metric]
    return SweepTable(parent, metric, swept, shown, rows, {}, cost, latency, n_failed,
                      note=note, joined=joined)


def joined_records(uri: str, experiment: str | None, sweeps: Sequence[str]
                   ) -> tuple[list[dict[str, Any]], tuple[list[dict[str, Any]], list[str], int],
                              str | None]:
    """The parents of ``sweeps`` and their finished records as one list (`finished_records`'s
    shape), the notes of any ``latest`` chosen otherwise. A configuration in two sweeps (one
    config_hash) is kept once, from the first sweep named. A `SweepError` when a sweep is
    named twice or the sweeps scored different inputs (`input_mismatch`)."""
    found = [sweep_with_results(uri, experiment, s) for s in sweeps]
    parents = [parent for parent, _, _ in found]
    ids = [p["run_id"] for p in parents]
    if len(set(ids)) < len(ids):
        twice = next(i for i in ids if ids.count(i) > 1)
        raise SweepError(f"sweep {twice} is named twice in --sweep")
    mismatch = input_mismatch([(p["run_id"], recs) for p, (recs, _, _), _ in found])
    if mismatch:
        raise SweepError(mismatch)
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for parent, (recs, _, _), _ in found:
        for rec in recs:
            key = rec.get("config_hash") or rec["run_id"]
            if key not in seen:
                seen.add(key)
                records.append({**rec, "sweep": parent["run_id"]})
    metric_cols = sorted({m for _, (_, cols, _), _ in found for m in cols})
    n_failed = sum(nf for _, (_, _, nf), _ in found)
    notes = [note for _, _, note in found if note]
    return parents, (records, metric_cols, n_failed), "; ".join(notes) or None


def joined_axes(differing: Sequence[str], sweeps: Sequence[Sequence[Mapping[str, Any]]]
                ) -> list[str]:
    """The axes of joined sweeps, from the keys that differ between any of their rows
    (``differing``) and each sweep's rows' params: every key a sweep varied, and every other
    key that can change a result. Keys that cannot (where the cache, the store or the sweep's
    files were, the batch size, an input's name) differ between sweeps run on different days or
    machines without making their configurations different."""
    own = {k for params in sweeps for k in swept_params(params)}
    unhashed = set(unhashed_flat_keys())

    def no_result(key: str) -> bool:
        section, _, rest = key.partition(".")
        return (section in OPERATIONAL_SECTIONS or key in unhashed
                or INPUT_KEYS.get(section, {}).get(rest) == "label")

    return [k for k in differing if k in own or not no_result(k)]


def input_mismatch(sweeps: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> str | None:
    """Why the configurations of these sweeps (``(parent run id, records)``) cannot share one
    table, or None. Every configuration of one comparison must be scored on the same questions
    of the same documents: each sweep's runs must carry the same golden-set fingerprint, and
    corpus fingerprints that meet (a sweep over parsers has one per parser, so one fingerprint
    in common is asked for, and runs with the same corpus settings must have the same one).
    Runs without fingerprints (logged before runs were tagged with them) cannot be shown to
    match, so they are refused too."""
    def prints(recs: Sequence[Mapping[str, Any]], name: str) -> set[str]:
        return {fp for r in recs if (fp := (r.get("inputs") or {}).get(name))}

    def named(fps: set[str]) -> str:
        return ",".join(sorted(f[:12] for f in fps))

    why = "every configuration of one comparison must be scored on the same questions"
    for name, label in (("golden", "golden set"), ("corpus", "corpus")):
        sets = {sid: prints(recs, name) for sid, recs in sweeps}
        bare = [sid for sid, fps in sets.items() if not fps]
        if bare:
            return (f"cannot join the sweeps: the runs of sweep {bare[0]} carry no {label} "
                    f"fingerprint (logged before runs were tagged), so they cannot be shown to "
                    f"have scored the same {label} as the others; {why}")
        differ = (len({frozenset(fps) for fps in sets.values()}) > 1 if name == "golden"
                  else not set.intersection(*sets.values()))
        if not differ and name == "corpus":
            # the same corpus settings must have loaded the same documents in every sweep
            by_settings: dict[str, set[str]] = {}
            for _, recs in sweeps:
                for r in recs:
                    settings = json.dumps({k: v for k, v in r["params"].items()
                                           if k.startswith("corpus.")}, sort_keys=True)
                    by_settings.setdefault(settings, set()).update(prints([r], name))
            differ = any(len(fps) > 1 for fps in by_settings.values())
        if differ:
            return (f"cannot join the sweeps: they scored different {label}s ("
                    + "; ".join(f"sweep {sid}: {named(fps)}" for sid, fps in sets.items())
                    + f"); {why}")
    return None


def sweep_with_results(uri: str, experiment: str | None, sweep: str
                       ) -> tuple[dict[str, Any], tuple[list[dict[str, Any]], list[str], int],
                                  str | None]:
    """The sweep asked for and its `finished_records`; for ``latest``, when the latest sweep
    has no finished configuration (a typo's sweep that failed at once), the last one of its
    experiment that has, with a note saying so (None when the sweep is the one asked for)."""
    parent = tracking.find_sweep(uri, experiment, sweep)
    try:
        return parent, finished_records(uri, parent), None
    except NoResults as exc:
        if sweep not in ("", "latest"):
            raise
        first = exc
    for earlier in tracking.earlier_sweeps(uri, parent):
        try:
            found = finished_records(uri, earlier)
        except NoResults:
            continue
        when = datetime.fromtimestamp((earlier.get("start_time") or 0) / 1000, UTC)
        return earlier, found, (
            f"the latest sweep, {parent['run_id']} ({parent.get('status', '?')}), has no "
            f"results ({first.message.split(' has ', 1)[-1]}); this is sweep "
            f"{earlier['run_id']} of {when:%Y-%m-%d %H:%M} UTC, the last one with results "
            f"(--sweep PARENT_RUN_ID chooses another)")
    raise first


def add_verdicts(t: SweepTable, uri: str, tmp: Path, *, n: int = N_RESAMPLES,
                 seed: int = SEED, correction: str = DEFAULT_CORRECTION) -> None:
    """Read every run's per_question.csv into ``t.per_question`` and test each configuration
    against the best (paired bootstrap, p-values adjusted over the table by ``correction``),
    in place. Questions a configuration lost that another scored count as its misses
    (`sweep.decide.lost`): its means are recomputed with them and the rows ranked again."""
    t.per_question = {rec["run_id"]: read_per_question(uri, rec["run_id"], tmp) for rec in t.rows}
    t.correction = correction
    count_lost(t)
    metric = t.metric
    best_q = t.per_question.get(t.rows[0]["run_id"])
    scores: list[dict[str, float] | None] = []
    for rec in t.rows:
        mine = t.per_question.get(rec["run_id"])
        if best_q is None or mine is None or metric not in best_q.columns \
                or metric not in mine.columns:
            scores.append(None)
            continue
        scores.append(lost.with_misses(question_scores(mine, metric),
                                       rec.get("_lost") or [], metric))
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


def count_lost(t: SweepTable) -> None:
    """The questions each configuration lost (orphans there, scored in another), from the
    per-question tables: ``lost_in_parsing`` (their number) and ``_lost`` (their ids) on each
    row; each per-question metric of the table recomputed with them as misses on the rows
    that lost any, and the rows ranked again. Nothing changes in a sweep without such
    questions (one parser: its orphans are every configuration's)."""
    found = lost.lost_questions([lost.statuses(t.per_question.get(rec["run_id"]))
                                 for rec in t.rows],
                                [(rec.get("inputs") or {}).get("golden") for rec in t.rows])
    t.orphans = found.everywhere
    if not found.any:
        return
    for rec, qids in zip(t.rows, found.lost, strict=True):
        rec["lost_in_parsing"] = len(qids)
        rec["_lost"] = qids
        frame = t.per_question.get(rec["run_id"])
        if not qids or frame is None:
            continue
        for name in dict.fromkeys([t.metric, *t.shown]):
            if name in frame.columns and lost.miss_value(name) is not None:
                rec[name] = lost.mean(lost.with_misses(question_scores(frame, name), qids,
                                                       name))
    t.rows = rank_rows(t.rows, t.metric, t.cost, t.latency)
    for i, rec in enumerate(t.rows):
        rec["rank"] = i + 1
    if "lost_in_parsing" not in t.shown:
        t.shown.insert(1, "lost_in_parsing")
    t.lost_lines = lost.lost_line([row_name(r, t.swept) for r in t.rows],
                                  lost.Lost([r.get("_lost") or [] for r in t.rows],
                                            found.everywhere))


def row_name(row: Mapping[str, Any], axes: Sequence[str]) -> str:
    """``boundary=heading, size=128``: a row by its swept settings."""
    return ", ".join(f"{a.split('.')[-1]}={row.get(a)}" for a in axes) or "the configuration"


def load_table(uri: str, experiment: str | None, sweep: str | Sequence[str],
               metric: str | None, tmp: Path, *, n: int = N_RESAMPLES, seed: int = SEED,
               correction: str = DEFAULT_CORRECTION) -> SweepTable:
    """The sweep's finished configurations, best first, each with its verdict vs the best
    (corrected for the table's comparisons: ``correction``). Several sweeps: all their
    configurations in one table (`ranked_table`), each tested against the best of all, paired
    over the questions both scored."""
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
