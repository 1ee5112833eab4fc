"""Composing the configuration (Hydra's compose API, no job) and the checks that span keys: defaults, group options, and one-line errors that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import DEMO
from sweep.common.errors import SweepError
from sweep.config.checks import check_config
from sweep.config.compose import compose


def test_default_config_composes_with_absolute_demo_paths() -> None:
    cfg = compose([])
    assert Path(cfg.corpus.path) == DEMO / "corpus"
    assert Path(cfg.golden.path) == DEMO / "golden.jsonl"
    assert cfg.chunk.boundary.value == "recursive"
    assert cfg.eval.headline == "recall_at_5"
    assert cfg.tracking.uri.startswith("sqlite:////")


def test_experiment_chunking_grid_is_on_the_search_path() -> None:
    cfg = compose(["experiment=chunking_grid"])
    assert cfg.eval.headline == "evidence_recall_at_budget"


def test_group_option_changes_the_embedding_family() -> None:
    cfg = compose(["embedding=minilm_static"])
    assert cfg.embedding.family.value == "model2vec_distill"


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("chunk.sise=3", ["sise"]),
        ("chunk.boundary=words", ["words", "fixed", "sentence", "paragraph", "heading",
                                  "recursive"]),
        ("chunk.header=everything", ["everything", "none", "title", "path"]),
        ("chunk.size=abc", ["abc", "chunk.size"]),
        ("embedding=nonexistent", ["nonexistent", "minilm"]),
    ],
)
def test_bad_override_fails_before_work_naming_the_key(override: str, words: list[str]) -> None:
    with pytest.raises(SweepError) as err:
        compose([override])
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("override", "words"),
    [
        (["chunk.overlap=254"], ["chunk.overlap=254", "smaller than chunk.size=254"]),
        (["chunk.size=0"], ["chunk.size=0", "at least 1"]),
        (["chunk.overlap=-1"], ["chunk.overlap=-1"]),
        (["eval.k=[0,5]"], ["eval.k", ">= 1"]),
        (["eval.min_overlap=1.5"], ["eval.min_overlap"]),
        (["retrieval.depth=3"], ["retrieval.depth=3", "largest eval.k"]),
        (["corpus.on_error=ignore"], ["corpus.on_error", "raise, skip"]),
    ],
)
def test_impossible_values_are_one_line_errors(override: list[str], words: list[str]) -> None:
    cfg = compose(override)
    with pytest.raises(SweepError) as err:
        check_config(cfg)
    for word in words:
        assert word in str(err.value)
