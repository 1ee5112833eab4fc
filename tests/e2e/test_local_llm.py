"""Every LLM-backed part against a real language model: llama.cpp's server (xllamacpp) serving
SmolLM2-135M-Instruct, as `make llm-server` starts it (servers/llm.sh).

The server is the one at $CHUNK_SWEEP_TEST_LLM (``http://127.0.0.1:PORT``, no /v1) when that is
set (``.ci/run`` starts it with ``make llm-server``); otherwise the module starts its own from
``<repo>/.venv-llm`` (``make llm-venv``) on a free port, state in a temporary folder. The test of
a server killed mid-run always starts (and kills) one of its own.

Nothing here asserts a model's wording: the plumbing (counts, both arms, the cache, tokens,
identity), substring grading recomputed from the answers, and the failure lines. Bounded: about
45 chat calls in all, a few minutes on two cores.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, free_port, mlflow_runs, run_cli, served_model_ids

pytestmark = pytest.mark.slow

SCRIPT = ROOT / "servers" / "llm.sh"
VENV = ROOT / ".venv-llm"
LOCAL = yaml.safe_load((ROOT / "conf" / "generation" / "local.yaml").read_text())
MODEL = LOCAL["model"]
N = 10  # questions per configuration in the oracle-vs-live test (two arms: 2 * N answers)


def _start(state: Path, port: int) -> dict[str, str]:
    if not (VENV / "bin" / "python").is_file():
        pytest.fail(f"no {VENV}: run `make llm-venv` (locks/llm-server.txt) or set "
                    "CHUNK_SWEEP_TEST_LLM", pytrace=False)
    env = {**os.environ, "VENV": str(VENV), "PORT": str(port), "STATE": str(state),
           "THREADS": "1"}
    res = subprocess.run([str(SCRIPT), "start"], env=env, capture_output=True, text=True,
                         timeout=300)
    if res.returncode != 0:
        pytest.fail(f"the llm server did not start on port {port}: {res.stderr.strip()}",
                    pytrace=False)
    return env


def _stop(env: dict[str, str]) -> None:
    subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    given = os.environ.get("CHUNK_SWEEP_TEST_LLM")
    if given:
        url = given.rstrip("/").removesuffix("/v1")
        models = served_model_ids(url)
        if models is None:
            pytest.fail(f"CHUNK_SWEEP_TEST_LLM={given}: nothing answers at {url}/v1/models",
                        pytrace=False)
        # conf/generation/local.yaml names the model file by its digest: a served file that
        # differs fails here, not as answers silently taken from the cache of another model.
        assert MODEL in models, (models, MODEL)
        yield url
        return
    env = _start(tmp_path_factory.mktemp("llm-server"), free_port())
    try:
        url = f"http://127.0.0.1:{env['PORT']}"
        assert MODEL in (served_model_ids(url) or []), (served_model_ids(url), MODEL)
        yield url
    finally:
        _stop(env)


def _client(url: str, section: str = "generation", retries: int = 1):
    from sweep.endpoints.chat import ChatClient
    from sweep.endpoints.spec import EndpointSpec

    return ChatClient(EndpointSpec(section, f"{url}/v1", "", timeout_s=120,
                                   max_retries=retries, concurrency=1), MODEL)


def _rows(job: Path) -> list[dict[str, str]]:
    with (job / "per_question.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def _mentions(item_mentions: dict[str, list[str]], qid: str, answer: str) -> bool:
    a = " ".join(answer.casefold().split())
    return all(" ".join(m.casefold().split()) in a for m in item_mentions[qid])


def _golden_mentions() -> dict[str, list[str]]:
    out = {}
    with (ROOT / "data" / "demo" / "golden.jsonl").open() as f:
        for line in f:
            if line.strip():
                item = json.loads(line)
                out[item["qid"]] = item.get("answer_must_mention") or []
    return out


def test_oracle_and_live_on_two_configurations_and_a_rerun_from_the_cache(
        llm: str, tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = ["-m", "sweep", "-m", "chunk.size=128,256", "generation=local",
              f"generation.base_url={llm}/v1", f"generation.limit={N}", f"tracking.uri={uri}",
              f"cache.dir={tmp_path}/cache", "eval.latency_sample=0"]
    res = run_cli(*common, f"hydra.sweep.dir={tmp_path}/first", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    # The same sweep again, forced past the finished runs: every answer from the cache.
    res = run_cli(*common, "sweep.force=true", f"hydra.sweep.dir={tmp_path}/again", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]

    mentions = _golden_mentions()
    reports = {}
    for sweep in ("first", "again"):
        for job in sorted((tmp_path / sweep).glob("[0-9]*")):
            rep = json.loads((job / "report.json").read_text())
            reports[(sweep, rep["config"]["chunk"]["size"])] = (rep, _rows(job))
    assert len(reports) == 4
    for size in (128, 256):
        (first, rows1), (again, rows2) = reports[("first", size)], reports[("again", size)]
        m1, m2 = first["metrics"], again["metrics"]
        assert m1["n_generated"] == N and m1["gen_calls"] == 2 * N  # two arms
        assert m1["gen_cache_hits"] == 0 and m1["gen_prompt_tokens"] > 0
        assert m1["gen_completion_tokens"] > 0
        assert m2["gen_calls"] == 0 and m2["gen_cache_hits"] == 2 * N
        assert "gen_prompt_tokens" not in m2  # nothing asked, nothing reported
        assert first["config_hash"] == again["config_hash"]
        generated = [r for r in rows1 if r["diagnosis"]]
        assert len(generated) == N
        for r in generated:
            assert r["oracle_answer"].strip() and r["live_answer"].strip()
            if mentions.get(r["qid"]):  # substring grading, recomputed here
                assert (r["oracle_correct"] == "True") == _mentions(mentions, r["qid"],
                                                                    r["oracle_answer"])
                assert (r["live_correct"] == "True") == _mentions(mentions, r["qid"],
                                                                  r["live_answer"])
        graded = [r for r in generated if r["oracle_correct"] in ("True", "False")
                  and r["live_correct"] in ("True", "False")]
        assert m1["n_graded"] == len(graded)
        acc_o = sum(r["oracle_correct"] == "True" for r in graded) / len(graded)
        acc_l = sum(r["live_correct"] == "True" for r in graded) / len(graded)
        assert m1["answer_accuracy_oracle"] == pytest.approx(acc_o)
        assert m1["retrieval_tax"] == pytest.approx(acc_o - acc_l)
        assert sum(m1[f"n_{d}"] for d in ("ok", "retrieval_bug", "generation_bug",
                                          "oracle_fail", "ungraded")) == N
        # the cache gives back the very answers: the second run's numbers are the first's
        assert [(r["oracle_answer"], r["live_answer"]) for r in rows2 if r["diagnosis"]] == \
            [(r["oracle_answer"], r["live_answer"]) for r in generated]
        for k in ("answer_accuracy_oracle", "answer_accuracy_live", "retrieval_tax"):
            assert m2[k] == m1[k]
    _, runs = mlflow_runs(uri)
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 4 and all(r.info.status == "FINISHED" for r in children)
    assert all("answer_accuracy_live" in r.data.metrics for r in children)


def test_cache_answers_is_no_part_of_the_identity() -> None:
    from sweep.config.compose import compose, to_container
    from sweep.config.identity import config_hash

    def digest(*overrides: str) -> str:
        return config_hash(to_container(compose(["generation=local", *overrides])), "c", "g")

    hashes = {digest(f"generation.cache_answers={v}") for v in ("true", "false")}
    other = digest("generation.max_tokens=65")
    assert len(hashes) == 1 and other not in hashes


def test_contextual_headers_on_two_documents(llm: str, tmp_path: Path) -> None:
    from sweep.chunking.chunkers import ChunkSpec, chunk_corpus, corpus_token_starts
    from sweep.chunking.tokenizers import load_chunk_tokenizer
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec
    from sweep.generation.contextual import ContextSpec, add_contexts, get_context_cache
    from sweep.pipeline.memo import load_corpus_cached

    job = build_job_spec(compose(["cache.enabled=false"]))
    docs, _ = load_corpus_cached(job.corpus, job.cache)
    docs = sorted(docs, key=lambda d: len(d.text))[:2]  # the two shortest: few calls
    tok = load_chunk_tokenizer("minilm")
    starts = corpus_token_starts(docs, tok)
    chunks = chunk_corpus(docs, ChunkSpec("recursive", 256, 0, "contextual"), tok, starts)
    assert {c.doc_id for c in chunks} == {d.doc_id for d in docs}
    conf = yaml.safe_load((ROOT / "conf" / "chunk" / "context" / "local.yaml").read_text())
    spec = ContextSpec(max_doc_tokens=conf["max_doc_tokens"], max_tokens=conf["max_tokens"])
    cache = get_context_cache(tmp_path)
    first = add_contexts(chunks, docs, starts, _client(llm, "chunk.context"), spec, cache,
                         progress=False)
    assert first.metrics["context_calls"] == len({(c.doc_id, c.start, c.end) for c in chunks})
    assert first.metrics["context_prompt_tokens"] > 0
    for before, after in zip(chunks, first.chunks, strict=True):
        head, _, rest = after.embed_text.partition("\n\n")
        assert head.strip() and rest == before.embed_text  # a context, then the chunk
        assert (after.start, after.end, after.text) == (before.start, before.end, before.text)
    again = add_contexts(chunks, docs, starts, _client(llm, "chunk.context"), spec, cache,
                         progress=False)
    assert again.metrics["context_calls"] == 0
    assert [c.embed_text for c in again.chunks] == [c.embed_text for c in first.chunks]


def test_questions_generate_on_three_passages(llm: str, tmp_path: Path) -> None:
    out = tmp_path / "queue.jsonl"

    def args(queue: Path) -> list[str]:
        return ["-m", "sweep.cli", "questions", "generate", "--passages", "3",
                "--per-passage", "2", "--out", str(queue), "generation=local",
                "+questions=local", f"generation.base_url={llm}/v1",
                f"cache.dir={tmp_path}/cache"]

    res = run_cli(*args(out), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("generated "))
    assert " from 3 passages: 3 calls, 0 from the cache" in line, line
    rows = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
    assert rows and all(r["source"] == "synthetic" and r["question"].strip() for r in rows)
    assert len({r["passage"]["doc_id"] + str(r["passage"]["start"]) for r in rows}) <= 3
    res = run_cli(*args(tmp_path / "again.jsonl"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "3 calls" not in res.stdout and "3 from the cache" in res.stdout, res.stdout


def test_the_judge_path_on_three_items(llm: str, tmp_path: Path) -> None:
    from sweep.generation.cache import get_judge_cache
    from sweep.generation.run import Judge

    triples = [("How long is the return window?", "- You can return items within 30 days.",
                "Within 30 days."),
               ("Is shipping free?", "- Standard shipping is free over $50.",
                "Shipping always costs $9."),
               ("Who makes the kettle?", "- The kettle is made by Kestrel Home.", "")]
    judge = Judge(_client(llm, "judge"), get_judge_cache(tmp_path))
    verdicts, replies = judge.grade_all(triples, progress=False)
    assert len(verdicts) == len(replies) == 3 and judge.usage.calls == 3
    assert judge.usage.reported and judge.usage.prompt_tokens > 0
    from sweep.generation.run import parse_verdict

    # parsed strictly: a verdict only for exactly CORRECT/INCORRECT, else ungraded (None)
    assert verdicts == [parse_verdict(r) for r in replies]
    again = Judge(_client(llm, "judge"), get_judge_cache(tmp_path))
    assert again.grade_all(triples, progress=False) == (verdicts, replies)
    assert again.usage.calls == 0 and again.cached_hits == 3


def test_hyde_on_five_questions_cached_costed_and_its_own_configuration(
        llm: str, tmp_path: Path) -> None:
    # five demo questions: a golden file of their lines beside the demo's reference chunking
    folder = tmp_path / "golden5"
    folder.mkdir()
    lines = (ROOT / "data" / "demo" / "golden.jsonl").read_text().splitlines()
    (folder / "golden.jsonl").write_text("\n".join([x for x in lines if x.strip()][:5]) + "\n")
    (folder / "golden.reference.yaml").write_text(
        (ROOT / "data" / "demo" / "golden.reference.yaml").read_text())
    common = ["-m", "sweep", f"golden.path={folder / 'golden.jsonl'}", "tracking.enabled=false",
              f"cache.dir={tmp_path}/cache", "eval.latency_sample=0"]
    hyde = ["retrieval.query_transform=hyde", "+retrieval/transform=local",
            f"retrieval.transform.base_url={llm}/v1"]
    reports = {}
    for name, extra in (("first", hyde), ("again", hyde), ("none", [])):
        res = run_cli(*common, *extra, f"hydra.run.dir={tmp_path / name}", cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        reports[name] = json.loads((tmp_path / name / "report.json").read_text())
    m1, m2 = reports["first"]["metrics"], reports["again"]["metrics"]
    assert m1["transform_calls"] == 5 and m1["transform_cache_hits"] == 0
    assert m1["transform_prompt_tokens"] > 0 and m1["transform_completion_tokens"] > 0
    assert m2["transform_calls"] == 0 and m2["transform_cache_hits"] == 5
    assert "transform_prompt_tokens" not in m2  # nothing asked, nothing reported
    assert "transform_calls" not in reports["none"]["metrics"]
    # from the cache: the same passages, so the same vectors and the same numbers
    for k in ("recall_at_5", "mrr", "evidence_recall_at_5"):
        assert m2[k] == m1[k]
    assert m2["n_texts_encoded"] == 0  # every text, passages included, from the cache
    with sqlite3.connect(tmp_path / "cache" / "transforms.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM answers").fetchone()[0] == 5
    # the transform is part of the configuration; off, it is the configuration it always was
    assert reports["first"]["config_hash"] == reports["again"]["config_hash"]
    assert reports["first"]["config_hash"] != reports["none"]["config_hash"]
    assert reports["first"]["config"]["retrieval"]["transform"]["model"] == MODEL
    assert reports["first"]["timings_s"]["transform_s"] > 0


def test_a_prompt_over_the_context_window_is_refused_with_its_reason(llm: str) -> None:
    from sweep.common.errors import SweepError

    words = "The kettle ships in a box with a manual and a descaling sachet. " * 500
    with pytest.raises(SweepError) as err:
        _client(llm).complete([{"role": "user", "content": words}], 0.0, 8)
    msg = str(err.value)
    assert "is longer than the context window" in msg and "refused it rather than cut" in msg
    n_prompt, n_ctx = (int(s.split()[0]) for s in msg.split("(")[1:3])
    assert n_prompt > n_ctx > 0


def test_a_server_killed_mid_run_keeps_its_answers_and_the_same_command_resumes(
        tmp_path: Path) -> None:
    port = free_port()
    env = _start(tmp_path / "state", port)
    url = f"http://127.0.0.1:{port}"
    answers = tmp_path / "cache" / "answers.sqlite"
    args = ["-m", "sweep", "generation=local", f"generation.base_url={url}/v1",
            "generation.limit=4", "tracking.enabled=false", f"cache.dir={tmp_path}/cache",
            "eval.latency_sample=0"]

    def stored() -> int:
        if not answers.is_file():
            return 0
        with sqlite3.connect(answers) as db:
            try:
                return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])
            except sqlite3.OperationalError:  # the table is being made
                return 0

    try:
        proc = subprocess.Popen(
            [sys.executable, *args, f"hydra.run.dir={tmp_path}/run1"],
            cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 600
        while stored() < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        _stop(env)  # kill the server: two answers in, six to go
        _, err = proc.communicate(timeout=300)
        kept = stored()
        assert proc.returncode != 0, err[-2000:]
        assert 2 <= kept < 8
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "generation" in errors[0], err[-2000:]
        rep = json.loads((tmp_path / "run1" / "report.json").read_text())
        assert rep["status"] == "FAILED" and "recall_at_5" in rep["metrics"]

        env = _start(tmp_path / "state", port)
        res = run_cli(*args, f"hydra.run.dir={tmp_path}/run2", cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        m = json.loads((tmp_path / "run2" / "report.json").read_text())["metrics"]
        assert m["gen_cache_hits"] == kept and m["gen_calls"] == 8 - kept
        assert stored() == 8
    finally:
        _stop(env)
