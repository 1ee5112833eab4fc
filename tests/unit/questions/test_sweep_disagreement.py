"""Disagreement between a finished sweep's best and runner-up (issue 27): places compared by
where their text lies (each configuration chunks the corpus its own way), the reason names the
two, coverage is kept; and a configuration re-run for the queue ranks as a sweep of it does."""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers import DEMO
from sweep.application import job as pipeline
from sweep.application.questions import config_places
from sweep.config.compose import compose, config_of_run, to_container
from sweep.config.specs import build_job_spec
from sweep.pipeline import memo
from sweep.questions.locate import DEPTH, places_disagree, with_sweep_disagreement
from sweep.questions.merge import Candidate
from sweep.questions.priority import Signals, prioritise


def test_places_agree_when_a_first_lies_among_the_others_first_five() -> None:
    a = [("d1", 0, 100), ("d2", 0, 50)]
    assert places_disagree(a, [("d3", 0, 10), ("d1", 90, 200)]) is False  # text shared
    assert places_disagree(a, [("d3", 0, 10), ("d1", 100, 200)]) is True  # touching only
    # neither first is among the other's list, though their second places share text
    assert places_disagree([("d3", 0, 10), ("d2", 10, 40)], a) is True
    assert places_disagree([("d2", 10, 40)], a) is False  # its first is a's second
    deep = [("x", i, i + 1) for i in range(DEPTH)] + [("d1", 0, 100)]
    assert places_disagree(a, deep) is True  # beyond the first DEPTH
    assert places_disagree([], a) is None and places_disagree(a, []) is None


def test_reason_names_the_best_and_runner_up_and_keeps_coverage() -> None:
    c1, c2 = Candidate("c-1", "q one", count=1), Candidate("c-2", "q two", count=1)
    base = {"c-1": Signals(True, "BM25: x, dense: y", True, "no golden question in d9"),
            "c-2": Signals(False, "", False, "")}
    out = with_sweep_disagreement(base, [c1, c2], [[("d1", 0, 9)], [("d1", 0, 9)]],
                                  [[("d2", 0, 9)], [("d1", 5, 20)]],
                                  ("chunk.size=128", "chunk.size=512"))
    assert out["c-1"].disagree is True and out["c-1"].uncovered is True
    assert out["c-2"].disagree is False
    queue = prioritise([c2, c1], out)
    assert [c.cid for c in queue] == ["c-1", "c-2"]
    assert queue[0].reason == (
        "asked 1 time; the last sweep's best and runner-up disagree (best chunk.size=128: "
        "d1@0, runner-up chunk.size=512: d2@0); not covered by the golden set (no golden "
        "question in d9)")
    assert "disagree" not in queue[1].reason


def test_a_run_config_re_ranks_as_its_sweep_did(tmp_path: Path) -> None:
    """config_of_run + config_places on the demo: the first chunks equal those of the
    pipeline's own run of that configuration (BM25, a chunk size the default does not use)."""
    shutil.copytree(DEMO, tmp_path / "demo")
    base = [f"corpus.path={tmp_path / 'demo' / 'corpus'}",
            f"golden.path={tmp_path / 'demo' / 'golden.jsonl'}", f"cache.dir={tmp_path / 'c'}",
            "retrieval.diagnose=false", "eval.latency_sample=0"]
    run_cfg = compose([*base, "retrieval=bm25", "chunk.size=96", "chunk.overlap=16"])
    memo.clear_memo()
    try:
        result = pipeline.run_job(build_job_spec(run_cfg), progress=False)
        cfg = config_of_run(compose(base), to_container(run_cfg))
        assert (cfg.chunk.size, cfg.retrieval.method.value) == (96, "bm25")
        questions = [r.item.question for r in result.resolved]
        places = config_places(cfg, questions)
    finally:
        memo.clear_memo()
    expected = [[(result.chunks[i].doc_id, result.chunks[i].start, result.chunks[i].end)
                 for i in rk.indices[:DEPTH]] for rk in result.rankings]
    assert places == expected and len(places) == 60
