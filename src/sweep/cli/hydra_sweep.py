"""The Hydra sweep callback: one MLflow parent run per multirun, and the sweep's end.

A thin adapter: `on_multirun_start` plans the shared work and starts the parent run;
`on_multirun_end` reads the jobs' reports, hands them to `sweep.application.sweep.finish_sweep`
(the table, verdicts, power, axis effects, Pareto fronts, audit, shared-work totals, as data),
then prints the outcome, has the MLflow worker draw the plots and closes the parent run (the
worker's calls: `sweep.outputs.sweep_run`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from sweep.application.sweep import SweepOutcome, SweepSpec, finish_sweep
from sweep.cli.prewarm import check_every_job, prewarm_sweep
from sweep.cli.sweep_session import SESSION, Starting, run_name, sweep_parent
from sweep.common.errors import SweepError
from sweep.common.paths import unwritable_output
from sweep.config.specs import JobSpec, sweep_job_spec
from sweep.decide.decision import plot_data
from sweep.outputs import report as rp
from sweep.outputs import tracking, tracking_worker, written
from sweep.outputs.job_run import fetch_resumed
from sweep.outputs.sweep_run import (
    begin_axes_plot,
    begin_comparison_plot,
    begin_sweep_run,
    plotted,
)


def _check_output_dir(path: str) -> None:
    """Hydra creates the job folder itself and would die with a traceback; say it in a line."""
    problem = unwritable_output(path)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(1)


def _audit_job(config: DictConfig, found: list[tuple[Path, dict[str, Any]]]) -> JobSpec | None:
    # Converted only when an audit will be written: some configuration finished.
    if not any(r.get("status") == "FINISHED" for _, r in found):
        return None
    if not OmegaConf.select(config, "sweep.audit", default=True):
        return None
    return sweep_job_spec(config)


class MlflowSweepCallback(Callback):
    """One MLflow parent run per multirun, and the comparison table at its end."""

    def __init__(self) -> None:
        self.parent: str | None = None
        self.uri: str | None = None
        self.experiment_id: str | None = None

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_output_dir(str(config.hydra.run.dir))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_output_dir(str(config.hydra.sweep.dir))
        os.environ.pop(tracking.PARENT_ENV, None)
        written.forget()  # what an earlier sweep of this process wrote: not read again
        try:  # before any job and before the parent run: every combination checked
            check_every_job(config)
        except SweepError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        try:  # before the fan-out: the texts several configurations need, planned once
            prewarm_sweep(config)
        except SweepError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        if not config.tracking.enabled:
            return
        sweep_dir = str(config.hydra.sweep.dir)
        overrides = list(config.hydra.overrides.task)
        self.uri = str(config.tracking.uri)
        tracking_worker.set_store_wait(float(config.tracking.get("store_wait_s",
                                                                 tracking.STORE_WAIT_S)))
        try:
            tracking.preflight(self.uri)  # here: what can be checked without MLflow
        except SweepError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        experiment = str(config.tracking.experiment)
        parent, stale = begin_sweep_run(self.uri, experiment, sweep_dir, overrides)
        SESSION.stale_closed.add((self.uri, experiment))
        SESSION.not_logged.clear()
        SESSION.starting = Starting(self, self.uri, parent, stale)
        launcher = str(config.hydra.launcher.get("_target_", ""))
        # Jobs in other processes read the parent's id from the environment at launch; without
        # the worker, the parent exists already (and a store that failed says so now).
        if not launcher.endswith(".BasicLauncher") or tracking_worker.worker_pid() is None:
            sweep_parent()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_parent()
        sweep_dir = Path(str(config.hydra.sweep.dir))
        found = rp.read_reports(sweep_dir)
        fetch_resumed(found, self.uri)
        drawings: list[tracking_worker.Promise] = []

        def ranked(axes: list[str], rows: list[dict[str, Any]]) -> None:
            # the headline plot, as soon as the rows are final: the worker draws it (after the
            # queued child runs) while the statistics are computed here
            drawings.append(begin_comparison_plot(axes, rows, sweep_dir))

        def decided(axes: list[str], rows: list[dict[str, Any]],
                    decision: dict[str, Any] | None) -> None:
            # the axes' plot, as soon as the statistics are known: drawn while the audit is
            # written and the table printed here
            if decision is not None:
                drawings.append(begin_axes_plot(plot_data(decision, decision["rows"],
                                                          decision["metric"]), sweep_dir))

        # The statistics and the table first, while the worker logs the last queued child
        # runs, then draws; those runs' failures come back by the drain (into
        # SESSION.not_logged, read below, and their report.json), before the parent is
        # closed. Until then a Ctrl-C closes it KILLED. The audit's job spec is converted
        # from the config only when the audit is written, while the worker draws.
        outcome = finish_sweep(
            SweepSpec(sweep_dir, lambda: _audit_job(config, found), self.parent), found,
            on_decided=decided, on_ranked=ranked)
        self._show(outcome, drawings)
        tracking_worker.drain()
        SESSION.active_parent = None
        # (a launcher's job process logs its own run and writes the error to the report)
        not_logged = list(SESSION.not_logged) or [
            f"{run_name(r.get('config') or {})}: {r['tracking_error']}"
            for r in outcome.reports if r.get("tracking_error")]
        if self.parent and self.uri:
            self._close_parent(outcome)
        error = outcome.error(not_logged)
        if error is not None:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(1)

    def _show(self, outcome: SweepOutcome, drawings: list[tracking_worker.Promise]) -> None:
        """The table and the lines after it; the plots (``drawings``, begun by
        `on_multirun_end`) drawn meanwhile by the MLflow worker where there is one (it imported
        matplotlib while the jobs ran), else here before."""
        rp.print_comparison(outcome.axes, outcome.rows)
        for line in outcome.lines:
            print(line)
        outcome.artifacts.extend(plotted(drawings))
        for line in outcome.totals_lines:
            print(line)

    def _close_parent(self, outcome: SweepOutcome) -> None:
        assert self.parent is not None and self.uri is not None
        run = outcome.parent
        try:
            tracking_worker.call(
                tracking.finish_parent, self.uri, self.parent, status=run.status,
                metrics=run.metrics, tags={**run.tags, tracking.NOTE_TAG: run.note},
                artifacts=outcome.artifacts)
            if not any(r["status"] == "FINISHED" for r in outcome.rows):
                # no record of a sweep: removed, or named FAILED beside its failed runs
                tracking_worker.call(tracking.settle_unfinished, self.uri, self.parent)
        except SweepError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        finally:
            os.environ.pop(tracking.PARENT_ENV, None)
        link = tracking.ui_link(self.uri, self.experiment_id or "0")
        if link:
            how = tracking.ui_command(self.uri)
            print(f"MLflow runs of this sweep: {link}" + (f" (after `{how}`)" if how else ""))
            if any(r["status"] == "FINISHED" for r in outcome.rows):
                print("its comparison table: " + str(tracking.artifact_link(
                    self.uri, self.experiment_id or "0", self.parent, "comparison.md")))
