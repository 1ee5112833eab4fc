"""``sweep rerun``: choosing sections to replace, the experiment files, the agreement figures,
with hand-made inputs (the end-to-end coarse-to-fine run: tests/e2e/test_rerun_e2e.py)."""

from __future__ import annotations

import pytest
import yaml

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


