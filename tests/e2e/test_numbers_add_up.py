"""The numbers add up (issue 30): for every retrieval unit and every index kind that runs on
this machine (Chroma needs a server: tests/e2e/test_chroma_index.py), each metric the job
reports is the mean of its per_question.csv column over the questions it applies to, and the
questions it does not apply to are counted, never dropped or scored as zero.

The demo at 64-token chunks with ``eval.min_overlap=0.9``: 3 of its 60 questions have evidence
that no chunk covers to 90%, so they are orphans with chunks as the unit (a parent section
covers them). Here because it embeds the demo with the real MiniLM, then runs 21 jobs. The means are recomputed from the CSV
file as written (the csv module, not the code that wrote it)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from helpers import job_of
from sweep.application.job import run_job
from sweep.outputs.report import write_per_question

UNITS = ("chunk", "parent", "window")
INDEXES = ("exact", "hnsw", "ivf_flat", "ivf_pq", "sq8", "fp16", "binary")
BASE = ["chunk.size=64", "eval.min_overlap=0.9", "eval.latency_sample=0"]
# Per-question metrics that every scored configuration reports: the intersection must hold them.
CORE = {"recall_at_5", "mrr", "ndcg_at_5", "hit_at_5", "evidence_recall_at_5",
        "span_iou_at_5", "context_tokens_at_5", "evidence_recall_at_budget", "doc_mrr"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("unit", UNITS)
def test_reported_metrics_are_the_means_of_per_question(unit: str, index: str, cache: Path,
                                                        tmp_path: Path) -> None:
    result = run_job(job_of([*BASE, f"cache.dir={cache}", f"retrieval.unit={unit}",
                                 f"index={index}"]), progress=False)
    metrics = result.report["metrics"]
    rows = _read(write_per_question(tmp_path, result.rows))
    statuses = [r["status"] for r in rows]
    # every golden question is a row; the orphans are counted, with their reason
    assert len(rows) == metrics["n_questions"] == 60
    assert statuses.count("orphan") == metrics["n_orphans"] == (3 if unit == "chunk" else 0)
    assert statuses.count("scored") == metrics["n_scored"] == 60 - metrics["n_orphans"]
    assert all(r["orphan_reason"] for r in rows if r["status"] == "orphan")
    checked = set()
    for name, value in metrics.items():
        if name not in rows[0] or name.startswith("n_"):
            continue
        cells = [r[name] for r in rows if r[name] != ""]
        assert cells, name
        mean = math.fsum(float(c) for c in cells) / len(cells)
        assert value == pytest.approx(mean, rel=1e-9, abs=1e-12), name
        checked.add(name)
        # a chunk metric is blank for an orphan, never a zero that would lower the mean
        if name in CORE - {"doc_mrr"}:
            assert len(cells) == metrics["n_scored"], name
    assert checked >= CORE, sorted(CORE - checked)
