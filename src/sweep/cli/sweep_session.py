"""What the Hydra job and the sweep callback share within one process: the sweep's parent
run (created by the MLflow worker while the first job runs), the configuration runs that
could not be logged, the stores whose stale runs were closed, and this job's config group
choices. One `SweepSession` (``SESSION``) holds them; `sweep.cli.hydra_main` closes the
parent through it on a Ctrl-C or a folder that cannot be written."""

from __future__ import annotations

import errno
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from sweep.application.sweep import stopped_note
from sweep.common.errors import SweepError
from sweep.config.naming import command_line_keys, config_name
from sweep.outputs import tracking, tracking_worker
from sweep.outputs.job_run import write_error

log = logging.getLogger("sweep")


@dataclass
class Starting:
    """The sweep's parent run while the worker creates it: the callback that asked for it,
    the store, the promise of (experiment_id, run_id), and of the stale configuration runs
    closed."""

    callback: Any
    uri: str
    parent: tracking_worker.Promise
    stale: tracking_worker.Promise


@dataclass
class SweepSession:
    # The config group options this job was composed from (``embedding: served_minilm``), for
    # the sweep's table: sweeping a group is one axis, not one per key its options set.
    choices: dict[str, str] = field(default_factory=dict)
    # Messages of the queued child runs that could not be logged, for the sweep's end (their
    # reports say it too, unless the report could not be written either).
    not_logged: list[str] = field(default_factory=list)
    # (tracking uri, experiment) whose configuration runs left RUNNING by a killed process
    # were closed when this sweep started: its jobs need not ask the store again.
    stale_closed: set[tuple[str, str]] = field(default_factory=set)
    # (tracking uri, parent run id) of the sweep in progress, for closing it on Ctrl-C.
    active_parent: tuple[str, str] | None = None
    starting: Starting | None = None


SESSION = SweepSession()


def run_name(plain: dict[str, Any]) -> str:
    """The MLflow run's name: `config_name`, naming the settings this job's command line set
    (a sweep's axes among them)."""
    from hydra.core.hydra_config import HydraConfig

    try:
        overrides = list(HydraConfig.get().overrides.task)
    except ValueError:  # no Hydra run in progress (a report read back after the sweep)
        overrides = []
    return config_name(plain, command_line_keys(overrides))


def sweep_parent(*, exit_on_error: bool = True) -> str | None:
    """The id of the running sweep's parent run (None outside a sweep). The worker creates it
    while the first job runs, and the first ask waits for it: at a Ctrl-C, at the sweep's end,
    or when a job's run is logged once the worker has answered (`parent_for_log`). A store
    that could not create it ends the sweep with its one line, as it did when the sweep
    started."""
    s = SESSION
    if s.starting is not None:
        starting = s.starting
        callback = starting.callback
        try:  # (a Ctrl-C while this waits leaves it for `close_interrupted` to ask again)
            callback.experiment_id, callback.parent = starting.parent.result()
        except SweepError as exc:
            s.starting = None
            if not exit_on_error:
                return None
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        s.starting = None
        os.environ[tracking.PARENT_ENV] = callback.parent
        s.active_parent = (starting.uri, callback.parent)
        try:
            closed = starting.stale.result()
        except SweepError as exc:
            log.warning("%s", exc)
        else:
            if closed:
                log.warning("closed %d configuration run(s) left RUNNING by a process that "
                            "ended (%s): KILLED, tagged %s", len(closed), ", ".join(closed),
                            tracking.STALE_TAG)
    return os.environ.get(tracking.PARENT_ENV)


def parent_for_log() -> str | tracking_worker.Later | None:
    """The parent run for a job's run queued to the worker: its id once the worker has
    created it, else a `Later` the worker fills in (it creates the parent first: calls run in
    order). The first job no longer waits for the worker's MLflow import and the parent run
    (up to ~2 s of a warm sweep); a store that failed says so at the next job's log, or at the
    sweep's end."""
    starting = SESSION.starting
    if starting is not None and not starting.parent.ready():
        return starting.parent.later(1)  # (experiment_id, run_id)
    return sweep_parent()


def close_interrupted() -> str:
    """Close the running sweep's parent run as KILLED (finished child runs stay as they are);
    returns what to tell the user."""
    sweep_parent(exit_on_error=False)
    if SESSION.active_parent is None:
        return "interrupted"
    uri, parent = SESSION.active_parent
    SESSION.active_parent = None
    try:
        tracking_worker.call(tracking.set_tags, uri, parent, {"interrupted": "true"})
        tracking_worker.call(tracking.kill_run, uri, parent)
        settled = tracking_worker.call(tracking.settle_unfinished, uri, parent)
    except SweepError as exc:
        return f"interrupted (and could not close parent run {parent}: {exc})"
    return f"interrupted: {stopped_note(settled, parent, 'KILLED')}"


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES,
                 errno.EPERM}


def close_failed(exc: OSError) -> str:
    """Hydra could not write the sweep or a job folder (``multirun.yaml``, ``.hydra/``, a job
    folder) and the sweep ends there: the parent run closed FAILED with the reason; returns
    the line to print."""
    if exc.errno in _WRITE_ERRNOS:
        reason = str(write_error(None, exc))
    else:  # e.g. a file a job could not read: say what the system said, not "cannot write"
        reason = f"{exc.filename or 'a file'}: {exc.strerror or exc}"
    sweep_parent(exit_on_error=False)
    if SESSION.active_parent is None:
        return f"error: {reason}"
    uri, parent = SESSION.active_parent
    SESSION.active_parent = None
    try:
        tracking_worker.call(tracking.set_tags, uri, parent, {"error": reason})
        tracking_worker.call(tracking.kill_run, uri, parent, status="FAILED")
        settled = tracking_worker.call(tracking.settle_unfinished, uri, parent)
    except SweepError as tracking_exc:
        return f"error: {reason} (and could not close parent run {parent}: {tracking_exc})"
    return f"error: {reason}; the sweep stopped: {stopped_note(settled, parent, 'FAILED')}"
