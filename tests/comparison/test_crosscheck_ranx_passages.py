"""recall@k of the hand-made multi-passage item (tests/unit/evaluation/test_passages.py) against
ranx: 2 of 3 passages in the top 4 is recall 0.667, and the depth where ranx's recall reaches 1
is where full recall does. Apart from the unit tests: ranx compiles its kernels (~20 s)."""

from __future__ import annotations

import pytest

from sweep.evaluation import metrics as m

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast:Warning")


def test_recall_agrees_with_ranx() -> None:
    ranx = pytest.importorskip("ranx")
    ranked = ["p1#0", "x", "p2#1", "y", "p3#0"]
    qrels = ranx.Qrels({"q": {"p1#0": 1, "p2#1": 1, "p3#0": 1}})
    run = ranx.Run({"q": {cid: 1.0 - 0.1 * i for i, cid in enumerate(ranked)}})
    for k in (1, 3, 4, 5):
        theirs = ranx.evaluate(qrels, run, f"recall@{k}")
        assert m.recall_at_k(ranked, {"p1#0", "p2#1", "p3#0"}, k) == pytest.approx(theirs)
    # ranx has no full recall; at the depth where all three are in, recall 1 <=> full recall 1
    assert ranx.evaluate(qrels, run, "recall@5") == 1.0
    assert m.full_recall_at_k(ranked, [{"p1#0"}, {"p2#1"}, {"p3#0"}], 5) == 1.0
