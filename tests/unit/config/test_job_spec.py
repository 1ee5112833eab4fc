"""The job spec (`config.specs.build_job_spec`): every stage's spec built once from the composed
configuration, frozen, and what the pipeline reads instead of the `Config` (issue 31)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sweep.chunking.chunkers import ChunkSpec
from sweep.chunking.semantic import SemanticParams
from sweep.common.store import CacheTarget
from sweep.config.compose import compose, to_container
from sweep.config.specs import build_job_spec
from sweep.endpoints.spec import EndpointSpec
from sweep.retrieval.rerank import RerankSpec, ServedRerankSpec


def test_the_default_job() -> None:
    cfg = compose([])
    job = build_job_spec(cfg)
    assert job.plain == to_container(cfg)
    assert job.golden == cfg.golden.path and job.corpus.path == cfg.corpus.path
    assert job.corpus.parser_map == {"pdf": "pdfplumber", "html": "trafilatura",
                                     "docx": "python_docx"}
    assert job.chunking.spec == ChunkSpec()  # the schema's chunk defaults are ChunkSpec's
    assert job.chunking.cutting is None and job.chunking.context is None
    assert job.retrieval.method == "dense" and job.retrieval.uses_dense
    assert not job.retrieval.uses_bm25
    assert (job.retrieval.bm25.k1, job.retrieval.bm25.b) == (1.5, 0.75)
    assert job.rerank.spec is None and job.rerank.method == "none"
    assert job.scoring.headline == "recall_at_5" and job.scoring.spec.k == (1, 3, 5, 10)
    assert job.cache == CacheTarget(Path(cfg.cache.dir))
    assert job.generation.method == job.judge.method == "none"
    assert job.embedding.served is None
    # frozen, and hashable (the plain config takes no part in equality or the hash)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.golden = "x"  # type: ignore[misc]
    assert hash(job) == hash(build_job_spec(compose([])))


def test_each_choice_builds_only_the_spec_it_uses() -> None:
    job = build_job_spec(compose([
        "chunk.boundary=semantic", "chunk.semantic.window=2", "chunk.semantic.threshold=90",
        "chunk.semantic.model=cutter", "retrieval=hybrid", "retrieval.bm25_k1=1.2",
        "rerank=cross_encoder", "rerank.pool=20", "cache.enabled=false",
        "eval.latency_sample=7"]))
    assert job.chunking.cutting is not None
    assert job.chunking.cutting.params == SemanticParams(window=2, threshold=90.0)
    assert job.chunking.cutting.model == "cutter"
    assert job.retrieval.uses_dense and job.retrieval.uses_bm25
    assert job.retrieval.bm25.k1 == 1.2
    assert isinstance(job.rerank.spec, RerankSpec) and job.rerank.pool == 20
    assert job.cache is None  # cache.enabled=false
    assert job.scoring.latency_sample == 7

    cluster = build_job_spec(compose(["chunk.boundary=cluster", "chunk.cluster.piece_tokens=30"]))
    assert cluster.chunking.cutting is not None
    # the other boundary's settings stay at their defaults: two cuts alike share one memo key
    assert cluster.chunking.cutting.params == SemanticParams(piece_tokens=30)
    assert cluster.chunking.cutting.model == ""


def test_endpoints_are_in_the_spec() -> None:
    job = build_job_spec(compose([
        "chunk.header=contextual", "chunk.context.base_url=http://h:1/v1",
        "chunk.context.model=m", "chunk.context.dry_run=true", "rerank=served",
        "rerank.base_url=http://r:2", "rerank.model=rr", "rerank.price_per_request=0.002"]))
    context = job.chunking.context
    assert context is not None and context.spec.dry_run
    assert context.endpoint == EndpointSpec("chunk.context", "http://h:1/v1", "OPENAI_API_KEY",
                                            60.0, 4, 4)
    assert context.model == "m"
    rerank = job.rerank.spec
    assert isinstance(rerank, ServedRerankSpec)
    assert (rerank.endpoint.base_url, rerank.model, rerank.price_per_request) == (
        "http://r:2", "rr", 0.002)


def test_the_spec_does_not_follow_the_config_after_it_is_built() -> None:
    cfg = compose([])
    job = build_job_spec(cfg)
    cfg.chunk.size = 64
    cfg.eval.latency_sample = 0
    assert job.chunking.spec.size == ChunkSpec().size
    assert job.scoring.latency_sample == 100
