"""Context assembly (issue 47) on a real run of the demo set (BM25, no model): the defaults
add nothing, the assembled context's recall is the evidence recall at prompt_k when only
the order changes, a budget holds, and the generation half reads the assembled context."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import job_of
from sweep.application import job as pipeline
from sweep.evaluation.assembled import NAMES
from sweep.pipeline import memo
from sweep.pipeline.run import gen_items
from sweep.retrieval.assembly import AssemblySpec

BASE = ["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=0"]


def run(tmp_path: Path, *overrides: str) -> pipeline.JobResult:
    memo.clear_memo()
    try:
        return pipeline.run_job(job_of([*BASE, f"cache.dir={tmp_path / 'cache'}",
                                        *overrides]), progress=False)
    finally:
        memo.clear_memo()


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> pipeline.JobResult:
    return run(tmp_path_factory.mktemp("assembly"))


def test_the_defaults_report_nothing_new(default: pipeline.JobResult) -> None:
    assert not any(n in default.report["metrics"] for n in NAMES)
    assert not any("assembled_ids" in r for r in default.rows)


def test_order_alone_keeps_the_evidence_recall_at_prompt_k(default: pipeline.JobResult,
                                                           tmp_path: Path) -> None:
    got = run(tmp_path, "assembly.order=lost_in_middle")
    metrics = got.report["metrics"]
    prompt_k = 5
    assert metrics["assembled_evidence_recall"] == pytest.approx(
        default.report["metrics"][f"evidence_recall_at_{prompt_k}"], abs=1e-12)
    scored = [r for r in got.rows if r["status"] == "scored"]
    # BM25 ranks only chunks sharing a word with the question: some rank fewer than 5
    assert scored and all(r["assembled_chunks"] == min(prompt_k, len(r["retrieved_ids"].split()))
                          for r in scored)
    assert metrics["assembled_tokens"] == pytest.approx(
        sum(r["assembled_tokens"] for r in scored) / len(scored))
    # the same chunks as the top 5, folded: 1st 3rd 5th ... 4th 2nd
    for row in scored:
        top = row["retrieved_ids"].split()[:prompt_k]
        assert row["assembled_ids"].split() == top[0::2] + top[1::2][::-1]
    assert any(r["assembled_chunks"] == 5 for r in scored)


def test_a_budget_holds_and_costs_recall(default: pipeline.JobResult, tmp_path: Path) -> None:
    got = run(tmp_path, "assembly.budget_tokens=300")
    scored = [r for r in got.rows if r["status"] == "scored"]
    assert all(r["assembled_tokens"] <= 300 for r in scored)
    assert any(r["assembled_chunks"] < 5 for r in scored)
    m = got.report["metrics"]
    assert m["assembled_evidence_recall"] <= default.report["metrics"]["evidence_recall_at_5"]
    assert got.report["config_hash"] != default.report["config_hash"]
    # the retrieval metrics are the ranking's, whatever the assembly
    assert m["recall_at_5"] == default.report["metrics"]["recall_at_5"]
    # what the generation half reads is what was scored
    docs, _ = memo.load_corpus_cached(job_of([*BASE]).corpus, None)
    items = gen_items(got, 5, docs, assembly=AssemblySpec(budget_tokens=300))
    by_qid = {r["qid"]: r for r in scored}
    ids = {c.chunk_id: c for c in got.chunks}
    for item in items:
        assert [p.text for p in item.live] == [
            ids[i].text for i in by_qid[item.qid]["assembled_ids"].split()]
