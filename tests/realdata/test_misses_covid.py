"""misses.html stays small on a real golden set: COVID-QA, 1,380 questions (BM25, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import import_covid, run_cli

pytestmark = pytest.mark.realdata


def test_misses_page_is_bounded_on_covid_qa(shared_data: Path, tmp_path: Path) -> None:
    import_covid(shared_data, tmp_path)
    res = run_cli("-m", "sweep", "retrieval=bm25", "retrieval.diagnose=false",
                  "eval.latency_sample=0", f"corpus.path={tmp_path}/d/corpus",
                  f"golden.path={tmp_path}/d/golden.jsonl", "corpus.name=covid",
                  "golden.name=covid", f"cache.dir={tmp_path}/cache", "tracking=off",
                  f"hydra.run.dir={tmp_path}/run", cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    page = (tmp_path / "run" / "misses.html").read_text(encoding="utf-8")
    data = json.loads((tmp_path / "run" / "misses.json").read_text(encoding="utf-8"))
    report = json.loads((tmp_path / "run" / "report.json").read_text(encoding="utf-8"))
    assert len(data["questions"]) == 1380
    n_missed = int(report["metrics"]["n_misses"])
    # Every missed question is one collapsed <details>; the found ones are one list.
    assert page.count('<details id="q-') == n_missed > 100
    # About 2.3 KB per missed question (a 480-character window and the top k): bounded.
    assert len(page.encode()) < 3_000 * n_missed + 200_000
