"""`sweep questions import --against-sweep latest` on a real sweep in a real MLflow store (slow):
a BM25 sweep over two chunk sizes of the demo, then the demo's own questions imported as a log
against it. The best and the runner-up are the sweep's (its ranking), and the candidates marked
are those where the two configurations' first chunks, computed here by running each
configuration through the pipeline, share no text."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers import DEMO, job_of, run_cli
from sweep.application import job as pipeline
from sweep.pipeline import memo
from sweep.questions.locate import DEPTH, places_disagree
from sweep.questions.merge import normalise

pytestmark = pytest.mark.slow


def test_import_ranks_by_the_sweeps_best_and_runner_up(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    res = run_cli("-m", "sweep", "-m", "retrieval=bm25", "chunk.size=48,256",
                  "chunk.overlap=0", "retrieval.diagnose=false", "eval.latency_sample=0",
                  f"tracking.uri={uri}", f"hydra.sweep.dir={tmp_path}/multirun",
                  f"cache.dir={tmp_path}/cache", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    reports = {json.loads(p.read_text())["config"]["chunk"]["size"]: json.loads(p.read_text())
               for p in (tmp_path / "multirun").glob("*/report.json")}
    assert set(reports) == {48, 256}

    golden = [json.loads(x) for x in (DEMO / "golden.jsonl").read_text().splitlines()]
    log = tmp_path / "log.csv"
    with log.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question"])
        w.writerows([g["question"]] for g in golden)
    res = run_cli("-m", "sweep.cli", "questions", "import", str(log),
                  f"cache.dir={tmp_path}/cache", "--out", str(tmp_path / "q.jsonl"),
                  "--corpus", str(DEMO / "corpus"), "--no-near", "--against-sweep", "latest",
                  "--sweep-tracking-uri", uri, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads((tmp_path / "q.import_report.json").read_text())
    step = report["priority"]["steps"]["disagreement"]
    assert step["between"] == "best and runner-up"
    best_size, other = (int(step[k]["config"].removeprefix("chunk.size="))
                        for k in ("best", "runner_up"))
    assert {best_size, other} == {48, 256}
    # the sweep's order: the best has the higher ranking metric (ties go to cost, latency)
    assert reports[best_size]["metrics"]["recall_at_5"] >= \
        reports[other]["metrics"]["recall_at_5"]
    queue = [json.loads(x) for x in (tmp_path / "q.jsonl").read_text().splitlines()]
    marked = {normalise(c["question"]) for c in queue
              if "the last sweep's best and runner-up disagree" in c["reason"]}
    assert step["by_source"] == {"log": {"candidates": len(queue), "disagree": len(marked)}}
    assert "where the last sweep's best and runner-up disagree" in res.stdout

    # independently: each configuration run through the pipeline on the same questions
    places = {}
    for size in (best_size, other):
        memo.clear_memo()
        try:
            r = pipeline.run_job(job_of([
                "retrieval=bm25", f"chunk.size={size}", "chunk.overlap=0",
                "retrieval.diagnose=false", "eval.latency_sample=0",
                f"cache.dir={tmp_path}/cache"]), progress=False)
        finally:
            memo.clear_memo()
        places[size] = {normalise(item.item.question): [
            (r.chunks[i].doc_id, r.chunks[i].start, r.chunks[i].end) for i in rk.indices[:DEPTH]]
            for item, rk in zip(r.resolved, r.rankings, strict=True)}
    expected = {q for q in places[best_size]
                if places_disagree(places[best_size][q], places[other][q])}
    assert marked == expected
    assert 0 < len(marked) < len(queue)  # the two sizes agree on some, not all
