"""Ctrl-C during a sweep: one line, no traceback, the parent run closed KILLED, the finished
configuration kept (issue 14, item 13)."""

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

from helpers import ROOT

pytestmark = pytest.mark.slow  # a real sweep with MLflow, interrupted


def test_ctrl_c_closes_the_parent_killed(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nReturns are accepted within 30 days.\n", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"qid": "q1", "question": "how long for returns",
                                  "evidence": [{"path": "a.md", "quote": "within 30 days"}]})
                      + "\n", encoding="utf-8")
    # The second configuration asks an endpoint that accepts the connection and never
    # answers: it is still running when Ctrl-C comes.
    stall = socket.socket()
    stall.bind(("127.0.0.1", 0))
    stall.listen(8)
    port = stall.getsockname()[1]
    db = tmp_path / "mlflow.db"
    sweep_dir = tmp_path / "sweep"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sweep", "-m", "generation.method=none,openai",
         f"corpus.path={corpus}", f"golden.path={golden}", "corpus.name=t", "golden.name=t",
         "retrieval=bm25", "retrieval.diagnose=false", "generation.model=m",
         f"generation.base_url=http://127.0.0.1:{port}/v1", "generation.max_retries=0",
         f"tracking.uri=sqlite:///{db}", f"cache.dir={tmp_path}/cache",
         f"hydra.sweep.dir={sweep_dir}"],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 400
        while not (sweep_dir / "1" / "report.json").exists() and time.time() < deadline:
            # job 1 writes its retrieval report before generation starts
            if proc.poll() is not None:
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        stall.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted:"), err[-2000:]
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("chunk-sweep-t")
    runs = client.search_runs([exp.experiment_id])
    parent = [r for r in runs if r.data.tags.get("chunk_sweep.role") == "sweep"]
    children = [r for r in runs if r.data.tags.get("chunk_sweep.role") == "config"]
    assert len(parent) == 1 and parent[0].info.status == "KILLED"
    assert [c.info.status for c in children] == ["FINISHED"]
