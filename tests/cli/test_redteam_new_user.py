"""Found by trying the tool as a new user would (issue 30): `make chroma-start` against a fake
`chroma` that takes a while to answer, and the end-of-sweep link's command.

Failed before: chroma-start gave up after 10 s (50 x 0.2 s) while the server was still
starting; a second call started another server, which failed on the port but overwrote the pid
file, so chroma-stop killed the wrong process and left the real server running. The link said
"after `make ui`" for any SQLite store, though `make ui` serves only ./mlflow.db."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, free_port
from sweep.outputs.tracking import ui_command

# A stand-in for `chroma run --path P --host H --port N`: answers the heartbeat after DELAY s;
# fails like the real one when the port is taken.
FAKE = '''#!{python}
import http.server, os, sys, time
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
time.sleep(float(os.environ.get("FAKE_CHROMA_DELAY", "0")))
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/api/v2/heartbeat" else 404)
        self.end_headers()
        self.wfile.write(b'{{"nanosecond heartbeat": 1}}')
    def log_message(self, *a):
        pass
try:
    srv = http.server.HTTPServer(("127.0.0.1", port), H)
except OSError as exc:
    print("port in use:", exc, file=sys.stderr)
    sys.exit(1)
srv.serve_forever()
'''


def _script(tmp_path: Path, action: str, port: int, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "servers" / "chroma.sh"), action], capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "VENV": str(tmp_path / "venv"), "PORT": str(port),
                               "STATE": str(tmp_path / "state"), **env})


@pytest.fixture
def fake_venv(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "chroma").write_text(FAKE.format(python=sys.executable))
    (bin_dir / "chroma").chmod(0o755)
    return bin_dir


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_chroma_start_waits_refuses_twice_and_stop_stops_the_real_one(
        tmp_path: Path, fake_venv: Path) -> None:
    port = free_port()
    pidfile = tmp_path / "state" / "chroma.pid"
    try:
        started = time.monotonic()
        res = _script(tmp_path, "start", port, FAKE_CHROMA_DELAY="2", WAIT_S="30")
        assert res.returncode == 0, res.stderr
        assert time.monotonic() - started >= 2  # it waited for the heartbeat
        assert f">> chroma on 127.0.0.1:{port} (pid " in res.stdout
        pid = int(pidfile.read_text())
        again = _script(tmp_path, "start", port)
        assert again.returncode == 0
        assert f"already started here (pid {pid}); answering" in again.stdout
        assert int(pidfile.read_text()) == pid  # the running server's pid kept
        stop = _script(tmp_path, "stop", port)
        assert f"chroma stopped (pid {pid})" in stop.stdout
        time.sleep(0.3)
        assert not _alive(pid) and not pidfile.exists()
    finally:
        if pidfile.exists():
            _script(tmp_path, "stop", port)


def test_chroma_start_gives_up_after_its_bound_and_names_the_log(tmp_path: Path,
                                                                 fake_venv: Path) -> None:
    port = free_port()
    try:
        res = _script(tmp_path, "start", port, FAKE_CHROMA_DELAY="30", WAIT_S="1")
        assert res.returncode == 1
        assert "chroma not answering after 1s" in res.stderr
        assert "make chroma-stop" in res.stderr
    finally:
        _script(tmp_path, "stop", port)


def test_a_server_it_did_not_start_is_left_alone(tmp_path: Path, fake_venv: Path) -> None:
    port = free_port()
    other = subprocess.Popen([str(fake_venv / "chroma"), "run", "--port", str(port)])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        res = _script(tmp_path, "start", port)
        assert res.returncode == 0 and "not started here already answers" in res.stdout
        assert not (tmp_path / "state" / "chroma.pid").exists()
        assert "no chroma started here" in _script(tmp_path, "stop", port).stdout
        assert other.poll() is None
    finally:
        other.terminate()
        other.wait(timeout=10)


def test_the_link_names_the_command_that_serves_the_store_the_sweep_used(tmp_path: Path
                                                                         ) -> None:
    assert ui_command(f"sqlite:///{ROOT / 'mlflow.db'}") == "make ui"
    other = f"sqlite:///{tmp_path / 'team store.db'}"
    assert ui_command(other) == f"python -m sweep.cli ui --tracking-uri '{other}'"
    assert ui_command("http://mlflow.internal:5000") is None  # its own UI
