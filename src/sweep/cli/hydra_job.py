"""The Hydra job: one configuration, as a thin adapter.

The job turns the composed config into the typed `Config`, checks it, builds its `JobSpec`
(`config.specs.build_job_spec`), runs `sweep.application.job.run_job` on that, writes the
report into the job folder, then logs it to MLflow. Bad input never raises out of here as a
traceback: a single run prints one line and exits 1; inside a multirun the failing job is
recorded (report + FAILED child run) and the sweep goes on, then exits 1 at the end. The
sweep's callback is `sweep.cli.hydra_sweep` (re-exported here: conf/config.yaml names it by
this module); what the two share in a process is `sweep.cli.sweep_session`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sweep.application import shared
from sweep.application.audit import set_audit
from sweep.application.corpus import open_corpus_view
from sweep.application.job import run_job
from sweep.application.sweep import need_line
from sweep.cli.hydra_sweep import MlflowSweepCallback
from sweep.cli.sweep_session import (
    SESSION,
    close_failed,
    close_interrupted,
    run_name,
    sweep_parent,
    ui_command,
    write_error,
)
from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.common.secret import install_log_scrubber
from sweep.config.checks import check_config
from sweep.config.compose import config_error_line, to_container
from sweep.config.identity import config_hash
from sweep.config.schema import Config
from sweep.config.specs import JobSpec, build_job_spec
from sweep.decide.decision import audit_power
from sweep.outputs import report as rp
from sweep.outputs import tracking, tracking_worker
from sweep.outputs.misses_html import add_answers, write_views
from sweep.pipeline.run import run_generation_for

# The names other modules and conf/config.yaml import from here.
__all__ = ["MlflowSweepCallback", "close_failed", "close_interrupted", "job", "run_name",
           "ui_command", "write_error"]

log = logging.getLogger("sweep")


def _error_line(exc: BaseException) -> str:
    if isinstance(exc, SweepError):
        return str(exc)
    if isinstance(exc, OmegaConfBaseException):
        return config_error_line(exc)
    return f"{type(exc).__name__}: {exc}"


class _OwnLines(logging.Filter):
    """Below WARNING, only the tool's and Hydra's own lines: a library that sets its logger to
    DEBUG (``[bm25s][DEBUG] - Building index``) would drown them in a CI log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.WARNING
                or record.name.split(".", 1)[0] in ("sweep", "hydra", "__main__"))


def _third_party_at_warning(verbose: Any) -> None:
    # On the handlers, not the loggers: libraries imported later set their own levels.
    # Hydra configures logging anew for each job, hence once per job.
    if verbose:  # hydra.verbose=true (or a list of loggers): everything, as Hydra does
        return
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _OwnLines) for f in handler.filters):
            handler.addFilter(_OwnLines())


def job(cfg: DictConfig) -> float:
    """One configuration. Returns the headline metric (NaN when the job failed)."""
    hc = HydraConfig.get()
    _third_party_at_warning(hc.verbose)
    install_log_scrubber()  # a launcher's worker process did not run hydra_main
    multirun = hc.mode == RunMode.MULTIRUN
    job_dir = Path(hc.runtime.output_dir)
    SESSION.choices = group_choices(hc.runtime.choices)
    try:
        plain = to_container(cfg)
    except OmegaConfBaseException as exc:
        return _fail({}, job_dir, exc, multirun)
    try:
        typed: Config = OmegaConf.to_object(cfg)  # type: ignore[assignment]
        check_config(typed)
        # `plain` is what to_container(typed) gives (the job's config has no hydra key).
        spec = build_job_spec(typed, plain)
        if spec.tracking.enabled:
            tracking_worker.set_store_wait(spec.tracking.store_wait_s)
            tracking.preflight(spec.tracking.uri)
            resumed = _resume(spec, job_dir)
            if resumed is not None:
                return resumed
        # The sweep's shared texts first (cache.prewarm): this job's part of them, then the
        # wait for the rest, so its own pass finds them in the cache.
        work = shared.join(spec, Path(str(hc.sweep.dir))) if multirun else None
        result = run_job(spec)
    except (SweepError, OmegaConfBaseException) as exc:
        return _fail(plain, job_dir, exc, multirun)

    rep = result.report
    shared.add_to_report(rep, work)
    rep["choices"] = dict(SESSION.choices)
    gen_error: SweepError | None = None
    try:
        # Retrieval results are on disk before generation starts: a crash there loses nothing.
        paths = [rp.write_report(job_dir, rep), rp.write_per_question(job_dir, result.rows),
                 rp.write_config(job_dir, plain)]
        miss_counts = {k: v for k, v in rep["metrics"].items() if k.startswith("n_miss")}
        paths += write_views(job_dir, result.views, run_name(plain), miss_counts)
        if not multirun:  # a sweep audits its golden set once, at its end
            paths += set_audit(spec, job_dir, audit_power(
                None, rep["headline"]["metric"], None, "one configuration: no pair to size it "
                "from; a sweep's audit.json has it, and `sweep audit` reads the latest sweep"))
        if spec.generation.method != "none":
            try:
                run_generation_for(spec, result, progress=not multirun)
            except SweepError as exc:
                gen_error = exc
                rep["status"] = "FAILED"
                rep["error"] = f"{exc} (the retrieval metrics of this configuration are kept)"
            rp.write_report(job_dir, rep)
            rp.write_per_question(job_dir, result.rows)
            if gen_error is None:  # the misses page with each question's answer diagnosis
                add_answers(result.views, result.rows)
                write_views(job_dir, result.views, run_name(plain), miss_counts)
    except OSError as exc:  # a full disk, a read-only or vanished job folder
        return _fail(plain, job_dir, write_error(job_dir, exc), multirun)
    _print_summary(rep, job_dir, multirun)
    if spec.tracking.enabled:
        store = (spec.tracking.uri, spec.tracking.experiment)
        run = {"run_name": run_name(plain), "plain_config": plain, "report": rep,
               "artifacts": paths, "artifact_dirs": {"hydra": job_dir / ".hydra"},
               "parent_run_id": sweep_parent(), "status": rep["status"],
               "error": rep.get("error")}
        if multirun:
            # Queued: the next job starts while the worker logs this one. A failure is
            # reported at the next MLflow call or at the sweep's end, which exits 1.
            tracking_worker.submit(tracking.log_job, *store, **run,
                                   on_error=_not_logged(job_dir, rep, run["run_name"]))
        else:
            try:
                tracking_worker.call(tracking.log_job, *store, **run)
            except SweepError as exc:
                rep["tracking_error"] = str(exc)
                rp.write_report(job_dir, rep)
                return _exit_or_nan(str(exc), multirun, exc)
    if gen_error is not None:
        return _exit_or_nan(rep["error"], multirun, gen_error)
    return float(rep["headline"]["value"])


def group_choices(choices: Any) -> dict[str, str]:
    """Hydra's runtime choices without Hydra's own groups (launcher, sweeper, logging)."""
    return {str(k): str(v) for k, v in dict(choices or {}).items()
            if v is not None and not str(k).startswith("hydra")}


def _not_logged(job_dir: Path, rep: dict[str, Any], name: str) -> tracking_worker.OnError:
    """What a queued child run's failure does, whenever it is reported: one line naming the
    configuration, ``tracking_error`` in its report.json, exit 1 at the sweep's end."""

    def record(exc: SweepError) -> None:
        SESSION.not_logged.append(f"{name} ({job_dir}): {exc}")
        log.error("configuration %s (%s) was not logged to MLflow: %s", name, job_dir, exc)
        rep["tracking_error"] = str(exc)
        try:
            rp.write_report(job_dir, rep)
        except OSError as write_exc:
            log.error("%s", write_error(job_dir, write_exc))

    return record


def _resume(job: JobSpec, job_dir: Path) -> float | None:
    """Skip a configuration the store already has as FINISHED (same config_hash): an
    interrupted sweep re-run with the same overrides loses nothing and repeats nothing.

    A run of this configuration left RUNNING by a killed process is closed KILLED first (and
    tagged), so that the store never holds FINISHED and RUNNING for one configuration."""
    view = open_corpus_view(job)
    corpus_fp, golden_fp = view.fingerprint, view.golden.fingerprint
    chash = config_hash(job.plain, corpus_fp, golden_fp)
    uri, experiment = job.tracking.uri, job.tracking.experiment
    if (uri, experiment) in SESSION.stale_closed:
        stale = []
    else:
        stale = tracking_worker.call(tracking.close_stale, uri, experiment, "config", chash)
    if stale:
        log.warning("closed %d run(s) of this configuration left RUNNING by a process that "
                    "ended (%s): KILLED, tagged %s", len(stale), ", ".join(stale),
                    tracking.STALE_TAG)
    if job.force:
        return None
    run_id = tracking_worker.call(tracking.find_finished, uri, experiment, chash)
    if run_id is None:
        return None
    try:
        path = tracking_worker.call(tracking.download_report, uri, run_id, job_dir)
        rep = json.loads(read_text_regular(path))
    except (SweepError, OSError, json.JSONDecodeError) as exc:
        log.warning("run %s has this config_hash but its report cannot be read (%s); "
                    "running the configuration again", run_id, exc)
        return None
    rep["resumed_from_run"] = run_id
    rp.write_report(job_dir, rep)
    parent = sweep_parent()
    if parent:  # so that `sweep compare` on this sweep still sees every configuration
        tracking_worker.call(tracking.tag_run, uri, parent, f"resumed.{chash}", run_id)
    log.info("skipped: this configuration (config_hash %s) is already FINISHED as run %s; "
             "sweep.force=true re-runs it", chash, run_id)
    return float(rep["headline"]["value"])


def _fail(plain: dict[str, Any], job_dir: Path, exc: BaseException, multirun: bool) -> float:
    message = _error_line(exc)
    rep = {"status": "FAILED", "error": message, "config": plain, "choices": dict(SESSION.choices)}
    # When the folder is what failed, the FAILED run in MLflow carries the reason.
    with contextlib.suppress(OSError):
        rp.write_report(job_dir, rep)
    if plain and plain.get("tracking", {}).get("enabled"):
        def not_logged(tracking_exc: SweepError) -> None:
            if str(tracking_exc) != message:  # the store itself may be what failed
                log.error("%s", tracking_exc)

        store = (plain["tracking"]["uri"], plain["tracking"]["experiment"])
        run = {"run_name": run_name(plain), "plain_config": plain, "report": rep,
               "artifacts": [job_dir / rp.REPORT],
               "parent_run_id": sweep_parent(), "status": "FAILED",
               "error": message}
        if multirun:
            tracking_worker.submit(tracking.log_job, *store, **run, on_error=not_logged)
        else:
            try:
                tracking_worker.call(tracking.log_job, *store, **run)
            except SweepError as tracking_exc:
                not_logged(tracking_exc)
    return _exit_or_nan(message, multirun, exc)


def _exit_or_nan(message: str, multirun: bool, exc: BaseException) -> float:
    if os.environ.get("HYDRA_FULL_ERROR") == "1" or os.environ.get("CHUNK_SWEEP_DEBUG") == "1":
        raise exc
    if multirun:
        log.error("job failed: %s", message)
        return math.nan
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def _print_summary(rep: dict[str, Any], job_dir: Path, multirun: bool) -> None:
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
    if multirun:
        log.info("%s", line)
    else:
        print(line)
        print(f"report: {job_dir / rp.REPORT}")


