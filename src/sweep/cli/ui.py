"""``sweep ui``: the MLflow UI on the store, and the link to the latest sweep's runs table.

    sweep ui [--port 5000] [--experiment NAME] [--tracking-uri URI]

MLflow's own landing page is its GenAI overview (traces); the printed link opens the runs
table of the latest sweep's experiment in model-training mode (`tracking.ui_link`).

`mlflow ui` takes from seconds to minutes before it answers (imports, a store migration on
the first start), so the link is printed only once ``/health`` answers: a "starting" line
first, a reminder while it waits, and one error line if the server ends before answering.
The server runs in a process group of its own that this command owns: Ctrl-C, SIGTERM and
SIGHUP here stop it and its workers (``mlflow ui`` starts uvicorn with several).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from types import FrameType

from sweep.common.errors import SweepError
from sweep.common.secret import scrub_urls
from sweep.decide.runs import default_uri
from sweep.outputs import tracking

# A reminder while the server starts, so a slow first start does not look like a hang.
STILL_STARTING_EVERY_S = 20.0
# How long the server may take to stop (its workers finish their requests) before SIGKILL.
STOP_WAIT_S = 15.0


def cmd_ui(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep ui", description="Open the MLflow UI.")
    parser.add_argument("--port", type=int, default=tracking.UI_PORT)
    parser.add_argument("--experiment", help="MLflow experiment (default: the latest sweep's)")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)")
    args = parser.parse_args(argv)
    uri = args.tracking_uri or default_uri()
    base = f"http://127.0.0.1:{args.port}"
    try:
        sweep = tracking.find_sweep(uri, args.experiment)
        link = tracking.ui_link(uri, sweep["experiment_id"], args.port)
        table = tracking.artifact_link(uri, sweep["experiment_id"], sweep["run_id"],
                                       "comparison.md", args.port)
        ready = (f"MLflow runs of the latest sweep ({sweep['experiment']}): {link}\n"
                 f"its comparison table: {table}")
    except SweepError as exc:
        ready = f"no sweep to link to yet ({exc}); the UI: {base}"
    if tracking.sqlite_path(uri) is None:
        print(ready, flush=True)
        return 0  # a tracking server is its own UI
    if not port_free(args.port):
        print(f"error: port {args.port} on 127.0.0.1 is in use (another `sweep ui` or "
              "`mlflow ui`?); stop it or pass --port", file=sys.stderr)
        return 1
    print(f"starting the MLflow UI on {base} for {scrub_urls(uri)} (the first start can take a minute; "
          "the link follows once it answers; Ctrl-C stops it)", flush=True)
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
               "--host", "127.0.0.1", "--port", str(args.port)]
    # Its own process group, so that a signal here reaches every process it starts. Its own
    # messages go to stderr: on a shared stdout its log lines spliced into the printed links
    # ("...workflowType=machine_learning2026/12/05 ..."), which a script reading stdout took
    # as part of the link.
    server = subprocess.Popen(command, process_group=0, stdout=_stderr_fd())
    return _serve(server, base, ready)


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stderr without a file
        return None


def port_free(port: int) -> bool:
    with socket.socket() as s:
        # as a server binds (uvicorn does): a closed connection's TIME_WAIT does not count
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=2) as res:
            return bool(res.status == 200)
    except OSError:
        return False


def _serve(server: subprocess.Popen[bytes], base: str, ready: str) -> int:
    """Print ``ready`` once the server answers, then wait for it; a signal here stops it."""
    stop: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.append(signum)
        raise KeyboardInterrupt

    # SIGINT too, not left to Python's default: a process started in the background by a
    # non-interactive shell inherits SIGINT ignored, and Ctrl-C (or `kill -INT`) would not stop it
    previous = {s: signal.signal(s, on_signal)
                for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        started = time.monotonic()
        reminded = started
        while not _answers(base):
            if server.poll() is not None:
                print(f"error: mlflow ui ended (exit {server.returncode}) before answering on "
                      f"{base}; its messages are above", file=sys.stderr)
                return 1
            now = time.monotonic()
            if now - reminded >= STILL_STARTING_EVERY_S:
                print(f"  the MLflow UI is still starting ({now - started:.0f} s)", flush=True)
                reminded = now
            time.sleep(0.5)
        print(ready, flush=True)
        return server.wait()
    except KeyboardInterrupt:
        return 128 + (stop[0] if stop else signal.SIGINT)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _stop(server)


def _stop(server: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the server's group, SIGKILL after `STOP_WAIT_S` or at a second Ctrl-C; its
    workers are in the group too, and the group is killed whatever its leader did (a worker
    may outlive it). SIGTERM, not SIGINT: uvicorn stops the same on either, but the `mlflow`
    process waiting for it prints a KeyboardInterrupt traceback on SIGINT."""
    try:
        for sig, wait in ((signal.SIGTERM, STOP_WAIT_S), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, sig)
            try:
                server.wait(wait)
            except (subprocess.TimeoutExpired, KeyboardInterrupt):
                continue
            break
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.pid, signal.SIGKILL)
