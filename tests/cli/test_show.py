"""`sweep show` on real job folders and on an MLflow run (BM25 only: no model to load)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli

BM25 = ["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=0"]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("show")
    res = run_cli("-m", "sweep", "-m", "chunk.size=64,512", *BM25,
                  f"cache.dir={tmp}/cache", f"hydra.sweep.dir={tmp}/sweep",
                  f"tracking.uri=sqlite:///{tmp}/mlflow.db", cwd=tmp, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp


def test_job_folder_has_the_views_and_counts(sweep_dir: Path) -> None:
    for job in ("0", "1"):
        data = json.loads((sweep_dir / "sweep" / job / "misses.json").read_text())
        report = json.loads((sweep_dir / "sweep" / job / "report.json").read_text())
        causes = [q["cause"] for q in data["questions"]]
        n_missed = sum(1 for c in causes if c)
        assert report["metrics"]["n_misses"] == n_missed
        for cause in ("evidence_split", "ranked_below_k", "never_retrieved", "orphan"):
            assert report["metrics"][f"n_miss_{cause}"] == causes.count(cause)
        # No model ranks a BM25 run, so nothing is missed by truncation.
        assert report["metrics"]["n_miss_truncated"] == 0
        # A question is missed exactly when its first relevant chunk is not in the top k.
        k = report["config"]["eval"]["prompt_k"]
        for q in data["questions"]:
            if q["status"] == "scored":
                rank = q["first_relevant_rank"]
                assert bool(q["cause"]) == (rank is None or rank > k), q["qid"]
        assert (sweep_dir / "sweep" / job / "misses.html").stat().st_size > 1000


def test_show_summary_one_question_and_vs(sweep_dir: Path) -> None:
    a, b = sweep_dir / "sweep" / "0", sweep_dir / "sweep" / "1"
    res = run_cli("-m", "sweep.cli", "show", str(a), cwd=sweep_dir)
    assert res.returncode == 0, res.stderr
    assert "never_retrieved" in res.stdout and "what to try" in res.stdout
    data = json.loads((a / "misses.json").read_text())
    missed = next(q for q in data["questions"] if q["cause"])
    res = run_cli("-m", "sweep.cli", "show", str(a), "--qid", missed["qid"], cwd=sweep_dir)
    assert res.returncode == 0, res.stderr
    assert missed["cause"] in res.stdout and "rank" in res.stdout
    res = run_cli("-m", "sweep.cli", "show", str(a), "--vs", str(b), cwd=sweep_dir)
    assert res.returncode == 0 and "change outcome" in res.stdout, res.stderr
    res = run_cli("-m", "sweep.cli", "show", str(a), "--qid", "no-such-q", cwd=sweep_dir)
    assert res.returncode == 1 and "no-such-q" in res.stderr and "Traceback" not in res.stderr


def test_show_by_run_id_reads_the_mlflow_artifact(sweep_dir: Path) -> None:
    db = sweep_dir / "mlflow.db"
    with sqlite3.connect(db) as con:
        run_ids = [r[0] for r in con.execute(
            "SELECT run_uuid FROM runs WHERE run_uuid IN "
            "(SELECT run_uuid FROM tags WHERE key = 'config_hash')")]
    assert len(run_ids) == 2
    res = run_cli("-m", "sweep.cli", "show", run_ids[0], "--tracking-uri", f"sqlite:///{db}",
                  cwd=sweep_dir)
    assert res.returncode == 0, res.stderr
    assert "misses:" in res.stdout


def test_show_a_folder_without_views_is_one_line(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep.cli", "show", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 1 and "no misses.json" in res.stderr
    assert "Traceback" not in res.stderr


def test_label_server_shows_a_run_with_links_to_each_label(sweep_dir: Path) -> None:
    import http.client
    import shutil

    from helpers import DEMO, label_settings
    from sweep.label.app import build_app
    from sweep.label.server import LabelServer

    work = sweep_dir / "label"
    shutil.copytree(DEMO / "corpus", work / "corpus")
    shutil.copy(DEMO / "golden.jsonl", work / "golden.jsonl")
    uri = f"sqlite:///{sweep_dir / 'mlflow.db'}"
    settings = label_settings(work / "corpus", work / "golden.jsonl", "tracking.enabled=true",
                              f"tracking.uri={uri}")
    server = LabelServer(0, build_app(settings, say=lambda _: None))
    server.start_background()

    def get(path: str) -> tuple[int, str, str]:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{server.port}"})
        res = conn.getresponse()
        body = res.read().decode()
        conn.close()
        return res.status, body, res.getheader("Content-Security-Policy") or ""

    try:
        with sqlite3.connect(sweep_dir / "mlflow.db") as con:
            run_id = con.execute("SELECT run_uuid FROM tags WHERE key = 'config_hash'"
                                 ).fetchone()[0]
        status, body, csp = get(f"/run/{run_id}")
        assert status == 200, body[:500]
        from sweep.outputs.misses_html import load_views

        missed = [q["qid"] for q in load_views(run_id, uri)["questions"] if q["cause"]]
        hrefs = [q for q in missed if f'href="/?edit={q}"' in body]
        # Each missed question of that run links to its labelling view.
        assert len(hrefs) == body.count("fix this label") > 0
        nonce = csp.split("style-src 'nonce-")[1].split("'")[0]
        assert f'<style nonce="{nonce}">' in body
        assert get("/run/..%2f..%2fetc")[0] == 404
        assert get("/run/" + "0" * 32)[0] == 400
    finally:
        server.shutdown()
        server.server_close()


def _config_runs(db: Path) -> list[tuple[str, str]]:
    """(run id, artifact uri) of the configuration runs of the store."""
    with sqlite3.connect(db) as con:
        return list(con.execute(
            "SELECT run_uuid, artifact_uri FROM runs WHERE run_uuid IN "
            "(SELECT run_uuid FROM tags WHERE key = 'config_hash') ORDER BY run_uuid"))


def test_show_run_ids_that_cannot_be_shown_are_one_line(sweep_dir: Path, tmp_path: Path
                                                        ) -> None:
    import shutil
    from urllib.parse import unquote, urlparse

    db = sweep_dir / "mlflow.db"
    uri = f"sqlite:///{db}"
    (run_id, _), (other_id, artifact_uri) = _config_runs(db)
    # A run id is store-wide: the title names the experiment the run belongs to.
    res = run_cli("-m", "sweep.cli", "show", run_id, "--tracking-uri", uri, cwd=sweep_dir)
    assert res.returncode == 0 and "(experiment chunk-sweep-demo)" in res.stdout, res.stderr
    # An id no run of this store has (say, of another store): said so, not "no artifact".
    res = run_cli("-m", "sweep.cli", "show", "0" * 32, "--tracking-uri", uri, cwd=tmp_path)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"run {'0' * 32}: no such run in {uri}" in res.stderr
    # A parent (sweep) run has no misses.json of its own.
    with sqlite3.connect(db) as con:
        (parent,) = con.execute("SELECT DISTINCT value FROM tags WHERE key = "
                                "'mlflow.parentRunId'").fetchone()
    res = run_cli("-m", "sweep.cli", "show", parent, "--tracking-uri", uri, cwd=tmp_path)
    assert res.returncode == 1 and "no misses.json artifact" in res.stderr
    assert "a sweep's parent run has not" in res.stderr
    # The run's artifact folder deleted from disk: named, not "no artifact".
    folder = Path(unquote(urlparse(artifact_uri).path))
    assert folder.is_dir()
    moved = tmp_path / "moved"
    shutil.move(str(folder), moved)
    try:
        res = run_cli("-m", "sweep.cli", "show", other_id, "--tracking-uri", uri, cwd=tmp_path)
    finally:
        shutil.move(str(moved), folder)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"its artifact folder {folder} is gone (deleted or moved)" in res.stderr


def test_show_unknown_qid_lists_the_questions(sweep_dir: Path) -> None:
    res = run_cli("-m", "sweep.cli", "show", str(sweep_dir / "sweep" / "0"), "--qid", "q999",
                  cwd=sweep_dir)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "--qid q999: not a question of" in res.stderr and "(its questions: q001" in res.stderr


def test_show_prints_hostile_text_literally(tmp_path: Path) -> None:
    """rich reads ``[...]`` as markup: a question with ``[/b]`` raised MarkupError (a
    traceback), and ``[link=...]`` made a terminal link; both are printed as they are now."""
    question = "What is [/b] and [link=javascript:alert(1)]this[/link]? <script>x</script>"
    view = {"qid": "q[1]", "question": question, "status": "scored",
            "cause": "never_retrieved", "detail": "not in [red]the list", "first_relevant_rank":
            None, "dense_rank": None, "bm25_rank": None, "hits": [],
            "passages": [{"doc_id": "d[/dim]", "window": [0, 12], "text": "body [b]text",
                          "evidence": [0, 4], "chunks": [{"chunk_id": "d#0", "start": 0,
                                                          "end": 12, "n_tokens": 3}]}]}
    (tmp_path / "misses.json").write_text(json.dumps(
        {"title": "t [/x]", "questions": [view], "counts": {"n_miss_never_retrieved": 1}}))
    for extra in ([], ["--qid", "q[1]"]):
        res = run_cli("-m", "sweep.cli", "show", str(tmp_path), *extra, cwd=tmp_path,
                      env={"COLUMNS": "400"})
        assert res.returncode == 0, res.stderr
        assert question in res.stdout and "\x1b]8;" not in res.stdout  # no OSC 8 link
    assert "body [b]text" in res.stdout and "d[/dim]" in res.stdout
