"""retrieval.depth below eval.prompt_k names eval.prompt_k, the key the user set, not eval.k
(issue 14, item 9)."""

from __future__ import annotations

import pytest

from sweep.common.errors import SweepError
from sweep.config.checks import check_config
from sweep.config.compose import compose


def test_depth_below_prompt_k_names_prompt_k() -> None:
    cfg = compose(["eval.prompt_k=200", "retrieval.depth=100", "eval.headline=mrr"])
    with pytest.raises(SweepError) as err:
        check_config(cfg)
    assert "eval.prompt_k (200)" in str(err.value)
    assert "eval.k" not in str(err.value).replace("eval.k=", "")


def test_depth_below_largest_k_names_eval_k() -> None:
    cfg = compose(["eval.k=[1,150]", "retrieval.depth=100"])
    with pytest.raises(SweepError) as err:
        check_config(cfg)
    assert "eval.k (150)" in str(err.value)


def test_rerank_pool_bounds_the_depth_only_when_a_reranker_runs() -> None:
    # rerank=none keeps its default pool (50): a shallow search must still be allowed.
    check_config(compose(["retrieval.depth=10"]))
    with pytest.raises(SweepError) as err:
        check_config(compose(["rerank=cross_encoder", "retrieval.depth=10"]))
    assert "rerank.pool=50 must be between 1 and retrieval.depth=10" in str(err.value)
