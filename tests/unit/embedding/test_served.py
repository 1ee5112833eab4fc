"""Models behind an endpoint, against a misbehaving local server (tests/embedding_fault_server):
retries where they are right, one line naming the endpoint and the status where they are not,
nothing unchecked in the cache, usage counted, and (through the command line) the run FAILED in
MLflow with the planted key in no file."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from embedding_fault_server import Fault, FaultServer, fake_score, fake_vector
from helpers import run_cli
from sweep.common.errors import SweepError
from sweep.embedding.cache import EmbeddingCache
from sweep.embedding.models import EmbeddingSpec
from sweep.embedding.served import ServedEmbedder, ServedSpec, plan_batches, served_fingerprint
from sweep.endpoints.http import retry_after_s
from sweep.endpoints.ledger import ledger_summary
from sweep.endpoints.spec import EndpointSpec
from sweep.retrieval.rerank import ServedReranker, ServedRerankSpec

KEY_ENV = "CHUNK_SWEEP_TEST_EMBED_KEY"
PLANTED = "sk-planted-embed-93c1d7a05f2e4b68"
TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def _embedder(url: str, cache: EmbeddingCache | None = None, **kw: object) -> ServedEmbedder:
    ep = {k: kw.pop(k) for k in ("timeout_s", "max_retries", "concurrency", "api_key_env")
          if k in kw}
    endpoint = EndpointSpec("embedding", url, **{"max_retries": 2, **ep})  # type: ignore[arg-type]
    served = ServedSpec(endpoint, "fake-model", **kw)  # type: ignore[arg-type]
    emb = ServedEmbedder(EmbeddingSpec("fake", "openai", served=served))
    emb.cache = cache
    return emb


def _expected(texts: list[str], dim: int = 8) -> np.ndarray:
    v = np.stack([fake_vector(t, dim) for t in texts])
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_vectors_come_back_in_order_normalised_and_counted(tmp_path: Path) -> None:
    with FaultServer() as srv:
        # the server answers in reverse order: the client must place them by `index`
        srv.faults = [Fault(edit=lambda d: {**d, "data": d["data"][::-1]})]
        emb = _embedder(srv.base_url, max_texts_per_request=2, concurrency=1)
        vecs = emb.encode(TEXTS, progress=False)
    np.testing.assert_allclose(vecs, _expected(TEXTS), rtol=1e-6)
    assert [r["json"]["input"] for r in srv.requests] == [TEXTS[:2], TEXTS[2:4], TEXTS[4:]]
    assert all(r["path"] == "/v1/embeddings" for r in srv.requests)
    u = emb.usage
    assert (u.requests, u.retries, u.texts, u.tokens, u.tokens_counted) == (3, 0, 5, 50, 0)


def test_429_with_retry_after_waits_and_retries() -> None:
    with FaultServer() as srv:
        srv.faults = [Fault(429, {"Retry-After": "1"})]
        emb = _embedder(srv.base_url)
        t = time.monotonic()
        vecs = emb.encode(TEXTS[:2], progress=False)
        elapsed = time.monotonic() - t
    assert elapsed >= 1.0  # Retry-After honoured, not the sub-second back-off
    assert len(srv.requests) == 2 and emb.usage.requests == 1 and emb.usage.retries == 1
    np.testing.assert_allclose(vecs, _expected(TEXTS[:2]), rtol=1e-6)


def test_500_then_success_is_retried_and_429_forever_fails_in_one_line() -> None:
    with FaultServer() as srv:
        srv.faults = [Fault(500), Fault(503)]
        emb = _embedder(srv.base_url, max_retries=2)
        assert emb.encode(["x"], progress=False).shape == (1, 8)
        assert len(srv.requests) == 3 and emb.usage.retries == 2

        srv.faults = [Fault(429, {"Retry-After": "0"})] * 3
        with pytest.raises(SweepError) as err:
            emb.encode(["y"], progress=False)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"embedding: {srv.base_url}/embeddings: HTTP 429")
    assert "after 2 retries" in msg and "concurrency" in msg


def test_an_answer_slower_than_the_timeout_is_retried_then_named(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with FaultServer() as srv:
        srv.faults = [Fault(delay_s=1.5), Fault(delay_s=1.5)]
        emb = _embedder(srv.base_url, cache, timeout_s=0.3, max_retries=1)
        with pytest.raises(SweepError) as err:
            emb.encode(["slow"], progress=False)
    assert str(err.value) == (f"embedding: {srv.base_url}/embeddings: no answer within "
                              "embedding.timeout_s=0.3 (after 1 retries)")
    assert len(srv.requests) == 2
    assert cache.info()["vectors"] == 0


@pytest.mark.parametrize(("fault", "expected"), [
    (Fault(edit=lambda d: {**d, "data": [{**x, "embedding": x["embedding"][:-1]}
                                         for x in d["data"]]}),
     "vectors of dimension 7, expected embedding.dimensions=8"),
    (Fault(edit=lambda d: {**d, "data": d["data"][:-1]}), "2 vectors for 3 texts"),
    (Fault(edit=lambda d: {**d, "data": [{**x, "embedding": [float("nan")] * 8}
                                         for x in d["data"]]}), None),
    (Fault(body='{"object": "list", "data": [{"index": 0, "embedding": [0.1, 0.'),
     "HTTP 200 with a body that is not JSON (truncated?)"),
    (Fault(400, body='{"error": {"message": "input too long"}}'), "HTTP 400: input too long"),
])
def test_a_bad_answer_is_not_retried_and_caches_nothing(tmp_path: Path, fault: Fault,
                                                        expected: str | None) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with FaultServer() as srv:
        srv.faults = [fault]
        emb = _embedder(srv.base_url, cache, dimensions=8)
        with pytest.raises(SweepError) as err:
            emb.encode(TEXTS[:3], progress=False)
    msg = str(err.value)
    assert msg.startswith(f"embedding: {srv.base_url}/embeddings: ") and "\n" not in msg
    if expected is None:  # NaN: the JSON encoder writes NaN, which some parsers refuse
        assert "NaN" in msg or "not JSON" in msg
    else:
        assert expected in msg
    assert len(srv.requests) == 1  # a wrong answer is not asked for again
    assert cache.info()["vectors"] == 0
    assert ledger_summary(cache.path) == []


def test_a_bad_batch_caches_nothing_good_batches_are_kept(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with FaultServer() as srv:
        srv.faults = [Fault(), Fault(edit=lambda d: {**d, "data": d["data"][:1]})]
        emb = _embedder(srv.base_url, cache, max_texts_per_request=2, concurrency=1)
        with pytest.raises(SweepError, match="1 vectors for 2 texts"):
            emb.encode(TEXTS, progress=False)
        assert cache.info()["vectors"] == 2  # the first batch, checked and paid for
        # a fresh process (new embedder): only what is not cached is asked for
        again = _embedder(srv.base_url, cache, max_texts_per_request=2, concurrency=1)
        n = len(srv.requests)
        vecs = again.encode(TEXTS, progress=False)
        assert [r["json"]["input"] for r in srv.requests[n:]] == [TEXTS[2:4], TEXTS[4:]]
    np.testing.assert_allclose(vecs, _expected(TEXTS), rtol=1e-6)
    assert again.usage.cached == 2 and again.usage.requests == 2


def test_the_cache_answers_a_rerun_and_the_same_model_at_another_url(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with FaultServer() as one:
        first = _embedder(one.base_url, cache, price_per_mtok=2.0)
        v1 = first.encode(TEXTS, progress=False)
    with FaultServer() as two:  # another server, same model name: the vectors are shared
        second = _embedder(two.base_url, cache, price_per_mtok=2.0)
        assert second.fingerprint == first.fingerprint
        v2 = second.encode(TEXTS, progress=False)
        assert two.requests == [] and second.usage.requests == 0
        assert second.usage.cached == len(TEXTS)
    np.testing.assert_array_equal(v1, v2)
    [row] = ledger_summary(cache.path)
    assert row["texts_paid"] == 5 and row["tokens_paid"] == 50
    assert row["cost_usd_paid"] == pytest.approx(50 * 2.0 / 1e6)
    assert row["texts_from_cache"] == 5 and row["cost_usd_saved"] == pytest.approx(50 * 2e-6)


def test_what_changes_the_vectors_changes_the_fingerprint() -> None:
    base = ServedSpec(EndpointSpec("embedding", "http://a/v1"), "m")
    spec = EmbeddingSpec("x", "openai", served=base)
    fp = served_fingerprint(spec, base)
    moved = ServedSpec(EndpointSpec("embedding", "https://b.example/v1", "K", 5.0, 1, 8), "m",
                       max_texts_per_request=3, price_per_mtok=9.0)
    assert served_fingerprint(spec, moved) == fp  # where and how it is called: not identity
    for other in (ServedSpec(base.endpoint, "m2"), ServedSpec(base.endpoint, "m", 256),
                  ServedSpec(base.endpoint, "m", query_input_type="search_query"),
                  ServedSpec(base.endpoint, "m", fingerprint="v2")):
        assert served_fingerprint(spec, other) != fp
    prefixed = EmbeddingSpec("x", "openai", query_prefix="query: ", served=base)
    assert served_fingerprint(prefixed, base) != fp


def test_requests_carry_dimensions_input_type_and_the_key(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED)
    with FaultServer() as srv:
        emb = _embedder(srv.base_url, api_key_env=KEY_ENV, dimensions=4,
                        query_input_type="search_query", document_input_type="search_document")
        emb.encode(["d"], progress=False)
        emb.encode(["q"], query=True, progress=False)
    docs, query = (r["json"] for r in srv.requests)
    assert docs["dimensions"] == 4 and docs["input_type"] == "search_document"
    assert query["input_type"] == "search_query" and docs["model"] == "fake-model"
    assert srv.requests[0]["headers"]["authorization"] == f"Bearer {PLANTED}"


def test_401_names_the_variable_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, PLANTED)
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {PLANTED}"}})
    with FaultServer() as srv:
        srv.faults = [Fault(401, body=body)]
        emb = _embedder(srv.base_url, api_key_env=KEY_ENV)
        with pytest.raises(SweepError) as err:
            emb.encode(["x"], progress=False)
    assert str(err.value) == (f"embedding: {srv.base_url}/embeddings: HTTP 401, the endpoint "
                              f"refused the credentials; put the key in ${KEY_ENV} "
                              "(embedding.api_key_env)")
    assert len(srv.requests) == 1


def test_concurrency_bounds_the_requests_in_flight() -> None:
    with FaultServer() as srv:
        srv.faults = [Fault(delay_s=0.3) for _ in range(6)]
        emb = _embedder(srv.base_url, max_texts_per_request=1, concurrency=3)
        vecs = emb.encode([f"t{i}" for i in range(6)], progress=False)
    assert srv.max_in_flight == 3 and vecs.shape == (6, 8)


def test_nothing_listening_fails_before_any_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    import sweep.endpoints.http as served

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = _embedder(f"http://127.0.0.1:{port}/v1")
    slept: list[float] = []
    monkeypatch.setattr(served.time, "sleep", slept.append)
    with pytest.raises(SweepError, match="cannot reach the endpoint"):
        emb.encode(["x"], progress=False)
    assert slept == []  # the connect check fails first: no retry waits, whatever the load


def test_plan_batches_respects_both_limits() -> None:
    tokens = [3, 4, 5, 100, 1, 1, 1]
    batches = plan_batches(tokens, max_texts=2, max_tokens=8)
    assert [list(b) for b in batches] == [[0, 1], [2], [3], [4, 5], [6]]
    for b in batches:
        assert len(b) <= 2 and (sum(tokens[i] for i in b) <= 8 or len(b) == 1)
    assert [list(b) for b in plan_batches(tokens, 10, 0)] == [list(range(7))]
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past


def test_served_rerank_scores_in_input_order_and_counts_usage() -> None:
    docs = ["one doc", "two doc", "three doc"]
    with FaultServer() as srv:
        rr = ServedReranker(ServedRerankSpec(EndpointSpec("rerank", srv.base_url), "ce",
                                             price_per_request=0.5))
        scores = rr.scores("q", docs)
        srv.faults = [Fault(edit=lambda d: {**d, "results": d["results"][:2]})]
        with pytest.raises(SweepError) as err:
            rr.scores("q", docs)
    assert scores.tolist() == [fake_score("q", d) for d in docs]
    assert srv.requests[0]["json"] == {"model": "ce", "query": "q", "documents": docs,
                                       "top_n": 3}
    assert str(err.value) == f"rerank: {srv.base_url}/rerank: 2 scores for 3 documents"
    # the bad answer was still a request the endpoint answered (and bills); its tokens are
    # unknown, so only the good one's count
    assert rr.usage.requests == 2 and rr.usage.tokens == 9
    assert rr.cost(rr.usage) == pytest.approx(2 * 0.5)


# --------------------------------------------------------------------------- the CLI

FAST = ["retrieval.diagnose=false", "eval.latency_sample=0", "embedding=served_minilm"]


def _runs(uri: str) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def _files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_cli_counts_cost_fails_the_run_and_stores_no_key(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = [*FAST, f"embedding.api_key_env={KEY_ENV}", "embedding.price_per_mtok=1.5",
              "embedding.model=fake-model", f"tracking.uri={uri}", f"cache.dir={tmp_path}/cache"]
    env = {KEY_ENV: PLANTED}
    with FaultServer() as srv:
        ok = run_cli("-m", "sweep", *common, f"embedding.base_url={srv.base_url}",
                     f"hydra.run.dir={tmp_path}/run1", cwd=tmp_path, env=env)
        assert ok.returncode == 0, ok.stderr[-3000:]
        assert srv.requests and all(r["headers"]["authorization"] == f"Bearer {PLANTED}"
                                    for r in srv.requests)
        n_texts = sum(len(r["json"]["input"]) for r in srv.requests)
        n_sent = len(srv.requests)
        again = run_cli("-m", "sweep", *common, f"embedding.base_url={srv.base_url}",
                        f"hydra.run.dir={tmp_path}/run2", "sweep.force=true", cwd=tmp_path,
                        env=env)
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(srv.requests) == n_sent  # the cache answered everything
        out = run_cli("-m", "sweep.cli", "cache", "info", f"cache.dir={tmp_path}/cache",
                      cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {PLANTED}"}})
    with FaultServer() as bad:
        bad.faults = [Fault(401, body=body)]
        fail = run_cli("-m", "sweep", *common, f"embedding.base_url={bad.base_url}",
                       f"hydra.run.dir={tmp_path}/run3", "sweep.force=true",
                       "embedding.fingerprint=other", cwd=tmp_path, env=env)
    assert fail.returncode == 1
    errors = [ln for ln in fail.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [f"error: embedding: {bad.base_url}/embeddings: HTTP 401, the endpoint "
                      f"refused the credentials; put the key in ${KEY_ENV} "
                      "(embedding.api_key_env)"], fail.stderr[-2000:]

    m1 = json.loads((tmp_path / "run1" / "report.json").read_text())["metrics"]
    assert m1["embedding_texts_sent"] == n_texts and m1["embedding_requests"] == n_sent
    assert m1["embedding_tokens"] == 10 * n_texts and m1["n_requests"] == n_sent
    assert m1["embedding_cost_usd"] == pytest.approx(10 * n_texts * 1.5 / 1e6)
    m2 = json.loads((tmp_path / "run2" / "report.json").read_text())["metrics"]
    assert m2["n_requests"] == 0 and m2["embedding_cost_usd"] == 0
    assert m2["embedding_cache_hits"] == n_texts
    assert {k: v for k, v in m1.items() if "recall" in k} == \
        {k: v for k, v in m2.items() if "recall" in k}
    assert f"paid for {n_texts} texts" in out.stdout and f"answered {n_texts} texts" in out.stdout

    runs = _runs(uri)
    assert sorted(r.info.status for r in runs) == ["FAILED", "FINISHED", "FINISHED"]
    failed = next(r for r in runs if r.info.status == "FAILED")
    assert "HTTP 401" in failed.data.tags["error"]
    for r in (ok, again, fail, out):
        assert PLANTED not in r.stdout + r.stderr
    assert _files_containing(tmp_path, PLANTED.encode()) == []
    assert _files_containing(tmp_path, PLANTED[-8:].encode()) == []


def test_estimate_counts_what_the_cache_lacks_once_per_sweep(tmp_path: Path) -> None:
    from sweep.chunking.chunkers import ChunkSpec
    from sweep.cli.estimate import estimate, expand
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec
    from sweep.data.golden import load_golden
    from sweep.pipeline.memo import chunks_for, load_corpus_cached

    assert expand(["a=1,2", "b=x,y,z", "c=3"]) == [
        [f"a={a}", f"b={b}", "c=3"] for a in (1, 2) for b in "xyz"]
    common = [f"cache.dir={tmp_path}/cache", "embedding=served_minilm",
              "embedding.max_texts_per_request=50", "embedding.price_per_mtok=1.0"]
    cfg = compose(common)
    job = build_job_spec(cfg)
    docs, fp = load_corpus_cached(job.corpus, job.cache)
    questions = [g.question for g in load_golden(cfg.golden.path).items]
    texts = {size: {c.embed_text for c in chunks_for(docs, fp, ChunkSpec("recursive", size, 0,
                                                                         "none"), "minilm")}
             for size in (128, 256)}
    both = texts[128] | texts[256] | set(questions)

    [(key, e)] = estimate([*common, "chunk.size=128,256"])["endpoints"].items()
    assert key == "embedding http://127.0.0.1:7997/v1 all-MiniLM-L6-v2"
    assert e["configs"] == 2 and e["texts"] == len(both)  # shared texts counted once
    assert e["cost_usd"] == pytest.approx(e["tokens"] / 1e6)
    assert e["requests"] == -(-len(texts[128] | set(questions)) // 50) + \
        -(-len(texts[256] - texts[128] - set(questions)) // 50)

    # put the 256-token chunks in the cache under the served model's fingerprint
    from sweep.config.specs import embedding_spec
    from sweep.embedding.cache import get_cache

    with FaultServer(dim=384) as srv:
        emb = ServedEmbedder(embedding_spec(compose([*common, f"embedding.base_url={srv.base_url}"])))
        emb.cache = get_cache(tmp_path / "cache")
        emb.encode(sorted(texts[256]), progress=False)
    [e2] = estimate([*common, "chunk.size=128,256"])["endpoints"].values()
    assert e2["texts"] == len(both - texts[256])
    assert estimate(["embedding=minilm"])["endpoints"] == {}
