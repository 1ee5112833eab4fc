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
