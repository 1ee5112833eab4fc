"""The Hydra job: one configuration, as a thin adapter.

The job turns the composed config into the typed `Config`, checks it, builds its `JobSpec`
(`config.specs.build_job_spec`), runs `sweep.application.job.run_job` on that, writes the
job folder (`application.job.write_job`), then logs it to MLflow (`outputs.job_run`). Bad
input never raises out of here as a traceback: a single run prints one line and exits 1;
inside a multirun the failing job is recorded (report + FAILED child run) and the sweep goes
on, then exits 1 at the end. The
sweep's callback is `sweep.cli.hydra_sweep` (re-exported here: conf/config.yaml names it by
this module); what the two share in a process is `sweep.cli.sweep_session`.
"""

from __future__ import annotations

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
from sweep.application.corpus import open_corpus_view
from sweep.application.job import run_job, write_job
from sweep.application.sweep import job_line
from sweep.cli.hydra_sweep import MlflowSweepCallback
from sweep.cli.sweep_session import (
    SESSION,
    close_failed,
    close_interrupted,
    parent_for_log,
    run_name,
    sweep_parent,
)
from sweep.common.errors import SweepError
from sweep.common.logs import own_lines_only
from sweep.common.secret import install_log_scrubber
from sweep.config.checks import check_config
from sweep.config.compose import error_line, to_container
from sweep.config.identity import config_hash
from sweep.config.naming import group_choices
from sweep.config.schema import Config
from sweep.config.specs import JobSpec, build_job_spec
from sweep.outputs import report as rp
from sweep.outputs import tracking, tracking_worker, written
from sweep.outputs.job_run import log_failed, log_finished, resume_finished, write_error

# The names other modules and conf/config.yaml import from here.
__all__ = ["MlflowSweepCallback", "close_failed", "close_interrupted", "job", "run_name",
           "write_error"]

log = logging.getLogger("sweep")


def job(cfg: DictConfig) -> float:
    """One configuration. Returns the headline metric (NaN when the job failed)."""
    hc = HydraConfig.get()
    own_lines_only(hc.verbose)
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
            resumed = _resume(spec, job_dir, multirun)
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
    try:
        paths, gen_error = write_job(spec, result, job_dir, plain, run_name(plain),
                                     multirun=multirun)
    except OSError as exc:  # a full disk, a read-only or vanished job folder
        return _fail(plain, job_dir, write_error(job_dir, exc), multirun)
    headline = (rep.get("headline") or {}).get("metric")
    if multirun and headline:  # the sweep's end reads these columns back, in this process
        written.remember(job_dir / rp.PER_QUESTION, result.rows, [str(headline)])
    _print_summary(rep, job_dir, multirun)
    if spec.tracking.enabled:
        failed = log_finished(spec.tracking.uri, spec.tracking.experiment, rep, plain, paths,
                              job_dir, multirun, name=run_name(plain), parent=parent_for_log(),
                              not_logged=SESSION.not_logged)
        if failed is not None:
            return _exit_or_nan(str(failed), multirun, failed)
    if gen_error is not None:
        return _exit_or_nan(rep["error"], multirun, gen_error)
    return float(rep["headline"]["value"])


def _resume(job: JobSpec, job_dir: Path, multirun: bool) -> float | None:
    """In a sweep, skip a configuration the store already has as FINISHED (same config_hash);
    a single run runs again: `sweep.outputs.job_run.resume_finished`."""
    view = open_corpus_view(job)
    chash = config_hash(job.plain, view.fingerprint, view.golden.fingerprint)
    uri, experiment = job.tracking.uri, job.tracking.experiment
    rep = resume_finished(uri, experiment, chash, job_dir, force=job.force,
                          stale_closed=(uri, experiment) in SESSION.stale_closed,
                          parent=sweep_parent, multirun=multirun)
    return None if rep is None else float(rep["headline"]["value"])


def _fail(plain: dict[str, Any], job_dir: Path, exc: BaseException, multirun: bool) -> float:
    message = error_line(exc)
    log_failed(plain, job_dir, message, dict(SESSION.choices), multirun, name_of=run_name,
               parent=sweep_parent)
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
    line = job_line(rep)
    if multirun:
        log.info("%s", line)
    else:
        print(line)
        print(f"report: {job_dir / rp.REPORT}")
