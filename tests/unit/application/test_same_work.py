"""Two jobs of one process whose chunks come out equal and whose other settings are equal
share one search and scoring (`application.job._work_key`): the demo's documents as plain
text have no headings, so `recursive` and `heading` cut them alike. BM25 only, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import DEMO, job_of
from sweep.application import job as pipeline
from sweep.outputs.report import result_metrics
from sweep.pipeline import memo

TAKEN = "taken with the search of an earlier configuration"


@pytest.fixture(scope="module")
def plain_text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus as .txt files (no headings) and its golden set pointing at them."""
    root = tmp_path_factory.mktemp("plain")
    for f in (DEMO / "corpus").rglob("*.md"):
        target = root / "corpus" / f.relative_to(DEMO / "corpus").with_suffix(".txt")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    rows = [json.loads(line) for line in
            (DEMO / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        for ev in row.get("evidence", []):
            ev["path"] = ev["path"].removesuffix(".md") + ".txt"
    (root / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                       encoding="utf-8")
    return root


def _base(root: Path, tmp_path: Path) -> list[str]:
    return [f"corpus.path={root}/corpus", f"golden.path={root}/golden.jsonl",
            "corpus.extensions=['.txt']", "retrieval=bm25", "retrieval.diagnose=false",
            "eval.latency_sample=3", f"cache.dir={tmp_path}/cache"]


def _run(overrides: list[str]) -> pipeline.JobResult:
    return pipeline.run_job(job_of(overrides), progress=False)


def test_equal_chunks_share_the_search_and_score_as_their_own_would(
        plain_text: Path, tmp_path: Path) -> None:
    base = _base(plain_text, tmp_path)
    memo.clear_memo()
    try:
        first = _run([*base, "chunk.boundary=recursive"])
        taken = _run([*base, "chunk.boundary=heading"])
        assert TAKEN not in first.report["latency_source"]
        assert TAKEN in taken.report["latency_source"]
        assert "search_s" not in taken.report["timings_s"]  # nothing searched again
        assert taken.chunks == first.chunks
        # What heading's own job gives, in a fresh process, is what it took.
        memo.clear_memo()
        own = _run([*base, "chunk.boundary=heading"])
        assert TAKEN not in own.report["latency_source"]
        assert taken.rows == own.rows
        assert taken.views == own.views
        latency = [k for k in own.report["metrics"] if k.startswith("latency_")]
        assert latency  # measured, so they differ run to run: the rest must be equal
        strip = lambda m: {k: v for k, v in result_metrics(m).items()  # noqa: E731
                           if k not in latency and k != "index_build_bm25_s"}
        assert strip(taken.report["metrics"]) == strip(own.report["metrics"])
        assert taken.report["config"]["chunk"]["boundary"] == "heading"
        assert taken.report["config_hash"] == own.report["config_hash"]
        assert taken.report["config_hash"] != first.report["config_hash"]
    finally:
        memo.clear_memo()


def test_what_a_job_adds_afterwards_stays_its_own(plain_text: Path, tmp_path: Path) -> None:
    base = _base(plain_text, tmp_path)
    memo.clear_memo()
    try:
        first = _run([*base, "chunk.boundary=recursive"])
        first.rows[0]["answer"] = "written by the generation half of the first job"
        first.views[0]["answer"] = {"diagnosis": "ok"}
        taken = _run([*base, "chunk.boundary=heading"])
        assert TAKEN in taken.report["latency_source"]
        assert "answer" not in taken.rows[0] and "answer" not in taken.views[0]
        taken.rows[1]["answer"] = "the second's"
        again = _run([*base, "chunk.boundary=heading"])
        assert "answer" not in again.rows[1]
    finally:
        memo.clear_memo()


@pytest.mark.parametrize("other", [
    ["chunk.boundary=heading", "retrieval.depth=20"],  # equal chunks, another search
    ["chunk.boundary=heading", "eval.min_overlap=0.25"],  # equal chunks, another scoring
    ["chunk.boundary=recursive", "chunk.size=128"],  # other chunks
])
def test_anything_else_that_differs_runs_its_own(plain_text: Path, tmp_path: Path,
                                                 other: list[str]) -> None:
    base = _base(plain_text, tmp_path)
    memo.clear_memo()
    try:
        _run([*base, "chunk.boundary=recursive"])
        assert TAKEN not in _run([*base, *other]).report["latency_source"]
    finally:
        memo.clear_memo()


def test_the_demo_with_headings_cuts_differently_and_runs_both(tmp_path: Path) -> None:
    base = ["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=0",
            f"cache.dir={tmp_path}/cache"]
    memo.clear_memo()
    try:
        a = _run([*base, "chunk.boundary=recursive"])
        b = _run([*base, "chunk.boundary=heading"])
        assert a.chunks != b.chunks
        assert TAKEN not in b.report["latency_source"]
    finally:
        memo.clear_memo()


def test_a_twin_two_jobs_back_is_found(plain_text: Path, tmp_path: Path) -> None:
    """The grid's order: boundary outside header, so each twin is two jobs back, with a job
    of the same settings but other chunks (another header) in between."""
    base = _base(plain_text, tmp_path)
    memo.clear_memo()
    try:
        taken = [TAKEN in _run([*base, f"chunk.boundary={b}", f"chunk.header={h}"])
                 .report["latency_source"]
                 for b in ("recursive", "heading") for h in ("none", "path")]
        assert taken == [False, False, True, True]
    finally:
        memo.clear_memo()


FILES = ("per_question.csv", "misses.json", "misses.html")


def _written(overrides: list[str], folder: Path, result: pipeline.JobResult | None = None
             ) -> tuple[pipeline.JobResult, dict[str, bytes]]:
    """Run (unless ``result`` is given) and write a job as a sweep's job does; its files."""
    job = job_of(overrides)
    result = result or pipeline.run_job(job, progress=False)
    name = f"{job.chunking.spec.boundary}-{job.chunking.spec.header}"
    pipeline.write_job(job, result, folder, job.plain, name, multirun=True)
    return result, {f: (folder / f).read_bytes() for f in FILES}


def test_a_twin_writes_the_files_of_its_own_run(plain_text: Path, tmp_path: Path) -> None:
    """The twin's per_question.csv and misses views are the first job's rendering, its name
    put in: byte for byte what its own run in a fresh process writes."""
    base = _base(plain_text, tmp_path)
    memo.clear_memo()
    try:
        _, first = _written([*base, "chunk.boundary=recursive"], tmp_path / "first")
        taken, twin = _written([*base, "chunk.boundary=heading"], tmp_path / "twin")
        assert TAKEN in taken.report["latency_source"]
        # recalled, not rendered and kept again
        assert [len(memo._MEMO.texts[k]) for k in ("per_question.csv", "misses")] == [1, 1]
        memo.clear_memo()
        _, own = _written([*base, "chunk.boundary=heading"], tmp_path / "own")
        assert twin == own
        assert twin["per_question.csv"] == first["per_question.csv"]
        for f in ("misses.json", "misses.html"):  # by their names only
            assert twin[f] != first[f]
            assert twin[f].replace(b"heading-none", b"recursive-none") == first[f]
    finally:
        memo.clear_memo()


def test_rows_or_views_unlike_the_first_jobs_are_rendered_anew(plain_text: Path,
                                                                tmp_path: Path) -> None:
    """Another scoring (eval.by_content adds a column and a line to each view), and edits of a
    twin's rows and views that ``==`` would not see, are written as their own run writes
    them, never as the kept text."""
    from sweep.outputs.misses_html import write_views
    from sweep.outputs.report import write_per_question

    base = _base(plain_text, tmp_path)
    memo.clear_memo()
    try:
        _written([*base, "chunk.boundary=recursive"], tmp_path / "first")
        content = [*base, "chunk.boundary=heading", "eval.by_content=true"]
        _, files = _written(content, tmp_path / "content")
        memo.clear_memo()
        _, own = _written(content, tmp_path / "own")
        assert files == own
        assert b"content_kind" in files["per_question.csv"]

        memo.clear_memo()
        _written([*base, "chunk.boundary=recursive"], tmp_path / "again")
        taken = _run([*base, "chunk.boundary=heading"])
        assert TAKEN in taken.report["latency_source"]
        row = next(r for r in taken.rows if r.get("recall_at_1") == 1.0)
        row["recall_at_1"] = 1  # equal, but written "1"
        zero = next(r for r in taken.rows if r.get("mrr") == 0.0)
        zero["mrr"] = -0.0  # equal, but written "-0.0"
        taken.views[-1] = {**taken.views[-1], "detail": taken.views[-1]["detail"] + " (edited)"}
        _, edited = _written([*base, "chunk.boundary=heading"], tmp_path / "edited", taken)
        plain = tmp_path / "plain"
        plain.mkdir()
        write_per_question(plain, taken.rows)
        counts = {k: v for k, v in taken.report["metrics"].items() if k.startswith("n_miss")}
        write_views(plain, taken.views, "heading-none", counts)
        assert edited == {f: (plain / f).read_bytes() for f in FILES}
        assert b"(edited)" in edited["misses.json"] and b",-0.0," in edited["per_question.csv"]
    finally:
        memo.clear_memo()
