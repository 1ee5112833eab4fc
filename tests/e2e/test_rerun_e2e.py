"""Coarse to fine end to end (slow): a static-model sweep, then `sweep rerun` of its best two
with MiniLM and generation."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow  # conftest marks all of tests/e2e/ slow; said here for the reader


def test_static_sweep_then_best_two_with_minilm_and_generation(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = [f"tracking.uri={uri}", f"cache.dir={tmp_path}/cache", "eval.latency_sample=0"]
    res = run_cli("-m", "sweep", "-m", "chunk.size=128,256", "chunk.boundary=heading,fixed",
                  "embedding=minilm_static", f"hydra.sweep.dir={tmp_path}/coarse", *common,
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    res = run_cli("-m", "sweep.cli", "rerun", "--top", "2", "--tracking-uri", uri,
                  "embedding=minilm", "generation=extractive", "eval.latency_sample=0",
                  f"cache.dir={tmp_path}/cache", f"hydra.sweep.dir={tmp_path}/fine",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ranking before -> after (recall_at_5):" in res.stdout
    assert "agreement: " in res.stdout

    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exps = [e.experiment_id for e in client.search_experiments()]
    runs = client.search_runs(exps, max_results=100)
    parents = sorted((r for r in runs if r.data.tags.get("chunk_sweep.role") == "sweep"),
                     key=lambda r: r.info.start_time)
    assert len(parents) == 2
    fine = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[1].info.run_id]
    assert len(fine) == 2
    for child in fine:
        assert child.data.params["embedding.name"] == "minilm"
        assert child.data.params["generation.method"] == "extractive"
        assert "retrieval_tax" in child.data.metrics
