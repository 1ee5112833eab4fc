"""``sweep rerun``: choosing sections to replace, the experiment files, the agreement figures,
and (slow) a static-model sweep re-run on its best two with the transformer and generation."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from helpers import run_cli
from sweep.decide.rerun import agreement, experiment_files, group_overrides


def test_group_overrides_are_bare_section_choices() -> None:
    assert group_overrides(["embedding=minilm", "generation=openai", "eval.prompt_k=3",
                            "+experiment=x", "hydra/launcher=joblib", "chunk.size=1"]) == {
        "embedding", "generation", "experiment"}


def test_experiment_files_drop_the_replaced_sections_and_keep_rank_order() -> None:
    config = {"chunk": {"boundary": "heading", "size": 256, "overlap": 0, "header": "path"},
              "embedding": {"name": "minilm_static"}, "retrieval": {"method": "dense"},
              "rerank": {"method": "none"}, "eval": {"prompt_k": 5},
              "tracking": {"uri": "sqlite:///x"}}
    other = {**config, "chunk": {**config["chunk"], "size": 128}}
    files = experiment_files([config, other], ["embedding=minilm", "eval.prompt_k=3"], None,
                             "test")
    assert list(files) == ["r01-heading-256-ov0-path-minilm-static",
                           "r02-heading-128-ov0-path-minilm-static"]
    first = files["r01-heading-256-ov0-path-minilm-static"]
    assert first.startswith("# @package _global_\n# test, rank 1\n")
    body = yaml.safe_load(first)
    assert set(body) == {"chunk", "retrieval", "rerank", "eval"}  # embedding replaced
    assert body["chunk"]["size"] == 256 and body["eval"] == {"prompt_k": 5}


def test_agreement_counts_concordant_pairs_by_hand() -> None:
    # coarse order a > b > c > d; fine values: a 0.9, b 0.7, c 0.8, d 0.1
    # pairs: ab +, ac +, ad +, bc -, bd +, cd +  -> 5 of 6 agree
    a = agreement(["a", "b", "c", "d"], {"a": 0.9, "b": 0.7, "c": 0.8, "d": 0.1}, True)
    assert a == {"n": 4, "pairs": 6, "pairs_agree": pytest.approx(5 / 6), "top1_same": True}
    # lower is better (e.g. latency): the same values mean the opposite
    b = agreement(["a", "b", "c", "d"], {"a": 0.9, "b": 0.7, "c": 0.8, "d": 0.1}, False)
    assert b["pairs_agree"] == pytest.approx(1 / 6) and b["top1_same"] is False
    # ties in the fine values count for neither side; a tie at the top is still "same"
    c = agreement(["x", "y"], {"x": 0.5, "y": 0.5}, True)
    assert c == {"n": 2, "pairs": 0, "pairs_agree": None, "top1_same": True}


def test_rerun_needs_a_positive_top(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep.cli", "rerun", "--top", "0", cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.strip() == "error: --top 0: must be >= 1"


@pytest.mark.slow
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
