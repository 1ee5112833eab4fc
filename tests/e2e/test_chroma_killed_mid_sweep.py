"""The Chroma server killed (SIGKILL) in the middle of a three-job CLI sweep with index=chroma
(issue 30): the jobs after it fail with a line naming the server, are recorded FAILED with that
reason (report and MLflow run), the finished job is kept, the sweep exits 1; the server
started again (servers/chroma.sh, the `make chroma-start` recipe) and the same command run
again completes, skipping the finished job.

$CHUNK_SWEEP_CHROMA_KILL_PORT picks the server's port (default: a free one)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import DEMO, ROOT, mlflow_runs

pytestmark = pytest.mark.slow
SCRIPT = ROOT / "servers" / "chroma.sh"
SIZES = (128, 192, 254)


def _port() -> int:
    given = os.environ.get("CHUNK_SWEEP_CHROMA_KILL_PORT")
    if given:
        return int(given)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chroma(action: str, port: int, state: Path) -> str:
    venv = Path(os.environ.get("CHUNK_SWEEP_CHROMA_VENV") or ROOT / ".venv-chroma")
    if not (venv / "bin" / "chroma").is_file():
        pytest.fail(f"no Chroma server in {venv}: run `make chroma-venv`", pytrace=False)
    res = subprocess.run([str(SCRIPT), action], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PORT": str(port), "STATE": str(state),
                              "VENV": str(venv), "WAIT_S": "240"})
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def _sweep(tmp_path: Path, port: int) -> subprocess.Popen[str]:
    args = ["-m", "sweep", "-m", "chunk.size=" + ",".join(map(str, SIZES)), "index=chroma",
            f"index.port={port}", "retrieval=dense", f"corpus.path={DEMO / 'corpus'}",
            f"golden.path={DEMO / 'golden.jsonl'}",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}", f"cache.dir={tmp_path}/cache",
            f"hydra.sweep.dir={tmp_path}/sweep", "sweep.audit=false"]
    return subprocess.Popen([sys.executable, *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _reports(tmp_path: Path) -> dict[int, dict]:
    found = {}
    for path in (tmp_path / "sweep").glob("*/report.json"):
        try:
            found[int(path.parent.name)] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return found


def test_the_server_killed_mid_sweep_then_restarted_and_resumed(tmp_path: Path) -> None:
    port = _port()
    state = tmp_path / "chroma-state"
    url = f"http://127.0.0.1:{port}"
    _chroma("start", port, state)
    try:
        sweep = _sweep(tmp_path, port)
        deadline = time.monotonic() + 1200
        while time.monotonic() < deadline and sweep.poll() is None:
            if _reports(tmp_path).get(0, {}).get("status") == "FINISHED":
                break
            time.sleep(0.2)
        assert _reports(tmp_path).get(0, {}).get("status") == "FINISHED", \
            sweep.communicate()[1][-3000:]
        os.kill(int((state / "chroma.pid").read_text()), signal.SIGKILL)  # a crash
        out, err = sweep.communicate(timeout=1200)
        assert sweep.returncode == 1, err[-3000:]
        assert "Traceback" not in err
        reports = _reports(tmp_path)
        assert reports[0]["status"] == "FINISHED"  # kept
        failed = {n: r for n, r in reports.items() if r["status"] == "FAILED"}
        assert failed, {n: r["status"] for n, r in reports.items()}
        for rep in failed.values():
            assert rep["error"].startswith("index=chroma: "), rep["error"]
            assert url in rep["error"] and "\n" not in rep["error"]
        # one line per failed job naming the server, and the sweep's last word names it too
        # (a job's log line goes to stdout, Hydra's console handler; the sweep's to stderr)
        job_lines = [ln for ln in (out + err).splitlines() if "job failed: index=chroma" in ln]
        assert len(job_lines) == len(failed) and all(url in ln for ln in job_lines), out[-3000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: {len(failed)} of {len(SIZES)} configurations failed; "
                               "first: index=chroma: ") and url in last, last
        _, runs = mlflow_runs(f"sqlite:///{tmp_path / 'mlflow.db'}")
        children = [r for r in runs if r.data.tags.get("chunk_sweep.role") != "sweep"]
        assert sorted(r.info.status for r in children) == sorted(
            r["status"] for r in reports.values())
        for run in children:
            if run.info.status == "FAILED":
                assert url in run.data.tags.get("error", ""), run.data.tags

        assert "chroma starting" in _chroma("start", port, state)  # the pid file's server is dead
        again = _sweep(tmp_path, port)
        out, err = again.communicate(timeout=1800)
        assert again.returncode == 0, err[-3000:]
        assert "already FINISHED" in out + err  # the first job is not run again
        reports = _reports(tmp_path)
        assert sorted(r["status"] for r in reports.values()) == ["FINISHED"] * len(SIZES)
        assert reports[0].get("resumed_from_run")
        assert sorted(r["config"]["chunk"]["size"] for r in reports.values()) == list(SIZES)
    finally:
        _chroma("stop", port, state)
