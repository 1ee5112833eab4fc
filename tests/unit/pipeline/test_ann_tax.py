"""The ANN tax on a real set: the demo corpus at 128-token chunks (313 chunks) embedded with
the bundled MiniLM, searched exactly and through a deliberately starved HNSW graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import job_of
from sweep.application.job import JobResult, run_job
from sweep.pipeline import run as pipeline
from sweep.retrieval.index import ExactIndex
from sweep.retrieval.ranking import tiebreak_order

STARVED = ["index=hnsw", "index.M=2", "index.ef_construction=2", "index.ef_search=1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, JobResult]:
    cache = tmp_path_factory.mktemp("cache")
    base = ["chunk.size=128", f"cache.dir={cache}", "eval.latency_sample=0"]
    return {"exact": run_job(job_of(base), progress=False),
            "starved": run_job(job_of([*base, *STARVED, "eval.latency_sample=3"]),
                                  progress=False)}


def _metrics(result: JobResult) -> dict[str, Any]:
    return result.report["metrics"]


def test_exact_search_reports_no_index_metrics(runs: dict[str, JobResult]) -> None:
    assert not [k for k in _metrics(runs["exact"]) if k.startswith("ann_")]
    assert "index_bytes_ann" not in _metrics(runs["exact"])


def test_starved_hnsw_shows_a_measurable_tax(runs: dict[str, JobResult]) -> None:
    exact, starved = _metrics(runs["exact"]), _metrics(runs["starved"])
    assert starved["n_chunks"] == exact["n_chunks"] == 313
    assert 0 < starved["ann_overlap_at_10"] < 0.9
    # The tax is the difference between two independent runs: this one searched exactly.
    for name in ("recall_at_5", "mrr"):
        assert starved[f"ann_tax_{name}"] == pytest.approx(exact[name] - starved[name])
    assert starved["ann_tax_recall_at_5"] > 0.05
    assert starved["ann_lost_at_prompt_k"] >= 1
    assert starved["index_bytes_ann"] > 0 and starved["index_build_ann_s"] >= 0
    assert "latency_dense_search_p50_ms" in starved  # timed through the index
    json.dumps(runs["starved"].report)


def test_per_question_ranks_are_the_exact_and_the_index_run(runs: dict[str, JobResult]
                                                            ) -> None:
    exact = {r["qid"]: r for r in runs["exact"].rows}
    flips = 0
    for row in runs["starved"].rows:
        if row["status"] != "scored":
            continue
        assert row["exact_first_relevant_rank"] == exact[row["qid"]]["first_relevant_rank"]
        assert row["index_first_relevant_rank"] == row["first_relevant_rank"]
        top = lambda r: r is not None and r <= 5  # noqa: E731
        was, now = top(row["exact_first_relevant_rank"]), top(row["first_relevant_rank"])
        assert row["ann_flip"] == ("lost" if was and not now else
                                   "gained" if now and not was else "")
        flips += row["ann_flip"] == "lost"
    assert flips == _metrics(runs["starved"])["ann_lost_at_prompt_k"]


def test_an_exact_index_measures_no_tax(runs: dict[str, JobResult], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The measuring path itself, given an index that is in fact exact: overlap 1, tax 0."""
    def exact_index(spec: Any, chunks: Any, vecs: Any) -> ExactIndex:
        return ExactIndex(vecs, tiebreak_order([c.chunk_id for c in chunks]))

    monkeypatch.setattr(pipeline, "index_for", exact_index)
    cache = Path(runs["exact"].report["config"]["cache"]["dir"])
    got = _metrics(run_job(job_of(["chunk.size=128", f"cache.dir={cache}",
                                       "eval.latency_sample=0", "index=hnsw"]), progress=False))
    assert {k: v for k, v in got.items() if k.startswith("ann_overlap")} == {
        f"ann_overlap_at_{k}": 1.0 for k in (1, 3, 5, 10)}
    assert got["ann_tax_recall_at_5"] == 0.0 and got["ann_tax_mrr"] == 0.0
    assert got["ann_lost_at_prompt_k"] == got["ann_gained_at_prompt_k"] == 0
    assert got["recall_at_5"] == _metrics(runs["exact"])["recall_at_5"]
