"""SIGKILL while a child run is being logged leaves it RUNNING; the resumed sweep closes it
KILLED with a tag, and `sweep compare` leaves it out (issue 14, item 12). A real store, a real
sweep, a real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, run_cli

pytestmark = pytest.mark.slow

# The sweep, with MLflow's artifact upload of job 1 stalled: the process is killed while the
# child run of that configuration is being logged (created, not yet terminated).
STALLED = """
import pathlib, sys, time
from mlflow import MlflowClient
mark = pathlib.Path(sys.argv.pop(1))
original = MlflowClient.log_artifact
def stalled(self, run_id, local_path, *args, **kwargs):
    if pathlib.Path(local_path).parent.name == "1":
        mark.write_text(run_id)
        time.sleep(600)
    return original(self, run_id, local_path, *args, **kwargs)
MlflowClient.log_artifact = stalled
from sweep.__main__ import main
main()
"""


def _args(tmp_path: Path, sweep_dir: Path) -> list[str]:
    corpus = tmp_path / "corpus"
    if not corpus.is_dir():
        corpus.mkdir()
        (corpus / "a.md").write_text("# A\n\nReturns are accepted within 30 days.\n\n"
                                     "## Shipping\n\nParcels ship in two days.\n",
                                     encoding="utf-8")
        (tmp_path / "golden.jsonl").write_text(
            json.dumps({"qid": "q1", "question": "how long for returns",
                        "evidence": [{"path": "a.md", "quote": "within 30 days"}]}) + "\n",
            encoding="utf-8")
    return ["-m", "chunk.size=128,256", f"corpus.path={corpus}",
            f"golden.path={tmp_path / 'golden.jsonl'}", "corpus.name=t", "golden.name=t",
            "retrieval=bm25", "retrieval.diagnose=false",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}", f"cache.dir={tmp_path}/cache",
            f"hydra.sweep.dir={sweep_dir}"]


def test_sigkill_while_logging_then_resume(tmp_path: Path) -> None:
    mark = tmp_path / "stalled-run-id"
    proc = subprocess.Popen([sys.executable, "-c", STALLED, str(mark),
                             *_args(tmp_path, tmp_path / "sweep1")],
                            cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 400
        while not mark.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.3)
        assert mark.exists(), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    killed_run = mark.read_text()

    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("chunk-sweep-t")
    assert client.get_run(killed_run).info.status == "RUNNING"  # what SIGKILL leaves
    first_parent = client.get_run(killed_run).data.tags["mlflow.parentRunId"]
    chash = client.get_run(killed_run).data.tags["config_hash"]

    res = run_cli("-m", "sweep", *_args(tmp_path, tmp_path / "sweep2"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]

    same = client.search_runs([exp.experiment_id],
                              filter_string=f"tags.config_hash = '{chash}'")
    statuses = sorted(r.info.status for r in same)
    assert statuses == ["FINISHED", "KILLED"]  # never FINISHED + RUNNING for one config
    stale = client.get_run(killed_run)
    assert stale.info.status == "KILLED"
    assert stale.data.tags["chunk_sweep.stale"].startswith("true (process ")
    # The killed sweep's parent is closed too, and nothing of this store is left RUNNING.
    assert client.get_run(first_parent).info.status == "KILLED"
    assert [r.info.run_id for r in client.search_runs([exp.experiment_id])
            if r.info.status == "RUNNING"] == []

    # `sweep compare` on the killed sweep: its finished configuration, the stale run left out
    # (neither a row nor counted as failed).
    out = run_cli("-m", "sweep.cli", "compare", "--sweep", first_parent, "--json", "--no-plot",
                  "--tracking-uri", uri, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    table = json.loads(out.stdout)
    assert table["n_failed"] == 0
    assert killed_run not in [r["run_id"] for r in table["rows"]]
    assert len(table["rows"]) == 1
    # ... and on the resumed sweep: both configurations, one of them resumed from the first.
    out = run_cli("-m", "sweep.cli", "compare", "--json", "--no-plot", "--tracking-uri", uri,
                  cwd=tmp_path)
    table = json.loads(out.stdout)
    assert out.returncode == 0 and table["n_failed"] == 0 and len(table["rows"]) == 2
