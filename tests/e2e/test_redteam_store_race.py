"""Several processes opening one NEW SQLite MLflow store at once: the store is created and
migrated once, under a lock on its path, and every process then works on it (issue 14,
item 1)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # four MLflow imports at once: ~30 s on a busy machine

CHILD = textwrap.dedent("""
    import sys, time
    from sweep.outputs import tracking
    uri, start, n = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    while time.time() < start:  # all children reach the store in the same instant
        time.sleep(0.005)
    client = tracking.client_for(uri)
    exp = tracking.ensure_experiment(client, uri, "race")
    run = client.create_run(exp, run_name=f"child-{n}")
    client.set_terminated(run.info.run_id)
    print("ok", n)
""")


def test_parallel_first_use_of_a_store(tmp_path: Path) -> None:
    import time

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    start = time.time() + 12  # after every child has imported MLflow
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, uri, str(start), str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("race")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [f"child-{i}" for i in range(4)]
