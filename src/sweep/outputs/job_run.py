"""A configuration's MLflow run, as the Hydra job (`sweep.cli.hydra_job`) keeps it: a run the
store already has FINISHED is resumed instead of run again (`resume_finished`), a finished
job's run is logged (`log_finished`; queued inside a sweep) and a job that stopped is logged
FAILED (`log_failed`). Every MLflow call goes through `tracking_worker`; the run's name, the sweep's
parent run and what the sweep already closed are handed in by the job."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.files import read_text_regular
from sweep.outputs import report as rp
from sweep.outputs import tracking, tracking_worker

log = logging.getLogger("sweep")


def resume_finished(uri: str, experiment: str, chash: str, job_dir: Path, *, force: bool,
                    stale_closed: bool, parent: Callable[[], str | None], multirun: bool
                    ) -> dict[str, Any] | None:
    """In a sweep (``multirun``), the report of the FINISHED run of this configuration
    (``chash``) in the store, written into ``job_dir``: an interrupted sweep re-run with the
    same overrides loses nothing and repeats nothing. None when there is none, when ``force``,
    or when its report cannot be read. A single run (no ``-m``) names the one configuration it
    wants run (the tutorial's "run the winner again"): None, and the log says which earlier
    run it repeats.

    A run of this configuration left RUNNING by a killed process is closed KILLED first (and
    tagged), so that the store never holds FINISHED and RUNNING for one configuration; not
    asked again when the sweep closed its experiment's stale runs at its start
    (``stale_closed``). ``parent``: the sweep's parent run, tagged with the resumed run."""
    stale = ([] if stale_closed else
             tracking_worker.call(tracking.close_stale, uri, experiment, "config", chash))
    if stale:
        log.warning("closed %d run(s) of this configuration left RUNNING by a process that "
                    "ended (%s): KILLED, tagged %s", len(stale), ", ".join(stale),
                    tracking.STALE_TAG)
    if force:
        return None
    run_id = tracking_worker.call(tracking.find_finished, uri, experiment, chash)
    if run_id is None:
        return None
    if not multirun:
        log.info("this configuration (config_hash %s) already FINISHED as run %s; running it "
                 "again, as a single run always does (a sweep, -m, would reuse that run)",
                 chash, run_id)
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
    sweep_run = parent()
    if sweep_run:  # so that `sweep compare` on this sweep still sees every configuration
        tracking_worker.call(tracking.tag_run, uri, sweep_run, f"resumed.{chash}", run_id)
    log.info("skipped: this configuration (config_hash %s) is already FINISHED as run %s; "
             "sweep.force=true re-runs it", chash, run_id)
    return rep


def log_finished(uri: str, experiment: str, rep: dict[str, Any], plain: dict[str, Any],
                 artifacts: list[Path], job_dir: Path, multirun: bool, *, name: str,
                 parent: str | tracking_worker.Later | None, not_logged: list[str]
                 ) -> SweepError | None:
    """Log the finished job's run: queued inside a sweep (the next job starts while the worker
    logs this one; a failure is reported at the next MLflow call or at the sweep's end, which
    exits 1, and added to ``not_logged``), at once for a single run, whose failure is
    returned after its report says it."""
    run = {"run_name": name, "plain_config": plain, "report": rep, "artifacts": artifacts,
           "artifact_dirs": {"hydra": job_dir / ".hydra"}, "parent_run_id": parent,
           "status": rep["status"], "error": rep.get("error")}
    if multirun:
        tracking_worker.submit(tracking.log_job, uri, experiment, **run,
                               on_error=_not_logged(job_dir, rep, name, not_logged))
        return None
    try:
        tracking_worker.call(tracking.log_job, uri, experiment, **run)
    except SweepError as exc:
        rep["tracking_error"] = str(exc)
        rp.write_report(job_dir, rep)
        return exc
    return None


def _not_logged(job_dir: Path, rep: dict[str, Any], name: str,
               collected: list[str]) -> tracking_worker.OnError:
    """What a queued configuration run's failure does, whenever it is reported: one line
    naming the configuration (also added to ``collected``, for the sweep's end, which exits
    1), and ``tracking_error`` in its report.json."""

    def record(exc: SweepError) -> None:
        collected.append(f"{name} ({job_dir}): {exc}")
        log.error("configuration %s (%s) was not logged to MLflow: %s", name, job_dir, exc)
        rep["tracking_error"] = str(exc)
        try:
            rp.write_report(job_dir, rep)
        except OSError as write_exc:
            log.error("%s", write_error(job_dir, write_exc))

    return record


def log_failed(plain: dict[str, Any], job_dir: Path, message: str, choices: dict[str, str],
               multirun: bool, *, name_of: Callable[[dict[str, Any]], str],
               parent: Callable[[], str | None]) -> None:
    """A job that stopped with ``message``: its report.json (when the folder can be written)
    and, when tracking is on, its FAILED run (queued inside a sweep)."""
    rep = {"status": "FAILED", "error": message, "config": plain, "choices": choices}
    # When the folder is what failed, the FAILED run in MLflow carries the reason.
    with contextlib.suppress(OSError):
        rp.write_report(job_dir, rep)
    if not (plain and plain.get("tracking", {}).get("enabled")):
        return

    def tracking_failed(tracking_exc: SweepError) -> None:
        if str(tracking_exc) != message:  # the store itself may be what failed
            log.error("%s", tracking_exc)

    store = (plain["tracking"]["uri"], plain["tracking"]["experiment"])
    run = {"run_name": name_of(plain), "plain_config": plain, "report": rep,
           "artifacts": [job_dir / rp.REPORT],
           "parent_run_id": parent(), "status": "FAILED",
           "error": message}
    if multirun:
        tracking_worker.submit(tracking.log_job, *store, **run, on_error=tracking_failed)
    else:
        try:
            tracking_worker.call(tracking.log_job, *store, **run)
        except SweepError as tracking_exc:
            tracking_failed(tracking_exc)


def write_error(folder: Path | None, exc: OSError) -> SweepError:
    """One line for a folder that cannot be written (``folder``: the job folder, whose
    temporary file names would only confuse; else the path the error names)."""
    where = folder if folder is not None else (exc.filename or "the output folder")
    return SweepError(f"cannot write {where}: {exc.strerror or exc}",
                      hint="free space on that filesystem, or set hydra.sweep.dir / "
                      "hydra.run.dir elsewhere")


def fetch_resumed(found: list[tuple[Path, dict[str, Any]]], uri: str | None) -> None:
    """A resumed job's per_question.csv comes from its run in MLflow."""
    if uri is None:
        return
    for folder, rep in found:
        run_id = rep.get("resumed_from_run")
        if run_id and not (folder / rp.PER_QUESTION).is_file():
            with contextlib.suppress(SweepError, OSError):
                tracking_worker.call(tracking.download_artifact, uri, run_id,
                                     rp.PER_QUESTION, folder)
