"""The generation half through the real command line: an unreachable endpoint, a planted API
key that must never be stored, the judge cache on a re-run (the extractive sweep with the real
model is in tests/e2e/test_generation_e2e.py).

BM25 retrieval without the dense diagnosis keeps the fast tests free of model loading; the
chat endpoint is tests/chat_protocol_server.py on 127.0.0.1 (scripted replies, not a model).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from helpers import free_port, mlflow_runs, run_cli
from sweep.generation.run import JUDGE_SYSTEM

KEY_ENV = "CHUNK_SWEEP_TEST_KEY"
PLANTED = "sk-planted-7f3a9c1e5b2d4068aa11"
FAST = ["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=0"]


def test_unreachable_endpoint_fails_in_one_line_and_keeps_retrieval_metrics(
        tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    url = f"http://127.0.0.1:{free_port()}/v1"
    res = run_cli("-m", "sweep", *FAST, "generation=openai", f"generation.base_url={url}",
                  "generation.model=some-model", f"tracking.uri={uri}",
                  f"hydra.run.dir={tmp_path}/run", f"cache.dir={tmp_path}/cache", cwd=tmp_path)
    assert res.returncode == 1
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, res.stderr[-2000:]
    assert errors[0].startswith(f"error: generation.base_url={url}: cannot reach the endpoint")
    assert "Traceback" not in res.stderr
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["status"] == "FAILED"
    assert 0 <= report["metrics"]["recall_at_5"] <= 1  # the retrieval half is kept
    assert "answer_accuracy_live" not in report["metrics"]
    _, runs = mlflow_runs(uri)
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FAILED"
    assert run.data.metrics["recall_at_5"] == report["metrics"]["recall_at_5"]
    assert "cannot reach the endpoint" in run.data.tags["error"]


def _answer(request: dict) -> Reply:
    """The judge says CORRECT; the 'model' never mentions anything the golden set wants."""
    if request["messages"][0]["content"] == JUDGE_SYSTEM:
        return Reply(content="CORRECT", usage=(100, 1))
    return Reply(content="I am not sure.", usage=(300, 5))


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_planted_key_appears_in_no_param_tag_artifact_or_log(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = [*FAST, "generation=openai", "generation.model=test-model",
              f"generation.api_key_env={KEY_ENV}", "judge=openai", "judge.model=test-judge",
              f"judge.api_key_env={KEY_ENV}", f"tracking.uri={uri}",
              f"cache.dir={tmp_path}/cache", "generation.price_input_per_mtok=1.0"]
    with ChatProtocolServer(_answer) as srv:
        res = run_cli("-m", "sweep", *common, f"generation.base_url={srv.base_url}",
                      f"judge.base_url={srv.base_url}", f"hydra.run.dir={tmp_path}/run1",
                      cwd=tmp_path, env={KEY_ENV: PLANTED})
        assert res.returncode == 0, res.stderr[-3000:]
        # the key was really used, so its absence below means something
        assert all(r["headers"]["authorization"] == f"Bearer {PLANTED}" for r in srv.requests)
        judge_calls = [r for r in srv.requests if r["json"]["model"] == "test-judge"]
        # 5 demo items have no answer_must_mention; their oracle and live answers are the same
        # text here, so the live verdict is already in the cache
        assert len(judge_calls) == 5
        n_before = len(srv.requests)

        # the same configuration again: every verdict comes from the judge cache
        res2 = run_cli("-m", "sweep", *common, f"generation.base_url={srv.base_url}",
                       f"judge.base_url={srv.base_url}", f"hydra.run.dir={tmp_path}/run2",
                       "sweep.force=true", cwd=tmp_path, env={KEY_ENV: PLANTED})
        assert res2.returncode == 0, res2.stderr[-3000:]
        assert not [r for r in srv.requests[n_before:] if r["json"]["model"] == "test-judge"]

    # an endpoint that echoes the key in its error body
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {PLANTED}"}})
    with ChatProtocolServer(lambda req: Reply(status=401, body=body)) as bad:
        res3 = run_cli("-m", "sweep", *common, f"generation.base_url={bad.base_url}",
                       f"judge.base_url={bad.base_url}", f"hydra.run.dir={tmp_path}/run3",
                       "sweep.force=true", cwd=tmp_path, env={KEY_ENV: PLANTED})
    assert res3.returncode == 1
    assert "HTTP 401" in res3.stderr

    for r in (res, res2, res3):
        assert PLANTED not in r.stdout + r.stderr
    assert _files_containing(tmp_path, PLANTED.encode()) == []
    # partial echoes too (servers often mask the middle of a key)
    assert _files_containing(tmp_path, PLANTED[-12:].encode()) == []

    rep = json.loads((tmp_path / "run1" / "report.json").read_text())
    m = rep["metrics"]
    assert m["n_graded"] == 60 and m["n_graded_by_judge"] == 5
    assert m["answer_accuracy_oracle"] == pytest.approx(5 / 60)
    assert m["answer_accuracy_live"] == pytest.approx(5 / 60)
    assert m["retrieval_tax"] == pytest.approx(0.0)
    assert m["gen_prompt_tokens"] == 120 * 300 and m["judge_calls"] == 5
    assert m["judge_cache_hits"] == 5
    assert m["cost_estimate_usd"] == pytest.approx(120 * 300 / 1e6)
    rep2 = json.loads((tmp_path / "run2" / "report.json").read_text())
    assert rep2["metrics"]["judge_cache_hits"] == 10
    _client, runs = mlflow_runs(uri)
    finished = [r for r in runs if r.info.status == "FINISHED"]
    assert len(finished) == 2
    assert finished[0].data.params["generation.api_key_env"] == KEY_ENV
    assert finished[0].data.metrics["answer_accuracy_oracle"] == pytest.approx(5 / 60)


