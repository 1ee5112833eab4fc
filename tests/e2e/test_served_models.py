"""The served path against a real server: infinity-emb serving the bundled MiniLM as
``all-MiniLM-L6-v2`` and an untrained test cross-encoder as ``test-cross-encoder``.

The server is the one at $CHUNK_SWEEP_TEST_SERVER when that is set (``.ci/run`` starts it with
``make model-server`` and points $CHUNK_SWEEP_TEST_RERANKER at its cross-encoder); otherwise the
test starts its own from ``<repo>/.venv-infinity`` (``make infinity-venv``) on a free port, with
its state in a temporary folder, and stops it afterwards.

The same model served and local gives the same vectors (cosine >= 0.9999), so the demo sweep
gives identical metrics; a second run sends 0 requests; the served cross-encoder scores like
the local CrossEncoder on the same folder.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, free_port, run_cli, served_model_ids

pytestmark = pytest.mark.slow

INFINITY = ROOT / ".venv-infinity" / "bin" / "infinity_emb"


@dataclass(frozen=True)
class Server:
    url: str  # without the /v1 prefix
    models: list[str]
    reranker: Path  # the cross-encoder folder it serves as "test-cross-encoder"


def _require_minilm(url: str, models: list[str]) -> None:
    if "all-MiniLM-L6-v2" not in models:
        pytest.fail(f"{url} serves {models}, not all-MiniLM-L6-v2", pytrace=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    given = os.environ.get("CHUNK_SWEEP_TEST_SERVER")
    if given:
        models = served_model_ids(given)
        if models is None:
            pytest.fail(f"CHUNK_SWEEP_TEST_SERVER={given}: nothing answers at {given}/v1/models",
                        pytrace=False)
        _require_minilm(given, models)
        reranker = Path(os.environ.get("CHUNK_SWEEP_TEST_RERANKER", ""))
        yield Server(given, models, reranker)
        return
    if not INFINITY.is_file():
        pytest.fail(f"no infinity server at {INFINITY}: run `make infinity-venv` (builds "
                    ".venv-infinity from locks/infinity-server.txt) or set "
                    "CHUNK_SWEEP_TEST_SERVER", pytrace=False)
    from sweep.dev.fixtures import make_untrained_cross_encoder

    state = tmp_path_factory.mktemp("model-server")
    reranker = make_untrained_cross_encoder(state / "test-cross-encoder")
    port = free_port()
    env = {**os.environ, "VENV": str(INFINITY.parent.parent), "PORT": str(port),
           "STATE": str(state), "RERANK_MODEL": str(reranker)}
    script = str(ROOT / "servers" / "infinity.sh")
    res = subprocess.run([script, "start"], env=env, capture_output=True, text=True,
                         timeout=600)
    try:
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or ["(no output)"])[0]
            pytest.fail(f"infinity did not start on port {port}: {last}", pytrace=False)
        url = f"http://127.0.0.1:{port}"
        models = served_model_ids(url) or []
        _require_minilm(url, models)
        yield Server(url, models, reranker)
    finally:
        subprocess.run([script, "stop"], env=env, capture_output=True, timeout=60)


def test_served_minilm_gives_the_local_vectors(server: Server) -> None:
    from sweep.chunking.chunkers import ChunkSpec
    from sweep.chunking.tokenizers import load_chunk_tokenizer
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec
    from sweep.embedding.models import EmbeddingSpec, get_embedder
    from sweep.pipeline.memo import chunks_for, load_corpus_cached
    from sweep.pipeline.run import embedder_for

    job = build_job_spec(compose(["embedding=served_minilm",
                                  f"embedding.base_url={server.url}/v1", "cache.enabled=false"]))
    docs, fp = load_corpus_cached(job.corpus, job.cache)
    texts = [c.embed_text for c in chunks_for(docs, fp, ChunkSpec("recursive", 256, 0, "none"),
                                              "minilm")]
    served = embedder_for(job.embedding, job.cache)
    remote = served.encode(texts, progress=False)
    local = get_embedder(EmbeddingSpec("minilm", device="cpu")).encode(texts, progress=False)
    assert remote.shape == local.shape == (len(texts), 384)
    cosine = np.sum(remote * local, axis=1)
    assert cosine.min() >= 0.9999, cosine.min()
    u = served.usage
    unique = list(dict.fromkeys(texts))  # each distinct text is sent once
    assert u.texts == len(unique) and u.requests == -(-len(unique) // 64)  # 64 a request
    assert u.tokens_counted == 0  # infinity reports usage (--lengths-via-tokenize: tokens)
    # the same WordPiece as the chunk tokenizer's count, +2 special tokens, cut at 256
    tok = load_chunk_tokenizer("minilm")
    counted = sum(min(len(tok.token_starts(t)) + 2, 256) for t in unique)
    assert abs(u.tokens - counted) <= 0.03 * counted, (u.tokens, counted)


def test_the_demo_sweep_is_identical_served_or_local_and_a_rerun_is_free(
        server: Server, tmp_path: Path) -> None:
    from sweep.outputs.report import read_reports, result_metrics

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = [f"embedding.base_url={server.url}/v1", f"tracking.uri={uri}",
              f"cache.dir={tmp_path}/cache", "eval.latency_sample=0"]
    res = run_cli("-m", "sweep", "-m", "embedding=minilm,served_minilm", *common,
                  f"hydra.sweep.dir={tmp_path}/sweep1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    (_, local), (_, served) = read_reports(tmp_path / "sweep1")
    assert local["config"]["embedding"]["name"] == "minilm"
    # behind an endpoint the model's max_seq_length is unknown: no truncation figure
    assert "truncated_fraction" not in served["metrics"]
    del local["metrics"]["truncated_fraction"]
    assert result_metrics(local["metrics"]) == result_metrics(served["metrics"])
    assert len(result_metrics(served["metrics"])) >= 40
    m = served["metrics"]
    assert m["n_requests"] == m["embedding_requests"] > 0
    assert m["embedding_texts_sent"] == m["n_texts_encoded"] > 0
    assert "n_requests" not in local["metrics"]
    assert "served models: " in res.stdout

    again = run_cli("-m", "sweep", "-m", "embedding=served_minilm", "sweep.force=true",
                    *common, f"hydra.sweep.dir={tmp_path}/sweep2", cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    [(_, rerun)] = read_reports(tmp_path / "sweep2")
    assert rerun["metrics"]["n_requests"] == 0
    assert rerun["metrics"]["embedding_cache_hits"] == m["embedding_texts_sent"]
    assert result_metrics(rerun["metrics"]) == result_metrics(m)
    assert "served models: 0 requests" in again.stdout

    from mlflow import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags
               and "n_configs" in r.data.metrics]
    assert sorted(p.data.metrics.get("total_n_requests", -1) for p in parents) == \
        [0, m["n_requests"]]


def test_served_reranker_scores_like_the_local_cross_encoder(server: Server) -> None:
    assert "test-cross-encoder" in server.models, f"no test-cross-encoder: {server.models}"
    assert (server.reranker / "config.json").is_file(), (
        f"set CHUNK_SWEEP_TEST_RERANKER to the folder the server serves ({server.reranker})")
    from sweep.endpoints.spec import EndpointSpec
    from sweep.retrieval.rerank import (
        CrossEncoderReranker,
        RerankSpec,
        ServedReranker,
        ServedRerankSpec,
    )

    docs = ["Returns are free within 30 days.", "Shipping takes 3-5 business days.",
            "We ship to the EU and the UK.", "Gift cards never expire.", "Call us at 9am."]
    served = ServedReranker(ServedRerankSpec(EndpointSpec("rerank", f"{server.url}/v1"),
                                             "test-cross-encoder"))
    remote = served.scores("how long do returns take?", docs)
    local = CrossEncoderReranker(RerankSpec(str(server.reranker))).scores(
        "how long do returns take?", docs)
    # both apply the sigmoid of a 1-label head (infinity's relevance_score, ST's default)
    np.testing.assert_allclose(remote, local, rtol=0, atol=1e-6)
    assert list(np.argsort(-remote)) == list(np.argsort(-local))
    assert served.usage.requests == 1
