"""A multirun queues each child run in its MLflow worker and starts the next job at once; a
child run that then fails to log still says so: one line naming the configuration, its
report.json with ``tracking_error``, exit 1 at the sweep's end, and the other run logged."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import mlflow_runs, run_cli

# The real sweep, with MLflow's artifact upload failing for job 0's files (patched before the
# worker forks, so the worker has it).
FAILING_UPLOAD = textwrap.dedent("""
    import pathlib, sys
    from mlflow import MlflowClient

    original = MlflowClient.log_artifact

    def failing(self, run_id, local_path, *args, **kwargs):
        if pathlib.Path(local_path).parent.name == "0":
            raise OSError(28, "No space left on device")
        return original(self, run_id, local_path, *args, **kwargs)

    MlflowClient.log_artifact = failing
    sys.argv = ["sweep", *sys.argv[1:]]
    from sweep.__main__ import main
    main()
""")


def test_a_queued_child_run_that_fails_is_reported_and_the_sweep_exits_1(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sweep = tmp_path / "sweep"
    res = run_cli("-c", FAILING_UPLOAD, "-m", "chunk.size=128,256", "retrieval=bm25",
                  "retrieval.diagnose=false", f"tracking.uri={uri}",
                  f"cache.dir={tmp_path}/cache", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert res.returncode == 1, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    reason = (f"tracking.uri={uri}: logging the run failed (OSError: [Errno 28] No space left on "
              "device) (the report is kept in the job folder; set tracking.enabled=false to "
              "skip)")
    first = json.loads((sweep / "0" / "report.json").read_text())
    second = json.loads((sweep / "1" / "report.json").read_text())
    assert first["tracking_error"] == reason and first["status"] == "FINISHED"
    assert "tracking_error" not in second
    name = "recursive-128-ov0-none-minilm-bm25"  # the run name: the defaults, size 128
    assert first["config"]["chunk"]["size"] == 128
    # Hydra's log (stdout) names the configuration when the error comes back (during job 1,
    # or at the end)
    lines = [ln for ln in res.stdout.splitlines() if "was not logged to MLflow" in ln]
    assert len(lines) == 1 and lines[0].endswith(
        f"configuration {name} ({sweep / '0'}) was not logged to MLflow: {reason}"), lines
    assert res.stderr.strip().splitlines()[-1] == (
        "error: 1 of 2 configurations were not logged to MLflow (their reports are in the "
        f"sweep folder); first: {name} ({sweep / '0'}): {reason}")
    _, runs = mlflow_runs(uri)
    children = {r.data.params["chunk.size"]: r.info.status for r in runs
                if r.data.tags.get("chunk_sweep.role") == "config"}
    assert children == {"128": "FAILED", "256": "FINISHED"}
