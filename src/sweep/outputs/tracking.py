"""MLflow, and only here: experiments, the parent run of a sweep, one child run per config.

The client API (not the fluent ``mlflow.start_run`` stack) is used throughout: a sweep in one
process creates and closes many runs, and explicit run ids cannot leak from one job into the
next.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sweep.common import paths
from sweep.common.errors import SweepError
from sweep.common.mapping import flatten
from sweep.common.net import connect_error
from sweep.common.paths import PROJECT_ROOT, resolve_user_path
from sweep.common.secret import is_secret_key, scrub_urls, url_has_userinfo

log = logging.getLogger(__name__)

PARENT_ENV = "CHUNK_SWEEP_PARENT_RUN_ID"
# A run left RUNNING by a process that is gone (SIGKILL while it was logged), closed KILLED on
# resume; `sweep compare` and the other readers leave such runs out.
STALE_TAG = "chunk_sweep.stale"
_MAX_PARAM = 6000
# How long one statement on a SQLite store waits for another writer (`tracking.store_wait_s`;
# SQLite's own default, 5 s, fails while a second sweep logs its artifacts).
STORE_WAIT_S = 60.0


def set_store_wait(seconds: float) -> None:
    global STORE_WAIT_S
    STORE_WAIT_S = max(0.0, float(seconds))


def preload() -> None:
    """Import MLflow and its SQLAlchemy store (about 3 s of CPU, most of what the first call of
    a process costs); `tracking_worker` calls it at once, on the other core."""
    _quiet()
    import mlflow
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


def preload_plot() -> None:
    """Import matplotlib (~0.7 s) for the sweep's closing plot (`plot_sweep`); the worker does
    it the first time it has waited a while for a call (the parent run is begun by then)."""
    from sweep.outputs.report import pyplot

    pyplot()


def plot_sweep(axes: Sequence[str], rows: Sequence[dict[str, Any]], path: Path
               ) -> tuple[Any, ...]:
    """`report.plot_sweep` where the worker runs it: matplotlib was imported there while the
    jobs ran, so the sweep's own process neither imports it nor waits for it. An OSError (a
    full disk) comes back as data, ``("oserror", errno, strerror, filename)``, for the sweep to
    raise as the same OSError; else ``("ok", path or None)``."""
    from sweep.outputs.report import plot_sweep as plot

    try:
        return ("ok", plot(axes, rows, path))
    except OSError as exc:
        return ("oserror", exc.errno, exc.strerror,
                None if exc.filename is None else str(exc.filename))


def plot_axes(data: Mapping[str, Any], path: Path) -> tuple[Any, ...]:
    """`report.plot_axes` where the worker runs it (as `plot_sweep`: matplotlib is imported
    there already); the same ``("ok", path or None)`` / ``("oserror", ...)`` reply."""
    from sweep.outputs.report import plot_axes as plot

    try:
        return ("ok", plot(data, path))
    except OSError as exc:
        return ("oserror", exc.errno, exc.strerror,
                None if exc.filename is None else str(exc.filename))


def _quiet() -> None:
    for name in ("alembic", "mlflow.tracking", "mlflow.store"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # It logs every database error with its traceback before raising it; the error reaches
    # the user as one line (`_guard`, `client_for`).
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


def sqlite_path(uri: str) -> Path | None:
    if not uri.startswith("sqlite:///"):
        return None
    return Path(uri[len("sqlite:///") :])


def _client_uri(uri: str) -> str:
    """The URI MLflow opens: a SQLite store with a busy timeout, so that a statement waits
    (SQLite retries the lock) up to `STORE_WAIT_S` for another writer instead of 5 s."""
    if sqlite_path(uri) is None or "?" in uri:
        return uri
    return f"{uri}?timeout={STORE_WAIT_S:g}"


def _locked(exc: BaseException) -> bool:
    return "database is locked" in str(exc)


def _locked_error(uri: str) -> SweepError:
    return SweepError(f"tracking.uri={uri}: the MLflow store {sqlite_path(uri) or uri} is held by "
                      f"another writer (waited {STORE_WAIT_S:g} s)",
                      hint="let the other process finish, or raise tracking.store_wait_s")


def check_reachable(uri: str, timeout: float = 5.0) -> None:
    """Fail in seconds, not minutes, when an http(s) tracking server is not listening
    (MLflow's own client retries with back-off for several minutes)."""
    reason = connect_error(uri, timeout)
    if reason is not None:
        raise SweepError(f"tracking.uri={uri}: cannot reach the MLflow server ({reason})",
                         hint="start the server, fix the URI, or set tracking.enabled=false; "
                         "reports are still written to the job folder")


def preflight(uri: str) -> None:
    """Everything about the store that can be checked before a job spends time."""
    check_reachable(uri)
    db = sqlite_path(uri)
    if db is not None:
        if not db.is_absolute():
            raise SweepError(f"tracking.uri={uri!r}: use an absolute path "
                             "(sqlite:////abs/path/mlflow.db)")
        try:
            db.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SweepError(f"tracking.uri={uri!r}: cannot create {db.parent} "
                             f"({exc.strerror})") from None
        if not os.access(db.parent, os.W_OK):
            raise SweepError(f"tracking.uri={uri!r}: {db.parent} is not writable",
                             hint="point tracking.uri elsewhere or set tracking.enabled=false")


# One client per store and process, and each experiment id looked up once: opening a SQLite
# store checks its schema with alembic (about 0.3 s), and a sweep's jobs each call several of
# the functions below. (MLflow itself keeps one database engine per URI for the process.)
_CLIENTS: dict[str, Any] = {}
_EXPERIMENTS: dict[tuple[str, str], str] = {}
_RUN_EXPERIMENTS: dict[tuple[str, str], str] = {}


def client_for(uri: str) -> Any:
    """An `MlflowClient` for ``uri`` (one per store and process); a one-line `SweepError` when
    the store is unusable."""
    if uri in _CLIENTS:
        check_reachable(uri)
        return _CLIENTS[uri]
    _CLIENTS[uri] = _open_client(uri)
    return _CLIENTS[uri]


def _open_client(uri: str) -> Any:
    _quiet()
    from mlflow import MlflowClient

    preflight(uri)
    db = sqlite_path(uri)
    if db is None:
        return MlflowClient(tracking_uri=uri)
    client_uri = _client_uri(uri)
    # MLflow creates and migrates a SQLite store when the first client opens it; two sweeps
    # starting at once on a new file would both run the migration and break the store
    # (`table _alembic_tmp_experiments already exists`). One process at a time, under a lock
    # on the store's path (the one `ensure_experiment` takes).
    from filelock import FileLock, Timeout

    try:
        with FileLock(str(db) + ".lock", timeout=120):
            client = MlflowClient(tracking_uri=client_uri)
            client.search_experiments(max_results=1)  # opens (creates, migrates) the store now
    except Timeout:
        raise SweepError(f"tracking.uri={uri}: another process has held {db}.lock for 120 s",
                         hint="wait for the other sweep, or use another tracking.uri") from None
    except Exception as exc:
        if _locked(exc):
            raise _locked_error(uri) from None
        raise SweepError(f"tracking.uri={uri}: cannot open the MLflow store "
                         f"({type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:160]})",
                         hint="reports are still written to the job folder; fix the URI or "
                         "set tracking.enabled=false") from None
    return client


def _artifact_location(uri: str, name: str) -> str | None:
    """Artifacts beside a local SQLite store (MLflow would otherwise use ./mlruns of the cwd)."""
    db = sqlite_path(uri)
    if db is None:
        return None
    slug = re.sub(r"[^\w.-]+", "-", name).strip("-") or "default"
    return (db.parent / "mlartifacts" / slug).as_uri()


# A sweep is model training, not a GenAI app: MLflow versions that read this experiment tag
# open its runs, not the traces overview. (3.17 ignores it while its global GenAI / model
# training switch is shown; `ui_link` carries the choice in the URL for those.)
EXPERIMENT_KIND = "mlflow.experimentKind"
MODEL_DEVELOPMENT = "custom_model_development"
NOTE_TAG = "mlflow.note.content"  # the run's description in the UI (markdown)
UI_PORT = 5000  # `make ui`


def ui_link(uri: str, experiment_id: str, port: int = UI_PORT) -> str | None:
    """The MLflow UI page with the runs table of an experiment, in model-training mode.

    MLflow 3.17's UI picks GenAI vs model training from the ``workflowType`` query parameter,
    else from the browser's stored choice, which defaults to GenAI (its landing page is then
    the traces overview). A SQLite store is seen through `make ui` (``mlflow ui`` on
    ``port``); an http(s) store is its own UI.
    """
    base = _ui_base(uri, port)
    if base is None:
        return None
    return f"{base}/#/experiments/{experiment_id}/runs?{CLASSIC_VIEW}"


# The query that selects MLflow 3's model-training (classic) layout over its GenAI one.
CLASSIC_VIEW = "workflowType=machine_learning"


def _ui_base(uri: str, port: int) -> str | None:
    if sqlite_path(uri) is not None:
        return f"http://127.0.0.1:{port}"
    if uri.startswith(("http://", "https://")):
        return uri.rstrip("/")
    return None


def artifact_link(uri: str, experiment_id: str, run_id: str, artifact: str,
                  port: int = UI_PORT) -> str | None:
    """The classic run page opened on one of its artifacts: for the sweep's parent,
    ``comparison.md``, which the Artifacts tab renders whole (the run's description, in
    MLflow 3's layout, shows its first lines only)."""
    base = _ui_base(uri, port)
    if base is None:
        return None
    return (f"{base}/#/experiments/{experiment_id}/runs/{run_id}/artifacts/{artifact}"
            f"?{CLASSIC_VIEW}")


def ui_command(uri: str) -> str | None:
    """The command that serves the UI of the store ``uri`` on the port `ui_link` names: `make
    ui` only in the clone, for the store it serves (the clone's ./mlflow.db); in a user's
    project (no Makefile there) `sweep ui`, with ``--tracking-uri`` unless the store is the
    one it opens by default (./mlflow.db); an http(s) store is its own UI (None)."""
    path = sqlite_path(uri)
    if path is None:
        return None
    here = resolve_user_path(path, "tracking.uri")
    if (paths.in_clone() and PROJECT_ROOT == paths.CLONE_ROOT
            and here == (PROJECT_ROOT / "mlflow.db").resolve()):
        return "make ui"
    command = "python -m sweep.cli ui" if paths.in_clone() else "sweep ui"
    if here == (Path.cwd() / "mlflow.db").resolve() and not paths.in_clone():
        return command
    return f"{command} --tracking-uri {shlex.quote(uri)}"


def ensure_experiment(client: Any, uri: str, name: str) -> str:
    """Get or create the experiment (looked up once per store and process); a file lock stops
    parallel jobs from racing to create it."""
    key = (uri, name)
    if key not in _EXPERIMENTS:
        _EXPERIMENTS[key] = _get_or_create_experiment(client, uri, name)
    return _EXPERIMENTS[key]


def _get_or_create_experiment(client: Any, uri: str, name: str) -> str:
    from filelock import FileLock

    db = sqlite_path(uri)
    lock = FileLock(str(db) + ".lock") if db is not None else None
    try:
        if lock:
            lock.acquire(timeout=120)
        try:
            exp = client.get_experiment_by_name(name)
            if exp is not None:
                if exp.lifecycle_stage == "deleted":
                    client.restore_experiment(exp.experiment_id)
                if exp.tags.get(EXPERIMENT_KIND) != MODEL_DEVELOPMENT:
                    client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND,
                                              MODEL_DEVELOPMENT)
                return exp.experiment_id
            return client.create_experiment(name, artifact_location=_artifact_location(uri, name),
                                            tags={EXPERIMENT_KIND: MODEL_DEVELOPMENT})
        finally:
            if lock:
                lock.release()
    except SweepError:
        raise
    except Exception as exc:
        if _locked(exc):
            raise _locked_error(uri) from None
        raise SweepError(
            f"tracking.uri={uri}: cannot reach the MLflow store ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:160] if str(exc) else ''})",
            hint="reports are still written to the job folder; fix the URI or set "
            "tracking.enabled=false",
        ) from None


@functools.cache
def git_sha() -> str:
    """The commit this process runs (``+dirty`` with uncommitted changes): asked of git once per
    process, as the code it runs was read when it started."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=PROJECT_ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def redact(params: Mapping[str, Any]) -> dict[str, Any]:
    """Values of secret-looking keys and URLs with credentials as ``***`` (the rule of
    `sweep.common.secret`: ``api_key_env`` names a variable and ``chunk.tokenizer`` is no
    secret, so both are kept); any other URL loses its password-like query parameters
    (`scrub_urls`). The config check refuses these; this is the second line."""
    return {k: ("***" if v and (is_secret_key(k) or (isinstance(v, str) and url_has_userinfo(v)))
                else scrub_urls(v) if isinstance(v, str) else v) for k, v in params.items()}


def params_of(plain_config: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in redact(flatten(dict(plain_config))).items():
        text = "" if value is None else str(value)
        out[key] = text if len(text) <= _MAX_PARAM else text[: _MAX_PARAM - 3] + "..."
    return out


def _log_batch(client: Any, run_id: str, *, params: Mapping[str, str] | None = None,
               metrics: Mapping[str, float] | None = None,
               tags: Mapping[str, str] | None = None) -> None:
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    # every param and tag the store receives passes the URL scrubber (sweep.common.secret)
    p = [Param(k, scrub_urls(str(v))) for k, v in (params or {}).items()]
    m = [Metric(k, float(v), now, 0) for k, v in (metrics or {}).items()
         if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)]
    t = [RunTag(k, scrub_urls(str(v))) for k, v in (tags or {}).items()]
    for i in range(0, max(len(p), len(m), len(t)), 100):
        client.log_batch(run_id, metrics=m[i : i + 100], params=p[i : i + 100],
                         tags=t[i : i + 100])


def _guard(what: str, uri: str) -> Any:
    class _Ctx:
        def __enter__(self) -> None:
            return None

        def __exit__(self, et: Any, exc: BaseException | None, tb: Any) -> bool:
            if exc is None or isinstance(exc, SweepError):
                return False
            if _locked(exc):
                raise _locked_error(uri) from None
            raise SweepError(
                f"tracking.uri={uri}: {what} failed ({type(exc).__name__}: "
                f"{(str(exc).splitlines() or [''])[0][:160]})",
                hint="the report is kept in the job folder; set tracking.enabled=false to skip",
            ) from None

    return _Ctx()


# The process the runs' tags name as their writer when it is not this one: the sweep's, in
# the worker process that makes the MLflow calls for it (`tracking_worker`). It is the sweep
# whose death leaves a run RUNNING, so the sweep is what a later process must find gone.
_OWNER_PID: int | None = None


def set_owner(pid: int | None) -> None:
    global _OWNER_PID
    _OWNER_PID = pid


def _owner() -> dict[str, str]:
    """Which process writes a run: how a later process tells a run being logged right now
    from one whose writer was killed."""
    return {"chunk_sweep.host": socket.gethostname(),
            "chunk_sweep.pid": str(_OWNER_PID or os.getpid())}


def _writer_gone(tags: Mapping[str, str]) -> bool:
    """The run's writer was a process on this host that no longer exists. A run from another
    host (or without the tags) is never taken for stale: its writer may still be at work."""
    if tags.get("chunk_sweep.host") != socket.gethostname():
        return False
    try:
        pid = int(tags.get("chunk_sweep.pid", ""))
    except ValueError:
        return False
    if pid in (os.getpid(), _OWNER_PID):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, someone else's
        return False
    return False


def close_stale(uri: str, experiment: str, role: str, config_hash: str | None = None
                ) -> list[str]:
    """Close as KILLED (tagged `STALE_TAG`) the RUNNING runs of ``role`` (``config``: only
    those with ``config_hash``; ``sweep``: parent runs) whose writer process is gone; returns
    their ids."""
    client = client_for(uri)
    with _guard("closing runs left RUNNING", uri):
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            return []
        where = f"tags.`chunk_sweep.role` = '{role}' and attributes.status = 'RUNNING'"
        if config_hash is not None:
            where += f" and tags.config_hash = '{config_hash}'"
        closed = []
        for run in client.search_runs([exp.experiment_id], filter_string=where,
                                      max_results=1000):
            if _writer_gone(run.data.tags):
                client.set_tag(run.info.run_id, STALE_TAG,
                               f"true (process {run.data.tags['chunk_sweep.pid']} on "
                               f"{run.data.tags['chunk_sweep.host']} ended while this run "
                               "was RUNNING)")
                client.set_terminated(run.info.run_id, status="KILLED")
                closed.append(run.info.run_id)
    return closed


def start_parent(uri: str, experiment: str, run_name: str, params: Mapping[str, str],
                 tags: Mapping[str, str]) -> tuple[str, str]:
    """Create the sweep's parent run; returns (experiment_id, run_id)."""
    client = client_for(uri)
    exp_id = ensure_experiment(client, uri, experiment)
    with _guard("starting the parent run", uri):
        run = client.create_run(exp_id, run_name=run_name,
                                tags={"chunk_sweep.role": "sweep", "git_sha": git_sha(),
                                      **_owner(), **tags})
        _log_batch(client, run.info.run_id, params=params)
    return exp_id, run.info.run_id


def finish_parent(uri: str, run_id: str, *, status: str, metrics: Mapping[str, float],
                  tags: Mapping[str, str], artifacts: Iterable[Path]) -> None:
    client = client_for(uri)
    with _guard("closing the parent run", uri):
        _log_batch(client, run_id, metrics=metrics, tags=tags)
        for path in artifacts:
            if path.exists():
                client.log_artifact(run_id, str(path))
        client.set_terminated(run_id, status=status)


# What a closed sweep left when no configuration of it finished (`settle_unfinished`).
UNFINISHED_PREFIX = "FAILED, nothing finished: "


def settle_unfinished(uri: str, run_id: str) -> str:
    """After a sweep's parent run is closed: ``"finished"`` when some configuration of it
    FINISHED (ran, or was reused from an earlier sweep); else the parent is no record of
    anything to resume or compare: ``"deleted"`` when it has no configuration run at all (the
    sweep stopped before any job was logged), ``"failed"`` when its configuration runs all
    failed (kept, as they say why, under a parent renamed to start with `UNFINISHED_PREFIX`;
    `sweep compare` skips it as it skips any sweep without a finished configuration)."""
    client = client_for(uri)
    with _guard("closing the sweep's run", uri):
        run = client.get_run(run_id)
        if any(k.startswith("resumed.") for k in run.data.tags):
            return "finished"
        children = client.search_runs(
            [run.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'", max_results=1000)
        if any(c.info.status == "FINISHED" for c in children):
            return "finished"
        if not children:
            client.delete_run(run_id)
            return "deleted"
        name = run.info.run_name or ""
        if not name.startswith(UNFINISHED_PREFIX):
            client.set_tag(run_id, "mlflow.runName", UNFINISHED_PREFIX + name)
    return "failed"


def kill_run(uri: str, run_id: str, status: str = "KILLED") -> None:
    client = client_for(uri)
    with _guard("closing the run", uri):
        client.set_terminated(run_id, status=status)


def log_job(uri: str, experiment: str, *, run_name: str, plain_config: Mapping[str, Any],
            report: Mapping[str, Any], artifacts: Iterable[Path], artifact_dirs:
            Mapping[str, Path] | None = None, parent_run_id: str | None = None,
            status: str = "FINISHED", error: str | None = None) -> str:
    """One child run: params, metrics, tags and artifacts of one configuration."""
    client = client_for(uri)
    exp_id = ensure_experiment(client, uri, experiment)
    if parent_run_id:
        # A child must live in its parent's experiment for the UI to nest it.
        key = (uri, parent_run_id)
        if key not in _RUN_EXPERIMENTS:  # a run never changes experiment
            with _guard("looking up the parent run", uri):
                _RUN_EXPERIMENTS[key] = client.get_run(parent_run_id).info.experiment_id
        exp_id = _RUN_EXPERIMENTS[key]
    fingerprints = report.get("fingerprints") or {}
    tags = {
        "chunk_sweep.role": "config",
        "config_hash": report.get("config_hash", ""),
        "corpus_fingerprint": fingerprints.get("corpus", ""),
        "golden_fingerprint": fingerprints.get("golden", ""),
        "model_fingerprint": fingerprints.get("model", ""),
        "git_sha": git_sha(),
        **_owner(),
    }
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    if error:
        tags["error"] = error[:5000]
    with _guard("logging the run", uri):
        run = client.create_run(exp_id, run_name=run_name, tags=tags)
        run_id = run.info.run_id
        try:
            metrics = dict(report.get("metrics") or {})
            metrics.update({f"time_{k}": v for k, v in (report.get("timings_s") or {}).items()})
            _log_batch(client, run_id, params=params_of(plain_config), metrics=metrics)
            for path in artifacts:
                if path.exists():
                    client.log_artifact(run_id, str(path))
            for name, folder in (artifact_dirs or {}).items():
                if folder.is_dir():
                    client.log_artifacts(run_id, str(folder), artifact_path=name)
        except BaseException:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status=status)
    return run_id



# --- Reading sweeps back (sweep compare / export / flips) -----------------------------------

SWEEP_ROLE_FILTER = "tags.`chunk_sweep.role` = 'sweep'"


def _read_guard(uri: str) -> Any:
    return _guard("reading the store", uri)


def store_missing(uri: str) -> Path | None:
    """The local store ``uri`` names when it is not there (a SQLite file, or a file store's
    folder), else None. A read never opens a missing store: MLflow would create an empty one
    where the command happens to run (`sweep show <id>` in a folder with no store)."""
    db = sqlite_path(uri)
    if db is not None:
        return None if db.is_file() else db
    if uri.startswith("file:"):  # a file store: a folder of experiments
        folder = Path(urlparse(uri).path)
        return None if folder.is_dir() else folder
    return None


def _store_exists(uri: str) -> None:
    missing = store_missing(uri)
    if missing is not None:
        raise SweepError(f"no MLflow store at {missing}",
                         hint="run a sweep first (python -m sweep -m ...) or pass --tracking-uri")


def find_sweep(uri: str, experiment: str | None = None, sweep: str = "latest") -> dict[str, Any]:
    """The parent run of a sweep: the latest one (of ``experiment``, else of the experiment
    used most recently), or the one with id ``sweep``.

    Returns ``{"run_id", "experiment_id", "experiment", "start_time", "sweep_dir", "status",
    "tags", "metrics"}``; a one-line `SweepError` when there is none.
    """
    _store_exists(uri)
    client = client_for(uri)
    with _read_guard(uri):
        if sweep and sweep != "latest":
            try:
                run = client.get_run(sweep)
            except Exception:
                raise SweepError(f"no run with id {sweep!r} in {uri}",
                                 hint="use --sweep latest or a parent run id from the MLflow UI"
                                 ) from None
            if run.data.tags.get("chunk_sweep.role") != "sweep":
                parent = run.data.tags.get("mlflow.parentRunId")
                if parent:
                    run = client.get_run(parent)
                else:
                    raise SweepError(f"run {sweep} is not a chunk-sweep sweep (parent) run")
        else:
            if experiment:
                exp = client.get_experiment_by_name(experiment)
                if exp is None:
                    names = sorted(e.name for e in client.search_experiments())
                    raise SweepError(f"no experiment named {experiment!r} in {uri} "
                                     f"(available: {', '.join(names) or 'none'})")
                exp_ids = [exp.experiment_id]
            else:
                exp_ids = [e.experiment_id for e in client.search_experiments()]
            runs = client.search_runs(exp_ids, filter_string=SWEEP_ROLE_FILTER,
                                      order_by=["attributes.start_time DESC"],
                                      max_results=1) if exp_ids else []
            if not runs:
                where = f"experiment {experiment!r}" if experiment else uri
                raise SweepError(f"no sweep in {where}",
                                 hint="run one with python -m sweep -m ...")
            run = runs[0]
        exp = client.get_experiment(run.info.experiment_id)
    return {"run_id": run.info.run_id, "experiment_id": run.info.experiment_id,
            "experiment": exp.name, "start_time": run.info.start_time,
            "sweep_dir": run.data.tags.get("sweep_dir", ""), "status": run.info.status,
            "tags": dict(run.data.tags), "metrics": dict(run.data.metrics)}


def earlier_sweeps(uri: str, parent: Mapping[str, Any], limit: int = 50
                   ) -> list[dict[str, Any]]:
    """The sweeps of ``parent``'s experiment that started before it, latest first (at most
    ``limit``), as `find_sweep` returns them: where to look when the latest sweep failed
    before any configuration finished."""
    client = client_for(uri)
    with _read_guard(uri):
        runs = client.search_runs(
            [parent["experiment_id"]],
            filter_string=f"{SWEEP_ROLE_FILTER} and attributes.start_time < "
                          f"{int(parent.get('start_time') or 0)}",
            order_by=["attributes.start_time DESC"], max_results=limit)
    return [{"run_id": r.info.run_id, "experiment_id": r.info.experiment_id,
             "experiment": parent.get("experiment"), "start_time": r.info.start_time,
             "sweep_dir": r.data.tags.get("sweep_dir", ""), "status": r.info.status,
             "tags": dict(r.data.tags), "metrics": dict(r.data.metrics)} for r in runs]


def sweep_runs(uri: str, parent: Mapping[str, Any]) -> Any:
    """The child runs of a sweep as a pandas DataFrame (``mlflow.search_runs``: columns
    ``run_id``, ``status``, ``params.*``, ``metrics.*``, ``tags.*``)."""
    _quiet()
    import mlflow

    preflight(uri)
    # mlflow.set_tracking_uri also exports MLFLOW_TRACKING_URI, which would then pick the
    # store of everything this process runs later. Both are put back from the variable's
    # own earlier value (None unsets both), never from mlflow.get_tracking_uri(): that is a
    # computed default, and setting it exports it.
    saved = os.environ.get("MLFLOW_TRACKING_URI")
    try:
        return _sweep_runs(uri, parent, mlflow)
    finally:
        mlflow.set_tracking_uri(saved)


def _sweep_runs(uri: str, parent: Mapping[str, Any], mlflow: Any) -> Any:
    with _read_guard(uri):
        mlflow.set_tracking_uri(_client_uri(uri))
        df = mlflow.search_runs(
            experiment_ids=[parent["experiment_id"]],
            filter_string=f"tags.`mlflow.parentRunId` = '{parent['run_id']}'",
            output_format="pandas", max_results=50000)
        # Configurations a resumed sweep skipped live under the sweep that ran them; the
        # parent names them in `resumed.<config_hash>` tags.
        resumed = sorted({v for k, v in (parent.get("tags") or {}).items()
                          if k.startswith("resumed.")})
        if resumed:
            ids = ", ".join(f"'{r}'" for r in resumed)
            more = mlflow.search_runs(
                experiment_ids=[parent["experiment_id"]],
                filter_string=f"attributes.run_id IN ({ids})",
                output_format="pandas", max_results=50000)
            import pandas as pd

            df = pd.concat([df, more], ignore_index=True)
    stale = f"tags.{STALE_TAG}"
    if stale in df.columns:  # runs whose writer was killed: the resumed sweep re-ran them
        df = df[df[stale].isna()].reset_index(drop=True)
    return df


def run_info(uri: str, run_id: str) -> dict[str, Any]:
    """Params, metrics and tags of one run; a one-line `SweepError` for an unknown id."""
    _store_exists(uri)
    client = client_for(uri)
    with _read_guard(uri):
        try:
            run = client.get_run(run_id)
        except Exception:
            raise SweepError(f"no run with id {run_id!r} in {uri}") from None
    return {"run_id": run.info.run_id, "experiment_id": run.info.experiment_id,
            "status": run.info.status, "run_name": run.info.run_name,
            "params": dict(run.data.params), "metrics": dict(run.data.metrics),
            "tags": dict(run.data.tags)}


def run_summary(uri: str, run_id: str) -> dict[str, str] | None:
    """``{"experiment", "run_name", "artifact_uri"}`` of a run of the store, or None when the
    store has no run with this id (or there is no store)."""
    if store_missing(uri) is not None:
        return None
    client = client_for(uri)
    try:
        run = client.get_run(run_id)
    except Exception as exc:  # MLflow's RESOURCE_DOES_NOT_EXIST, or an id of another form
        log.debug("run %s not in %s: %s", run_id, uri, exc)
        return None
    try:
        experiment = client.get_experiment(run.info.experiment_id).name
    except Exception:
        experiment = run.info.experiment_id
    return {"experiment": str(experiment), "run_name": str(run.info.run_name or ""),
            "artifact_uri": str(run.info.artifact_uri or "")}


def download_artifact(uri: str, run_id: str, name: str, dst: Path) -> Path | None:
    """Copy one artifact of a run into ``dst``; None when the run does not have it."""
    if store_missing(uri) is not None:
        return None
    client = client_for(uri)
    dst.mkdir(parents=True, exist_ok=True)
    try:
        return Path(client.download_artifacts(run_id, name, str(dst)))
    except Exception as exc:
        log.debug("artifact %s of run %s not available: %s", name, run_id, exc)
        return None


def log_artifacts_to(uri: str, run_id: str, paths: Iterable[Path],
                     artifact_path: str | None = None) -> None:
    client = client_for(uri)
    with _guard("logging artifacts", uri):
        for path in paths:
            if Path(path).exists():
                client.log_artifact(run_id, str(path), artifact_path=artifact_path)


def set_tags(uri: str, run_id: str, tags: Mapping[str, str]) -> None:
    client = client_for(uri)
    with _guard("tagging the run", uri):
        for key, value in tags.items():
            client.set_tag(run_id, key, scrub_urls(str(value)))


def find_finished(uri: str, experiment: str, config_hash: str) -> str | None:
    """The id of a FINISHED configuration run with this ``config_hash``, if the store has one."""
    if store_missing(uri) is not None:
        return None
    client = client_for(uri)
    with _guard("looking for finished runs", uri):
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            return None
        runs = client.search_runs(
            [exp.experiment_id],
            filter_string=f"tags.config_hash = '{config_hash}' and "
                          "tags.`chunk_sweep.role` = 'config' and attributes.status = 'FINISHED'",
            max_results=1,
        )
    return runs[0].info.run_id if runs else None


def tag_run(uri: str, run_id: str, key: str, value: str) -> None:
    client = client_for(uri)
    with _guard("tagging a run", uri):
        client.set_tag(run_id, key, scrub_urls(value))


def download_report(uri: str, run_id: str, folder: Path) -> Path:
    """Copy a run's ``report.json`` artifact into ``folder``."""
    _store_exists(uri)
    client = client_for(uri)
    with _guard("downloading a report", uri):
        return Path(client.download_artifacts(run_id, "report.json", str(folder)))


# --- Reading an application's traces (sweep questions import --mlflow-experiment) ----------

TRACE_PAGE = 200  # traces fetched per call; a store of 100,000 traces is read page by page


def iter_traces(uri: str, experiment: str, limit: int = 0) -> Iterable[Any]:
    """The traces of ``experiment`` (MLflow 3 ``Trace`` objects with spans and assessments),
    oldest first, a page at a time; ``limit`` > 0 stops after that many. A one-line
    `SweepError` when the store, the experiment or its traces are missing."""
    _store_exists(uri)
    client = client_for(uri)
    with _read_guard(uri):
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            names = sorted(e.name for e in client.search_experiments())
            raise SweepError(f"no experiment named {experiment!r} in {uri} "
                             f"(available: {', '.join(names) or 'none'})")
    token = None
    seen = 0
    while True:
        with _read_guard(uri):
            page = client.search_traces(locations=[exp.experiment_id], max_results=TRACE_PAGE,
                                        order_by=["timestamp_ms ASC"], page_token=token)
        for trace in page:
            yield trace
            seen += 1
            if limit and seen >= limit:
                return
        token = page.token
        if not token or not len(page):
            break
    if seen == 0:
        raise SweepError(f"experiment {experiment!r} in {uri} has no traces",
                         hint="trace the application with mlflow.trace / autologging into "
                         "this experiment, or name the experiment that has them")
