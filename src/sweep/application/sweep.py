"""`finish_sweep(SweepSpec, found) -> SweepOutcome`: what happens at the end of a sweep, as
data in and data out.

From the jobs' reports it computes the comparison table, the corrected verdicts, the power
line, each axis's effect and the Pareto fronts (`sweep.decide.decision`), writes the table and
the golden set's audit into the sweep folder, sums the served models' usage and the shared
work, and says what the sweep's parent run is to record. Printing, drawing (by the MLflow
worker) and logging to MLflow are the caller's: the Hydra callback
(`sweep.cli.hydra_job.MlflowSweepCallback.on_multirun_end`) is a thin adapter over this.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.application import shared
from sweep.application.audit import set_audit
from sweep.common.errors import SweepError
from sweep.config.specs import JobSpec
from sweep.decide.answers import AnswerRun, answer_lines, answer_run, compare_to_winner
from sweep.decide.decision import audit_power, finished_sweep
from sweep.decide.rerun import agreement
from sweep.outputs import quant
from sweep.outputs import report as rp

log = logging.getLogger("sweep")


@dataclass(frozen=True)
class SweepSpec:
    """What the end of a sweep needs besides its reports: its folder, the job spec its
    audit reads (None: no audit, because ``sweep.audit=false`` or the config did not convert;
    or a function that gives it, called only when the audit is written, after ``on_decided``:
    the Hydra callback converts its config while the plots are drawn) and the id of its parent
    run (None without tracking)."""

    sweep_dir: Path
    audit_job: JobSpec | Callable[[], JobSpec | None] | None = None
    parent: str | None = None

    def audited(self) -> JobSpec | None:
        """The job spec the audit reads (None: no audit)."""
        return self.audit_job() if callable(self.audit_job) else self.audit_job


@dataclass
class ParentRun:
    """What the sweep's parent run records when it is closed."""

    status: str
    metrics: dict[str, float]
    tags: dict[str, str]
    note: str  # the run's description in the UI (Markdown)


@dataclass
class SweepOutcome:
    axes: list[str]
    rows: list[dict[str, Any]]  # the comparison table, best first, verdicts set
    decision: dict[str, Any] | None  # `finished_sweep`'s result (None: not computed)
    artifacts: list[Path]  # written into the sweep folder (table, audit)
    reports: list[dict[str, Any]]
    best_needs: str | None  # the best report's headline by passages needed
    served: dict[str, float]  # served models' usage summed over the jobs
    encoded: dict[str, Any]  # texts encoded per node, against the plan's unique texts
    failed: list[dict[str, Any]]  # the rows that did not finish (or why there are none)
    parent: ParentRun = field(repr=False)
    # The configurations that ran the answer half (generation=...), best retrieval first.
    answers: list[AnswerRun] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        """What is said after the table, in order: the answers and their closing statement
        last (does the retrieval winner also win on answers?)."""
        out = [f"best configuration, {self.best_needs}"] if self.best_needs else []
        out += list(self.decision["lines"]) if self.decision is not None else []
        return out + answer_lines(self.answers)

    @property
    def totals_lines(self) -> list[str]:
        """The served models' usage and the texts encoded, when there are any."""
        lines = [rp.served_line(self.served), shared.totals_line(self.encoded)]
        return [line for line in lines if line]

    def error(self, not_logged: list[str]) -> str | None:
        """The line the sweep ends with, exit 1 (None: it succeeded). ``not_logged``: the
        configurations whose runs could not be logged to MLflow."""
        rows, failed = self.rows, self.failed
        if not rows:
            return failed[0]["error"]
        if failed:
            return (f"{len(failed)} of {len(rows)} configurations failed; first: "
                    f"{failed[0].get('error')}")
        if not_logged:
            return (f"{len(not_logged)} of {len(rows)} configurations were not logged to "
                    f"MLflow (their reports are in the sweep folder); first: {not_logged[0]}")
        return None


# What the caller does with the final table as soon as it is known: (axes, rows, decision).
Decided = Callable[[list[str], list[dict[str, Any]], "dict[str, Any] | None"], None]
# ... and with the rows as soon as their order and headlines are final, before the statistics
# (their verdicts not set yet): (axes, rows).
Ranked = Callable[[list[str], list[dict[str, Any]]], None]


def finish_sweep(spec: SweepSpec, found: list[tuple[Path, dict[str, Any]]],
                 on_decided: Decided | None = None, on_ranked: Ranked | None = None
                 ) -> SweepOutcome:
    """The end of the sweep whose job reports are ``found`` (`outputs.report.read_reports`:
    (job folder, report), read from ``spec.sweep_dir``). Writes comparison.{csv,md,json} and,
    when some configuration finished, audit.{json,html}; never raises for what cannot be
    computed (the statistics, the audit): it is said in a warning. ``on_ranked`` is called with
    the rows once their order and headlines are final, before the statistics; ``on_decided``
    with the table (its rows final, verdicts set) and the decision before the files and the
    audit are written: the Hydra callback has the plots drawn meanwhile."""
    sweep_dir = spec.sweep_dir
    # Configurations run off torch fp32 beside the same one at it: the quantisation tax.
    quant.add_to_reports(found)
    reports = [r for _, r in found]
    axes, rows = rp.comparison_rows(reports, folders=[f for f, _ in found])
    decision = decide(axes, rows, found,
                      None if on_ranked is None else lambda: on_ranked(axes, rows))
    if on_decided is not None:
        on_decided(axes, rows, decision)
    artifacts = rp.write_comparison(sweep_dir, axes, rows)
    # Audited when some configuration finished: their golden set and corpus loaded.
    audit_job = (spec.audited() if any(r["status"] == "FINISHED" for r in rows)
                 else None)
    if audit_job is not None:
        pw = decision["power"] if decision is not None else None
        artifacts += set_audit(audit_job, sweep_dir, audit_power(
            pw, decision["metric"] if decision is not None else None, spec.parent,
            "fewer than two configurations finished with per-question scores"))
    best_report = max((r for r in reports if r.get("status") == "FINISHED"
                       and isinstance((r.get("headline") or {}).get("value"), int | float)),
                      key=lambda r: r["headline"]["value"], default=None)
    served = rp.served_totals(reports)
    encoded = shared.totals(reports, shared.finish(sweep_dir))
    failed = [r for r in rows if r["status"] != "FINISHED"]
    if not rows:
        # e.g. remote workers that resolved a relative hydra.sweep.dir in their own cwd
        failed = [{"error": f"no job report under {sweep_dir} (the jobs wrote elsewhere or "
                   "never ran; use an absolute hydra.sweep.dir on a shared filesystem)"}]
    outcome = SweepOutcome(axes, rows, decision, artifacts, reports,
                           need_line(best_report) if best_report is not None else None,
                           served, encoded, failed, ParentRun("", {}, {}, ""),
                           sweep_answers(axes, rows))
    outcome.parent = parent_run(outcome, sweep_dir)
    return outcome


def sweep_answers(axes: list[str], rows: list[dict[str, Any]]) -> list[AnswerRun]:
    """The finished configurations that ran the answer half, in the table's order, from their
    job folders' per_question.csv; one that cannot be read is said in a warning, not fatal."""
    out = []
    for row in rows:
        if row.get("status") != "FINISHED" or row.get("answer_accuracy_live") is None \
                or not row.get("folder"):
            continue
        path = Path(row["folder"]) / rp.PER_QUESTION
        try:
            with path.open(newline="", encoding="utf-8") as f:
                per_question = list(csv.DictReader(f))
        except OSError as exc:
            log.warning("%s: not read (%s); its answers are left out of the closing "
                        "statement", path, exc.strerror)
            continue
        name = ", ".join(f"{a.split('.')[-1]}={row.get(a)}" for a in axes) or "the configuration"
        headline = row.get("headline")
        run = answer_run(name, float(headline) if isinstance(headline, int | float) else 0.0,
                         per_question)
        if run is not None:
            out.append(run)
    return out


def answer_metrics(runs: list[AnswerRun]) -> dict[str, float]:
    """The parent run's answer figures: the retrieval winner's accuracy live/oracle and tax,
    whether its retrieval win shows in answers against each other configuration (1/0), and
    the rank agreement of retrieval and live answers."""
    if not runs:
        return {}
    winner, pairs = compare_to_winner(runs)
    m: dict[str, float] = {"answers_n_configs": float(len(runs))}
    live, oracle = winner.accuracy("live"), winner.accuracy("oracle")
    if live is not None and oracle is not None:
        m.update(answers_winner_accuracy_live=live, answers_winner_accuracy_oracle=oracle,
                 answers_winner_retrieval_tax=oracle - live)
    for d, n in winner.diagnosis.items():
        m[f"answers_winner_n_{d}"] = float(n)
    if pairs:
        m["answers_winner_holds"] = float(all(p.lo > 0 for p in pairs))
    order = [r.name for r in sorted(runs, key=lambda r: -r.retrieval)]
    a = agreement(order, {r.name: acc for r in runs if (acc := r.accuracy("live")) is not None},
                  True)
    if a["pairs"]:
        m["answers_rank_agreement"] = float(a["pairs_agree"])
    return m


def decide(axes: list[str], rows: list[dict[str, Any]],
           found: list[tuple[Path, dict[str, Any]]],
           on_ranked: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """The corrected verdicts (set on ``rows``), the power line and each axis's effect, from
    the jobs' per_question.csv. Never ends the sweep: what cannot be computed is said in one
    line. ``on_ranked`` is called once, when ``rows`` have their final order and headlines:
    before the bootstrap, or at the end when there are no statistics."""
    by_folder = {str(folder): rep for folder, rep in found}
    called: list[bool] = []

    def ranked() -> None:
        called.append(True)
        if on_ranked is not None:
            on_ranked()

    try:
        decision = finished_sweep(axes, rows, by_folder, on_ranked=ranked)
    except (SweepError, OSError, ValueError) as exc:
        log.warning("the sweep's statistics (verdicts, power, axes) were not computed: %s", exc)
        decision = None
    if not called:
        ranked()
    return decision


def parent_run(outcome: SweepOutcome, sweep_dir: Path) -> ParentRun:
    """The parent run's status, metrics and tags (the best configuration, the power line,
    the correction, and the note the UI shows as its description)."""
    rows, axes, decision, failed = outcome.rows, outcome.axes, outcome.decision, outcome.failed
    best = next((r for r in rows if r["status"] == "FINISHED"), None)
    metrics: dict[str, float] = {"n_configs": len(rows), "n_failed": len(failed) if rows else 0}
    if best is not None and isinstance(best["headline"], int | float):
        metrics[f"best_{best['headline_metric']}"] = best["headline"]
    metrics.update({f"total_{k}": v for k, v in outcome.served.items()})
    encoded = outcome.encoded
    if encoded["per_node"]:
        metrics["total_texts_encoded"] = encoded["total"]
    if encoded["unique"] is not None:
        metrics["unique_texts"] = encoded["unique"]
    tags: dict[str, str] = {}
    pw = decision["power"] if decision is not None else None
    if pw is not None and pw["mde"] is not None:
        metrics["power_mde"] = pw["mde"]
        metrics["power_n_questions"] = pw["n"]
        if pw["n_needed"] is not None:
            metrics["power_n_needed"] = pw["n_needed"]
            metrics["power_detect"] = pw["detect"]
    if pw is not None:
        tags["power"] = pw["line"][:5000]
    if decision is not None:
        tags["correction"] = decision["correction"]
        metrics["n_worse"] = sum(1 for v in decision["verdicts"] if v is not None and not v.tied)
    metrics.update(answer_metrics(outcome.answers))
    best_config = ", ".join(f"{a}={best[a]}" for a in axes) if best else ""
    return ParentRun("FAILED" if failed else "FINISHED", metrics,
                     {"best_config": best_config, **tags}, parent_note(outcome, sweep_dir))


def parent_note(outcome: SweepOutcome, sweep_dir: Path) -> str:
    """The parent's description in the UI: what the set can decide, then the table, so the
    sweep reads there without choosing columns by hand."""
    rows, decision = outcome.rows, outcome.decision
    headline = next((r["headline_metric"] for r in rows if r.get("headline_metric")),
                    "headline")
    # MLflow 3 shows a description's first lines only: they say where the whole table is.
    note = (f"**chunk-sweep**: {len(rows)} configurations, best {headline} first "
            f"(headline = {headline}). The whole table: the artifact `comparison.md` (Artifacts "
            "tab; `comparison.csv` has every column); sweep folder "
            f"`{sweep_dir.resolve()}`\n\n")
    if decision is not None:  # what the set can decide, before the table
        head = decision["lines"][: len(decision["lines"]) - len(decision["axis_lines"])]
        effects = [f"  - {e['text']}" for e in decision["axes"]]
        said = [f"- {line}" for line in head]
        if effects:
            said += [f"- {decision['axis_lines'][0]}", *effects]
        note += "\n".join(said)[:3000] + "\n\n"
    if outcome.answers:  # does the retrieval winner also win on answers?
        note += "\n".join(f"- {line.strip()}" for line in answer_lines(outcome.answers)
                          )[:2500] + "\n\n"
    return note + rp.comparison_markdown(outcome.axes, rows, max_chars=7000 - len(note))


def stopped_note(settled: str, parent: str, closed: str) -> str:
    """What a sweep that stopped early (Ctrl-C, a folder Hydra could not write) says of its
    parent run, closed ``closed``, by what `sweep.outputs.tracking.settle_unfinished` found:
    only a sweep with a finished configuration has anything to resume."""
    if settled == "deleted":
        return ("no configuration had run, so its parent run was removed from MLflow; nothing "
                "to resume: the same command starts the sweep again")
    if settled == "failed":
        return (f"parent run {parent} closed {closed} and named 'FAILED, nothing finished' (its "
                "configuration runs say why); nothing to resume: the same command runs every "
                "configuration again")
    return (f"parent run {parent} closed {closed}; the configurations that finished are kept, "
            "and the same command resumes the rest")


def need_line(rep: dict[str, Any]) -> str | None:
    """``by passages needed: 1 0.812 (n=40) · 2 0.500 (n=6) · 3+ - (n=0)``: the headline per
    number of passages an answer needs, when some question needs more than one."""
    split = rep.get("by_needs") or {}
    if not any((split.get(g) or {}).get("n") for g in ("2", "3plus")):
        return None
    metric = rep["headline"]["metric"]
    cells = [f"{g.replace('plus', '+')} {rp.format_value((split.get(g) or {}).get(metric))} "
             f"(n={(split.get(g) or {}).get('n', 0)})" for g in ("1", "2", "3plus")]
    return f"{metric} by passages needed: " + " · ".join(cells)


def job_line(rep: dict[str, Any]) -> str:
    """The one line a finished job prints (logs, inside a sweep): its headline and the usual
    metrics, the chunk and question counts, `need_line`, the generation diagnosis."""
    m = rep["metrics"]
    head = rep["headline"]
    shown = {head["metric"]: head["value"]}
    for name in ("recall_at_5", "mrr", "evidence_recall_at_5", "answer_accuracy_oracle",
                 "answer_accuracy_live", "retrieval_tax"):
        if name in m:
            shown.setdefault(name, m[name])
    line = "  ".join(f"{k}={rp.format_value(v)}" for k, v in shown.items())
    line += (f"  chunks={m.get('n_chunks')}  scored={m.get('n_scored')}/{m.get('n_questions')}"
             f"  orphans={m.get('n_orphans')}")
    needs = need_line(rep)
    if needs:
        line += f"  {needs}"
    if "generation" in rep:
        line += "  diagnosis: " + " ".join(f"{k}={v}" for k, v in
                                           rep["generation"]["diagnosis"].items())
    return line
