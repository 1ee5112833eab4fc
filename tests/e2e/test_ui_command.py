"""`sweep ui` (`make ui`) prints its link only once the real `mlflow ui` answers, and Ctrl-C
or SIGTERM on it stops the server and every worker it started (issue 30: the link came
minutes before the server answered; an os.execv left no one to wait for it).

$CHUNK_SWEEP_UI_TEST_PORT picks the port (default: a free one)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sweep.cli.ui import port_free

pytestmark = pytest.mark.slow


def _port() -> int:
    given = os.environ.get("CHUNK_SWEEP_UI_TEST_PORT")
    if given:
        return int(given)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as res:
            return res.status == 200
    except OSError:
        return False


def _descendants(pid: int) -> set[int]:
    """Every live process under ``pid`` (from /proc: ppid links)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start(tmp_path: Path, port: int) -> subprocess.Popen[str]:
    # stderr into a file: the server's log, unread while the test waits, must not fill a pipe
    return subprocess.Popen(
        [sys.executable, "-m", "sweep.cli", "ui", "--port", str(port), "--tracking-uri",
         f"sqlite:///{tmp_path / 'mlflow.db'}"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr.txt").open("w"), text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_link_waits_for_the_server_and_a_signal_stops_all_of_it(
        tmp_path: Path, sig: signal.Signals) -> None:
    port = _port()
    assert port_free(port), f"port {port} is taken before the test"
    ui = _start(tmp_path, port)
    assert ui.stdout is not None
    try:
        first = ui.stdout.readline()
        assert first.startswith(f"starting the MLflow UI on http://127.0.0.1:{port}"), first
        lines = []
        while True:  # mlflow's own lines and reminders while it starts, then the link
            line = ui.stdout.readline()
            assert line, (tmp_path / "stderr.txt").read_text()[-2000:]
            lines.append(line)
            # this command's own line (mlflow prints its address too, before it answers)
            if line.startswith(("no sweep to link to yet", "MLflow runs of")):
                break
        # printed once the server answers, not before (an empty store: no sweep to link)
        assert _answers(port), lines
        assert lines[-1].startswith("no sweep to link to yet") and \
            lines[-1].rstrip().endswith(f"the UI: http://127.0.0.1:{port}")
        workers = _descendants(ui.pid)
        assert len(workers) >= 2, workers  # mlflow ui and its uvicorn workers at least
        ui.send_signal(sig)  # to the command alone, as `kill` would; Ctrl-C is SIGINT
        assert ui.wait(60) == 128 + sig
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.2)
        assert not [p for p in workers if _alive(p)], "server processes outlived sweep ui"
        assert port_free(port) and not _answers(port)
        assert "Traceback" not in (tmp_path / "stderr.txt").read_text()
    finally:
        left = _descendants(ui.pid)  # before the kill: orphans are no one's descendants
        if ui.poll() is None:
            ui.kill()
        for p in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    port = _port()
    with socket.create_server(("127.0.0.1", port)):
        ui = _start(tmp_path, port)
        out, _ = ui.communicate(timeout=120)
    err = (tmp_path / "stderr.txt").read_text()
    assert ui.returncode == 1
    assert err.strip().splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use (another `sweep ui` or `mlflow ui`?); "
        "stop it or pass --port"]
    assert "starting" not in out
