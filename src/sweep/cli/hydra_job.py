"""The Hydra side: the job function and the sweep callback. Thin by design.

The job turns the composed config into the typed `Config`, checks it, builds its `JobSpec`
(`config.specs.build_job_spec`), runs `pipeline.run_config` on that, writes the report into the job folder, then logs it to MLflow. Bad input never raises out of here as a
traceback: a single run prints one line and exits 1; inside a multirun the failing job is
recorded (report + FAILED child run) and the sweep goes on, then exits 1 at the end.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sweep.cli.prewarm import check_every_job, prewarm_sweep
from sweep.common import paths
from sweep.common.errors import SweepError
from sweep.common.paths import PROJECT_ROOT
from sweep.config.checks import check_config
from sweep.config.compose import config_error_line, to_container
from sweep.config.identity import config_hash
from sweep.config.schema import Config
from sweep.config.specs import JobSpec, build_job_spec
from sweep.decide.decision import audit_power, finished_sweep, plot_data
from sweep.outputs import quant, tracking, tracking_worker
from sweep.outputs import report as rp
from sweep.outputs.audit_report import write_audit
from sweep.outputs.misses_html import write_views
from sweep.pipeline import shared
from sweep.pipeline.audit import run_audit
from sweep.pipeline.memo import load_corpus_cached, load_golden_cached
from sweep.pipeline.run import run_config, run_generation_for

log = logging.getLogger("sweep")


def run_name(plain: dict[str, Any]) -> str:
    c, e = plain.get("chunk", {}), plain.get("embedding", {})
    parts = [str(c.get("boundary")), str(c.get("size")), f"ov{c.get('overlap')}",
             str(c.get("header")), str(e.get("name"))]
    pair = (str(e.get("backend", "torch")), str(e.get("precision", "fp32")))
    if pair != ("torch", "fp32"):  # two precisions of one configuration: two names
        parts.extend(pair)
    method = plain.get("retrieval", {}).get("method")
    if method and method != "dense":
        parts.append(str(method))
    return "-".join(parts)


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
    multirun = hc.mode == RunMode.MULTIRUN
    job_dir = Path(hc.runtime.output_dir)
    _CHOICES.clear()
    _CHOICES.update(group_choices(hc.runtime.choices))
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
        result = run_config(spec)
    except (SweepError, OmegaConfBaseException) as exc:
        return _fail(plain, job_dir, exc, multirun)

    rep = result.report
    shared.add_to_report(rep, work)
    rep["choices"] = dict(_CHOICES)
    gen_error: SweepError | None = None
    try:
        # Retrieval results are on disk before generation starts: a crash there loses nothing.
        paths = [rp.write_report(job_dir, rep), rp.write_per_question(job_dir, result.rows),
                 rp.write_config(job_dir, plain)]
        paths += write_views(job_dir, result.views, run_name(plain),
                             {k: v for k, v in rep["metrics"].items() if k.startswith("n_miss")})
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


# The config group options this job was composed from (``embedding: served_minilm``), for the
# sweep's table: sweeping a group is one axis, not one per key its options set differently.
_CHOICES: dict[str, str] = {}


def group_choices(choices: Any) -> dict[str, str]:
    """Hydra's runtime choices without Hydra's own groups (launcher, sweeper, logging)."""
    return {str(k): str(v) for k, v in dict(choices or {}).items()
            if v is not None and not str(k).startswith("hydra")}


# Messages of the queued child runs that could not be logged, for the sweep's end (their
# reports say it too, unless the report could not be written either).
_NOT_LOGGED: list[str] = []


def _not_logged(job_dir: Path, rep: dict[str, Any], name: str) -> tracking_worker.OnError:
    """What a queued child run's failure does, whenever it is reported: one line naming the
    configuration, ``tracking_error`` in its report.json, exit 1 at the sweep's end."""

    def record(exc: SweepError) -> None:
        _NOT_LOGGED.append(f"{name} ({job_dir}): {exc}")
        log.error("configuration %s (%s) was not logged to MLflow: %s", name, job_dir, exc)
        rep["tracking_error"] = str(exc)
        try:
            rp.write_report(job_dir, rep)
        except OSError as write_exc:
            log.error("%s", write_error(job_dir, write_exc))

    return record


# (tracking uri, experiment) whose configuration runs left RUNNING by a killed process were
# closed when this sweep started: its jobs need not ask the store again, each before it runs.
_STALE_CLOSED: set[tuple[str, str]] = set()


def _resume(job: JobSpec, job_dir: Path) -> float | None:
    """Skip a configuration the store already has as FINISHED (same config_hash): an
    interrupted sweep re-run with the same overrides loses nothing and repeats nothing.

    A run of this configuration left RUNNING by a killed process is closed KILLED first (and
    tagged), so that the store never holds FINISHED and RUNNING for one configuration."""
    _, corpus_fp = load_corpus_cached(job.corpus, job.cache)
    golden_fp = load_golden_cached(job.golden).fingerprint
    chash = config_hash(job.plain, corpus_fp, golden_fp)
    uri, experiment = job.tracking.uri, job.tracking.experiment
    if (uri, experiment) in _STALE_CLOSED:
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
        rep = json.loads(path.read_text(encoding="utf-8"))
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


def write_error(folder: Path | None, exc: OSError) -> SweepError:
    """One line for a folder that cannot be written (``folder``: the job folder, whose
    temporary file names would only confuse; else the path the error names)."""
    where = folder if folder is not None else (exc.filename or "the output folder")
    return SweepError(f"cannot write {where}: {exc.strerror or exc}",
                      hint="free space on that filesystem, or set hydra.sweep.dir / "
                      "hydra.run.dir elsewhere")


def _fail(plain: dict[str, Any], job_dir: Path, exc: BaseException, multirun: bool) -> float:
    message = _error_line(exc)
    rep = {"status": "FAILED", "error": message, "config": plain, "choices": dict(_CHOICES)}
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


def ui_command(uri: str) -> str | None:
    """The command that serves the UI of the store ``uri`` on the port `ui_link` names: `make
    ui` only in the clone, for the store it serves (the clone's ./mlflow.db); in a user's
    project (no Makefile there) `sweep ui`, with ``--tracking-uri`` unless the store is the
    one it opens by default (./mlflow.db); an http(s) store is its own UI (None)."""
    import shlex

    path = tracking.sqlite_path(uri)
    if path is None:
        return None
    here = Path(path).resolve()
    if (paths.in_clone() and PROJECT_ROOT == paths.CLONE_ROOT
            and here == (PROJECT_ROOT / "mlflow.db").resolve()):
        return "make ui"
    command = "python -m sweep.cli ui" if paths.in_clone() else "sweep ui"
    if here == (Path.cwd() / "mlflow.db").resolve() and not paths.in_clone():
        return command
    return f"{command} --tracking-uri {shlex.quote(uri)}"


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


def set_audit(job: JobSpec, folder: Path, power: dict[str, Any]) -> list[Path]:
    """The golden set's audit (audit.json, audit.html) in ``folder``, when ``sweep.audit``,
    with its power line ``power`` (`decision.audit_power`). It changes no result, so a
    failure is a warning and the run keeps its reports."""
    if not job.audit:
        return []
    try:
        report = run_audit(job.corpus, job.golden, job.cache)
        report["set"]["power"] = power
        return write_audit(folder, report)
    except (SweepError, OSError) as exc:
        log.warning("the golden set's audit was not written: %s", exc)
        return []


def sweep_job(config: DictConfig) -> JobSpec | None:
    """The job spec of a multirun's callback config (its ``config`` holds ``hydra`` too); None
    with a warning when it does not convert."""
    try:
        plain = OmegaConf.masked_copy(config, [k for k in config if k != "hydra"])
        merged = OmegaConf.merge(OmegaConf.structured(Config), plain)
        return build_job_spec(OmegaConf.to_object(merged))  # type: ignore[arg-type]
    except OmegaConfBaseException as exc:
        log.warning("the golden set's audit was not written: %s", config_error_line(exc))
        return None
    except SweepError as exc:  # a cache target that does not validate
        log.warning("the golden set's audit was not written: %s", exc)
        return None


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


def _check_output_dir(path: str) -> None:
    """Hydra creates the job folder itself and would die with a traceback; say it in a line."""
    target = Path(path).absolute()
    existing = next((p for p in [target, *target.parents] if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK):
        print(f"error: cannot create the output folder {target}: {existing} is not a writable "
              "folder (set hydra.run.dir / hydra.sweep.dir elsewhere)", file=sys.stderr)
        sys.exit(1)


# (tracking uri, parent run id) of the sweep in progress, for closing it KILLED on Ctrl-C.
ACTIVE_PARENT: tuple[str, str] | None = None
# The sweep's parent run while the worker creates it: the callback that asked for it, the
# store, the promise of (experiment_id, run_id), and of the stale configuration runs closed.
_STARTING: tuple[MlflowSweepCallback, str, tracking_worker.Promise,
                 tracking_worker.Promise] | None = None


def sweep_parent(*, exit_on_error: bool = True) -> str | None:
    """The id of the running sweep's parent run (None outside a sweep). The worker creates it
    while the first job runs, and the first ask waits for it: when the first job's run is
    logged, or at a Ctrl-C. A store that could not create it ends the sweep with its one line,
    as it did when the sweep started."""
    global _STARTING, ACTIVE_PARENT
    if _STARTING is not None:
        callback, uri, parent, stale = _STARTING
        try:  # (a Ctrl-C while this waits leaves it for `close_interrupted` to ask again)
            callback.experiment_id, callback.parent = parent.result()
        except SweepError as exc:
            _STARTING = None
            if not exit_on_error:
                return None
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        _STARTING = None
        os.environ[tracking.PARENT_ENV] = callback.parent
        ACTIVE_PARENT = (uri, callback.parent)
        try:
            closed = stale.result()
        except SweepError as exc:
            log.warning("%s", exc)
        else:
            if closed:
                log.warning("closed %d configuration run(s) left RUNNING by a process that "
                            "ended (%s): KILLED, tagged %s", len(closed), ", ".join(closed),
                            tracking.STALE_TAG)
    return os.environ.get(tracking.PARENT_ENV)


def close_interrupted() -> str:
    """Close the running sweep's parent run as KILLED (finished child runs stay as they are);
    returns what to tell the user."""
    global ACTIVE_PARENT
    sweep_parent(exit_on_error=False)
    if ACTIVE_PARENT is None:
        return "interrupted"
    uri, parent = ACTIVE_PARENT
    ACTIVE_PARENT = None
    try:
        tracking_worker.call(tracking.set_tags, uri, parent, {"interrupted": "true"})
        tracking_worker.call(tracking.kill_run, uri, parent)
    except SweepError as exc:
        return f"interrupted (and could not close parent run {parent}: {exc})"
    return (f"interrupted: parent run {parent} closed KILLED; the configurations that finished "
            "are kept, and the same command resumes the rest")


_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES,
                 errno.EPERM}


def close_failed(exc: OSError) -> str:
    """Hydra could not write the sweep or a job folder (``multirun.yaml``, ``.hydra/``, a job
    folder) and the sweep ends there: the parent run closed FAILED with the reason; returns
    the line to print."""
    global ACTIVE_PARENT
    if exc.errno in _WRITE_ERRNOS:
        reason = str(write_error(None, exc))
    else:  # e.g. a file a job could not read: say what the system said, not "cannot write"
        reason = f"{exc.filename or 'a file'}: {exc.strerror or exc}"
    sweep_parent(exit_on_error=False)
    if ACTIVE_PARENT is None:
        return f"error: {reason}"
    uri, parent = ACTIVE_PARENT
    ACTIVE_PARENT = None
    try:
        tracking_worker.call(tracking.set_tags, uri, parent, {"error": reason})
        tracking_worker.call(tracking.kill_run, uri, parent, status="FAILED")
    except SweepError as tracking_exc:
        return f"error: {reason} (and could not close parent run {parent}: {tracking_exc})"
    return (f"error: {reason}; the sweep stopped, parent run {parent} closed FAILED (the "
            "configurations that finished are kept; the same command resumes the rest)")


def _decide(axes: list[str], rows: list[dict[str, Any]], found: list[tuple[Path, dict[str, Any]]],
            uri: str | None) -> dict[str, Any] | None:
    """The corrected verdicts (set on ``rows``), the power line and each axis's effect, from
    the jobs' per_question.csv. A resumed job's file comes from its run in MLflow. Never ends
    the sweep: what cannot be computed is said in one line."""
    by_folder = {str(folder): rep for folder, rep in found}
    if uri is not None:
        for folder, rep in found:
            run_id = rep.get("resumed_from_run")
            if run_id and not (folder / rp.PER_QUESTION).is_file():
                with contextlib.suppress(SweepError, OSError):
                    tracking_worker.call(tracking.download_artifact, uri, run_id,
                                         rp.PER_QUESTION, folder)
    try:
        return finished_sweep(axes, rows, by_folder)
    except (SweepError, OSError, ValueError) as exc:
        log.warning("the sweep's statistics (verdicts, power, axes) were not computed: %s", exc)
        return None


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
        # Sent, not waited for: the worker may still be importing MLflow, and nothing needs
        # the parent before the first job's run is logged (`sweep_parent`).
        parent = tracking_worker.begin(
            tracking.start_parent, self.uri, experiment,
            run_name=f"sweep {Path(sweep_dir).parent.name} {Path(sweep_dir).name}",
            params={"overrides": " ".join(overrides)[:6000]},
            tags={"sweep_dir": str(Path(sweep_dir).resolve())},
        )
        # Sweeps of this experiment killed before their end (SIGKILL), and their configuration
        # runs: all at once here, instead of one configuration per job (a job of another
        # experiment, e.g. of a swept corpus.name, still asks for its own).
        tracking_worker.submit(tracking.close_stale, self.uri, experiment, "sweep",
                               on_error=lambda exc: log.warning("%s", exc))
        stale = tracking_worker.begin(tracking.close_stale, self.uri, experiment, "config")
        _STALE_CLOSED.add((self.uri, experiment))
        _NOT_LOGGED.clear()
        global _STARTING
        _STARTING = (self, self.uri, parent, stale)
        launcher = str(config.hydra.launcher.get("_target_", ""))
        # Jobs in other processes read the parent's id from the environment at launch; without
        # the worker, the parent exists already (and a store that failed says so now).
        if not launcher.endswith(".BasicLauncher") or tracking_worker.worker_pid() is None:
            sweep_parent()

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global ACTIVE_PARENT
        # The queued child runs first: their failures are in the reports read below (a Ctrl-C
        # while this waits still closes the parent KILLED).
        sweep_parent()
        tracking_worker.drain()
        ACTIVE_PARENT = None
        sweep_dir = Path(str(config.hydra.sweep.dir))
        found = rp.read_reports(sweep_dir)
        # Configurations run off torch fp32 beside the same one at it: the quantisation tax.
        quant.add_to_reports(found)
        reports = [r for _, r in found]
        # (a launcher's job process logs its own run and writes the error to the report)
        not_logged = list(_NOT_LOGGED) or [f"{run_name(r.get('config') or {})}: "
                                           f"{r['tracking_error']}"
                                           for r in reports if r.get("tracking_error")]
        axes, rows = rp.comparison_rows(reports, folders=[f for f, _ in found])
        decision = _decide(axes, rows, found, self.uri)
        artifacts = rp.write_comparison(sweep_dir, axes, rows)
        # Audited when some configuration finished: their golden set and corpus loaded.
        if (any(r["status"] == "FINISHED" for r in rows)
                and OmegaConf.select(config, "sweep.audit", default=True)):
            job = sweep_job(config)
            if job is not None:
                pw = decision["power"] if decision is not None else None
                artifacts += set_audit(job, sweep_dir, audit_power(
                    pw, decision["metric"] if decision is not None else None, self.parent,
                    "fewer than two configurations finished with per-question scores"))
        # Drawn by the MLflow worker where there is one (it imported matplotlib while the jobs
        # ran), while this process prints the table; else here, as `call` runs it then.
        drawings = [tracking_worker.begin(tracking.plot_sweep, axes, rows,
                                          sweep_dir / "comparison.png")]
        if decision is not None:
            drawings.append(tracking_worker.begin(
                tracking.plot_axes, plot_data(decision, decision["rows"], decision["metric"]),
                sweep_dir / "axes.png"))
        rp.print_comparison(axes, rows)
        best_report = max((r for r in reports if r.get("status") == "FINISHED"
                           and isinstance((r.get("headline") or {}).get("value"), int | float)),
                          key=lambda r: r["headline"]["value"], default=None)
        needs = need_line(best_report) if best_report is not None else None
        if needs:
            print(f"best configuration, {needs}")
        for line in decision["lines"] if decision is not None else ():
            print(line)
        for drawing in drawings:
            drawn = drawing.result()
            if drawn[0] == "oserror":
                raise OSError(*drawn[1:])
            if drawn[1] is not None:
                artifacts.append(drawn[1])
        served = rp.served_totals(reports)
        if rp.served_line(served):
            print(rp.served_line(served))
        encoded = shared.totals(reports, shared.finish(sweep_dir))
        if shared.totals_line(encoded):
            print(shared.totals_line(encoded))
        failed = [r for r in rows if r["status"] != "FINISHED"]
        if not rows:
            # e.g. remote workers that resolved a relative hydra.sweep.dir in their own cwd
            failed = [{"error": f"no job report under {sweep_dir} (the jobs wrote elsewhere or "
                       "never ran; use an absolute hydra.sweep.dir on a shared filesystem)"}]
        if self.parent and self.uri:
            best = next((r for r in rows if r["status"] == "FINISHED"), None)
            metrics = {"n_configs": len(rows), "n_failed": len(failed) if rows else 0}
            if best is not None and isinstance(best["headline"], int | float):
                metrics[f"best_{best['headline_metric']}"] = best["headline"]
            metrics.update({f"total_{k}": v for k, v in served.items()})
            if encoded["per_node"]:
                metrics["total_texts_encoded"] = encoded["total"]
            if encoded["unique"] is not None:
                metrics["unique_texts"] = encoded["unique"]
            power_tags: dict[str, str] = {}
            pw = decision["power"] if decision is not None else None
            if pw is not None and pw["mde"] is not None:
                metrics["power_mde"] = pw["mde"]
                metrics["power_n_questions"] = pw["n"]
                if pw["n_needed"] is not None:
                    metrics["power_n_needed"] = pw["n_needed"]
                    metrics["power_detect"] = pw["detect"]
            if pw is not None:
                power_tags["power"] = pw["line"][:5000]
            if decision is not None:
                power_tags["correction"] = decision["correction"]
                metrics["n_worse"] = sum(1 for v in decision["verdicts"]
                                         if v is not None and not v.tied)
            # The parent's description in the UI: the table, so the sweep reads there
            # without choosing columns by hand.
            headline = next((r["headline_metric"] for r in rows if r.get("headline_metric")),
                            "headline")
            note = (f"**chunk-sweep**: {len(rows)} configurations, best {headline} first "
                    f"(headline = {headline}); sweep folder `{sweep_dir.resolve()}`\n\n")
            if decision is not None:  # what the set can decide, before the table
                head = decision["lines"][: len(decision["lines"]) - len(decision["axis_lines"])]
                effects = [f"  - {e['text']}" for e in decision["axes"]]
                said = [f"- {line}" for line in head]
                if effects:
                    said += [f"- {decision['axis_lines'][0]}", *effects]
                note += "\n".join(said)[:3000] + "\n\n"
            note += rp.comparison_markdown(axes, rows, max_chars=7000 - len(note))
            try:
                tracking_worker.call(
                    tracking.finish_parent, self.uri, self.parent,
                    status="FAILED" if failed else "FINISHED", metrics=metrics,
                    tags={"best_config": ", ".join(f"{a}={best[a]}" for a in axes) if best
                          else "", tracking.NOTE_TAG: note, **power_tags},
                    artifacts=artifacts)
            except SweepError as exc:
                print(f"error: {exc}", file=sys.stderr)
                sys.exit(1)
            finally:
                os.environ.pop(tracking.PARENT_ENV, None)
            link = tracking.ui_link(self.uri, self.experiment_id or "0")
            if link:
                how = ui_command(self.uri)
                print(f"MLflow runs of this sweep: {link}" + (f" (after `{how}`)" if how else ""))
        if not rows:
            print(f"error: {failed[0]['error']}", file=sys.stderr)
            sys.exit(1)
        if failed:
            print(f"error: {len(failed)} of {len(rows)} configurations failed; first: "
                  f"{failed[0].get('error')}", file=sys.stderr)
            sys.exit(1)
        if not_logged:
            print(f"error: {len(not_logged)} of {len(rows)} configurations were not logged to "
                  f"MLflow (their reports are in the sweep folder); first: {not_logged[0]}",
                  file=sys.stderr)
            sys.exit(1)

