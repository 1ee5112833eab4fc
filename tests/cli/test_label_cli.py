"""`sweep label` through the real command line: it serves the demo on loopback and prints its address; a busy port and a missing corpus are one-line errors."""

from __future__ import annotations

import http.client
import os
import socket
from pathlib import Path

from helpers import run_cli


def test_cli_serves_the_demo_on_loopback_and_prints_its_address(tmp_path: Path) -> None:
    import select
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "sweep.cli", "label", "--port", "0",
                             "--no-dense"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        line = proc.stdout.readline() if ready else ""
        assert "serving on http://127.0.0.1:" in line, line
        port = int(line.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/items")
        res = conn.getresponse()
        page = res.read().decode()
        assert res.status == 200
        assert "data/demo/golden.jsonl</code>: 60 items" in page  # the default config's demo
        assert "no tracking store at" in page  # no mlflow.db in this folder
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "reference chunking (from golden.reference.yaml): heading, 256 tokens" in err


def test_cli_reports_a_busy_port_and_a_missing_corpus(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = run_cli("-m", "sweep.cli", "label", "--port", str(port), "--no-dense",
                      cwd=tmp_path, timeout=120)
    assert res.returncode == 1
    assert res.stderr.strip().splitlines()[-1].startswith(f"error: cannot listen on 127.0.0.1:"
                                                          f"{port}")
    res = run_cli("-m", "sweep.cli", "label", "--corpus", str(tmp_path / "nope"), "--port", "0",
                  "--no-dense", cwd=tmp_path, timeout=120)
    assert res.returncode == 1 and "error: corpus folder not found" in res.stderr
    res = run_cli("-m", "sweep.cli", "help", cwd=tmp_path)
    assert "label " in res.stdout


def test_cli_reports_a_bad_queue_in_one_line_before_indexing(tmp_path: Path) -> None:
    queue = tmp_path / "q.jsonl"
    queue.write_text('{"cid": "c-1", "question": "ok"}\n{"cid": "c-2", "question": "x", '
                     '"source": "forum"}\n')
    res = run_cli("-m", "sweep.cli", "label", "--queue", str(queue), "--port", "0",
                  "--no-dense", cwd=tmp_path, timeout=120)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        f"error: {queue}:2: source: 'forum' is not one of log, trace, owner, synthetic")
    assert "indexed" not in res.stderr  # refused before the corpus was read
    res = run_cli("-m", "sweep.cli", "label", "--queue", str(tmp_path / "none.jsonl"),
                  "--port", "0", "--no-dense", cwd=tmp_path, timeout=120)
    assert res.returncode == 1 and "queue file not found" in res.stderr
