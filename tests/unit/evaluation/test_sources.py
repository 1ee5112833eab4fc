"""Per-source scores (evaluation/sources.py) on hand-made rows."""

from __future__ import annotations

import math

import pytest

from sweep.data.golden import GoldenItem
from sweep.evaluation.relevance import ResolvedItem
from sweep.evaluation.sources import (
    add_source_columns,
    headline_names,
    item_smells,
    parse_metric,
    score_by_source,
    source_metrics,
    summary_line,
)

ROWS = [
    {"source": "log", "status": "scored", "recall_at_5": 1.0, "mrr": 0.5, "smell": 0.25},
    {"source": "log", "status": "scored", "recall_at_5": 0.0, "mrr": 0.0, "smell": None},
    {"source": "log", "status": "orphan", "smell": 0.75},  # no metric: not averaged as 0
    {"source": "synthetic", "status": "scored", "recall_at_5": 1.0, "mrr": 1.0, "smell": 1.0},
    {"source": "unspecified", "status": "doc_only", "doc_mrr": 1.0, "smell": None},
]


def test_means_over_the_rows_that_have_the_metric() -> None:
    got = score_by_source(ROWS, ["recall_at_5", "mrr", "doc_mrr"])
    assert list(got) == ["log", "synthetic", "unspecified"]
    log = got["log"]
    assert (log["n"], log["share"], log["n_scored"]) == (3, 3 / 5, 2)
    assert log["metrics"] == {"recall_at_5": 0.5, "mrr": 0.25}
    # smell: mean of the defined ones (0.25, 0.75), the None one counted apart
    assert (log["smell_mean"], log["n_smell"]) == (0.5, 2)
    assert got["synthetic"]["metrics"] == {"recall_at_5": 1.0, "mrr": 1.0}
    assert got["unspecified"] == {"n": 1, "share": 0.2, "n_scored": 0, "smell_mean": None,
                                  "n_smell": 0, "metrics": {"doc_mrr": 1.0}}


def test_flat_metric_names_only_when_mixed() -> None:
    got = score_by_source(ROWS, ["recall_at_5"])
    flat = source_metrics(got)
    assert flat["by_source/log/recall_at_5"] == 0.5
    assert flat["by_source/log/n"] == 3.0 and flat["by_source/log/share"] == 0.6
    assert flat["by_source/synthetic/smell"] == 1.0
    assert "by_source/unspecified/smell" not in flat  # no defined smell: no figure, not 0
    assert parse_metric("by_source/log/recall_at_5") == ("log", "recall_at_5")
    assert parse_metric("recall_at_5") is None
    one = score_by_source([r for r in ROWS if r["source"] == "log"], ["recall_at_5"])
    assert source_metrics(one) == {} and summary_line(one, "recall_at_5") is None
    assert summary_line(got, "recall_at_5") == (
        "log n=3 (60%) recall_at_5=0.500 smell=0.50 · synthetic n=1 (20%) recall_at_5=1.000 "
        "smell=1.00 · unspecified n=1 (20%) recall_at_5=- smell=-")


def test_source_and_smell_columns_from_the_resolved_spans() -> None:
    text = "Press the reset button on the router for ten seconds."
    items = [ResolvedItem(GoldenItem("q1", "how do i reset the router", source="synthetic"),
                          (("d", 0, len(text)),), frozenset({"d"}), "evidence"),
             ResolvedItem(GoldenItem("q2", "wifi keeps dropping"), (("d", 0, 5),),
                          frozenset({"d"}), "evidence")]
    rows: list[dict] = [{}, {}]
    add_source_columns(rows, items, item_smells(items, {"d": text}))
    # q1: {reset, router} both in the span -> 1.0; q2: {wifi, keeps, dropping} vs "Press"
    assert rows == [{"source": "synthetic", "smell": 1.0},
                    {"source": "unspecified", "smell": 0.0}]


def test_headline_names_cover_the_table() -> None:
    names = headline_names((1, 5), 3, "evidence_recall_at_5")
    assert names[0] == "evidence_recall_at_5" and len(names) == len(set(names))
    assert {"recall_at_3", "hit_at_1", "mrr", "ndcg_at_3"} <= set(names)


@pytest.mark.parametrize("bad", [math.nan, None, True, "0.5"])
def test_non_numbers_are_not_averaged(bad: object) -> None:
    rows = [{"source": "log", "recall_at_5": 1.0}, {"source": "log", "recall_at_5": bad}]
    assert score_by_source(rows, ["recall_at_5"])["log"]["metrics"] == {"recall_at_5": 1.0}
