"""Generation end to end (slow): an extractive sweep with the real model and a real MLflow store."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import mlflow_runs, run_cli

pytestmark = pytest.mark.slow  # conftest marks all of tests/e2e/ slow; said here for the reader


def test_extractive_sweep_logs_oracle_live_and_tax_per_configuration(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    res = run_cli("-m", "sweep", "-m", "chunk.size=128,512", "generation=extractive",
                  f"tracking.uri={uri}", f"hydra.sweep.dir={tmp_path}/multirun",
                  f"cache.dir={tmp_path}/cache", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    _, runs = mlflow_runs(uri)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2
    for child in children:
        m = child.data.metrics
        assert child.info.status == "FINISHED"
        assert 0 <= m["answer_accuracy_live"] <= 1 and 0 <= m["answer_accuracy_oracle"] <= 1
        assert m["retrieval_tax"] == pytest.approx(m["answer_accuracy_oracle"]
                                                   - m["answer_accuracy_live"])
        assert m["ungraded_count"] == 5  # the demo's items without answer_must_mention
        assert sum(m[f"n_{d}"] for d in ("ok", "retrieval_bug", "generation_bug",
                                         "oracle_fail", "ungraded")) == 60
    for job in (tmp_path / "multirun").glob("[0-9]*"):
        rows = (job / "per_question.csv").read_text().splitlines()
        assert rows[0].split(",")[15:18] == ["diagnosis", "oracle_correct", "live_correct"]
