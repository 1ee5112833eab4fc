"""The metric registry (`sweep.evaluation.catalog`): a metric added in one place is computed,
accepted as a headline, sorted and judged in its direction, and documented; the directions
are those the hand-written prefix list gave before the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.evaluation.catalog import METRICS, Metric, lower_is_better

# The hand-written list the registry replaced (issue 42), kept here as the independent
# statement of the directions every existing metric name must keep.
OLD_LOWER_IS_BETTER = (
    "context_tokens_", "latency_", "time_", "index_bytes_", "index_build_", "ann_tax_",
    "ann_lost_", "quant_tax_", "n_orphans", "truncated_fraction", "n_oversize", "retrieval_tax",
    "ungraded_count", "n_ungraded", "n_retrieval_bug", "n_generation_bug", "n_oracle_fail",
    "cost_estimate_usd", "gen_", "judge_", "n_requests", "served_cost_usd", "embedding_",
    "rerank_")
PINS = Path(__file__).resolve().parents[2] / "data" / "pins" / "demo_grid_metrics.json"


def _known_names() -> set[str]:
    """Every metric name the demo grid logs, every per-question name, and the others a run
    can log (generation, served models, the ANN and quantisation taxes, per-need splits)."""
    names = {n for run in json.loads(PINS.read_text(encoding="utf-8")).values()
             for n in run["metrics"]}
    names |= set(METRICS.question_names((1, 3, 5, 10, 20), 5))
    names |= {"latency_end_to_end_p95_ms", "latency_search_p50_ms", "time_embed_s",
              "index_bytes_ann", "index_build_ann_s", "ann_tax_recall_at_5", "ann_tax_mrr",
              "ann_lost_answers", "ann_overlap_at_10", "quant_tax_mrr", "quant_overlap_at_10",
              "n_oversize_chunks", "retrieval_tax", "ungraded_count", "n_ungraded",
              "n_retrieval_bug", "n_generation_bug", "n_oracle_fail", "cost_estimate_usd",
              "gen_tokens", "judge_unparsed", "judge_cache_hits", "n_requests",
              "served_cost_usd", "embedding_tokens", "embedding_cache_hits",
              "embedding_cost_usd", "rerank_tokens", "rerank_cost_usd", "answer_accuracy_live",
              "answer_accuracy_oracle", "evidence_found_fraction", "n_scored", "n_questions",
              "recall_at_5_needs_2", "context_tokens_at_5_needs_1", "n_needs_3plus",
              "by_source/synthetic/recall_at_5", "by_source/logs/context_tokens_at_5",
              "chunk_tokens_mean", "truncated_fraction", "n_orphans"}
    return names


def test_every_known_metric_keeps_its_direction() -> None:
    names = _known_names()
    assert len(names) > 120  # the pins were read
    changed = [n for n in sorted(names) if lower_is_better(n) != n.startswith(OLD_LOWER_IS_BETTER)]
    assert changed == []
    assert lower_is_better("context_tokens_at_5") and not lower_is_better("recall_at_5")


def test_per_question_names_are_the_ones_evaluate_reports() -> None:
    names = METRICS.question_names((1, 3), 2)
    assert len(names) == len(set(names))
    assert {"mrr", "doc_mrr", "evidence_recall_at_budget", "precision_omega",
            "span_iou_at_min", "recall_at_2", "doc_recall_at_3", "passages_found_at_1"} <= set(names)
    # one per k of eval.k and eval.prompt_k for each per-k family, one for each other
    per_k = [e for e in METRICS if e.level != "run" and e.per_k]
    single = [e for e in METRICS if e.level != "run" and not e.per_k]
    assert len(names) == 3 * len(per_k) + len(single)
    assert not any(n.startswith(("latency_", "n_orphans")) for n in names)


def test_a_per_question_column_is_told_from_the_others() -> None:
    from sweep.evaluation.catalog import is_question_metric

    assert all(is_question_metric(n) for n in ("recall_at_5", "doc_mrr", "span_iou_at_min",
                                                "context_tokens_at_10", "passages_found_at_3"))
    assert not any(is_question_metric(n) for n in ("evidence_source", "first_relevant_rank",
                                                    "recall_at_5_needs_2", "latency_s", "qid"))


def test_an_entry_states_its_kind_whole() -> None:
    with pytest.raises(ValueError, match="has a computation"):
        Metric("toy", "no computation", level="chunk")
    with pytest.raises(ValueError, match="only placeholder"):
        Metric("toy_{x}", "a free placeholder", lambda q: 0.0)
    with pytest.raises(ValueError, match="registered twice"):
        METRICS.register(Metric("mrr", "again", lambda q: 0.0))


# The toy: how many of the top k are NOT relevant, per question (lower is better). Defined only
# here: registering it must be enough for the whole system to know it.
TOY = Metric("toy_misses_at_{k}", "Chunks of the top k that are not relevant (a test's toy).",
             lambda q, k: float(sum(1 for c in q.ranked_ids[:k] if c not in q.relevant)),
             lower_is_better=True)


def _case():
    """Three chunks of one document, three questions: q1 answered by a#1 (ranked second), q2
    by a#0 and a#2 (ranked first and third), q3 evidence no chunk holds (an orphan)."""
    from sweep.chunking.chunkers import Chunk
    from sweep.data.golden import GoldenItem
    from sweep.evaluation.relevance import ResolvedItem
    from sweep.retrieval.ranking import Ranking

    chunks = [Chunk("a#0", "a", 0, 0, 10, "", "", 5), Chunk("a#1", "a", 1, 12, 20, "", "", 6),
              Chunk("a#2", "a", 2, 22, 30, "", "", 4)]

    def item(qid, spans, source="evidence"):
        return ResolvedItem(GoldenItem(qid=qid, question=qid), tuple(spans),
                            frozenset(s[0] for s in spans), source)

    items = [item("q1", [("a", 12, 18)]), item("q2", [("a", 0, 10), ("a", 22, 30)]),
             item("q3", [], "none")]
    rankings = [Ranking((0, 1, 2), (0.9, 0.8, 0.7)), Ranking((0, 1, 2), (0.9, 0.8, 0.7)),
                Ranking((2,), (0.9,))]
    return items, chunks, rankings


def test_a_metric_registered_in_one_place_is_computed_headlined_sorted_and_judged() -> None:
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.decide.runs import rank_rows
    from sweep.decide.stats import decide_verdict
    from sweep.dev.reference import metrics_page
    from sweep.evaluation.evaluate import EvalSpec, evaluate

    with pytest.raises(SweepError, match="is not a metric of this run"):
        check_config(compose(["eval.headline=toy_misses_at_5"]))
    items, chunks, rankings = _case()
    with METRICS.added(TOY):
        summary, rows = evaluate(items, chunks, rankings, EvalSpec(k=(1, 3), prompt_k=2))
        # Computed for the scored questions, counted by hand, and averaged over them only.
        by_qid = {r["qid"]: r for r in rows}
        assert [by_qid["q1"][f"toy_misses_at_{k}"] for k in (1, 2, 3)] == [1.0, 1.0, 2.0]
        assert [by_qid["q2"][f"toy_misses_at_{k}"] for k in (1, 2, 3)] == [0.0, 1.0, 1.0]
        assert "toy_misses_at_1" not in by_qid["q3"]  # an orphan is not scored as 0
        assert summary["toy_misses_at_3"] == pytest.approx(1.5)
        assert summary["toy_misses_at_1"] == pytest.approx(0.5)
        # Accepted as the headline, sorted lowest first, and "worse" means higher.
        check_config(compose(["eval.headline=toy_misses_at_5"]))
        runs = [{"run_id": "a", "toy_misses_at_5": 2.0}, {"run_id": "b", "toy_misses_at_5": 0.5}]
        ranked = rank_rows(runs, "toy_misses_at_5", "cost", "latency")
        assert [r["run_id"] for r in ranked] == ["b", "a"]
        assert not decide_verdict(50, 0.4, 0.1, 0.7, 0.001, "toy_misses_at_5").tied
        assert decide_verdict(50, -0.4, -0.7, -0.1, 0.001, "toy_misses_at_5").tied
        # Documented on the generated reference page.
        assert "toy_misses_at_{k}" in metrics_page()
    assert "toy_misses_at_{k}" not in metrics_page()
    assert not lower_is_better("toy_misses_at_5")


def test_a_plan_orders_and_names_the_values_as_compute_does() -> None:
    """A run of per-k entries is computed k by k, a single entry in its place; the plan is made
    once and gives each question's values in the order of its names."""
    from sweep.evaluation.catalog import Plan, compute

    entries = [Metric("one", "a", lambda v: v * 10), Metric("b_{k}", "b", lambda v, k: v + k),
               Metric("c_{k}", "c", lambda v, k: v - k), Metric("two", "d", lambda v: -v),
               Metric("e_{k}", "e", lambda v, k: v * k)]
    plan = Plan(entries, (1, 3))
    assert plan.names == ["one", "b_1", "c_1", "b_3", "c_3", "two", "e_1", "e_3"]
    assert plan.values(2) == [20, 3, 1, 5, -1, -2, 2, 6]
    assert plan.values(5) == [50, 6, 4, 8, 2, -5, 5, 15]
    assert compute(entries, 2, (1, 3)) == dict(zip(plan.names, plan.values(2), strict=True))
