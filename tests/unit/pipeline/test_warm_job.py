"""A warm job (every vector and measurement on disk) gives the same numbers without a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import job_of
from sweep.application import job as pipeline
from sweep.embedding import models
from sweep.outputs.report import result_metrics
from sweep.pipeline import memo


def _fresh_process() -> None:
    """What a new `python -m sweep` starts with: no memo, no loaded models."""
    memo.clear_memo()
    models._EMBEDDERS.clear()


def test_warm_job_never_loads_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = [f"cache.dir={tmp_path}", "retrieval=hybrid"]
    _fresh_process()
    cold = pipeline.run_job(job_of([*base, "eval.latency_sample=5"]), progress=False)
    assert cold.report["metrics"]["n_texts_encoded"] > 0
    # report.json: what was sent to the model beside what the cache answered (a new cache: none)
    assert cold.report["texts_encoded"] == cold.report["metrics"]["n_texts_encoded"]
    assert cold.report["texts_from_cache"] == 0 and cold.report["cache_backend"] == "sqlite"
    assert cold.report["node"]
    assert cold.report["latency_source"] == "measured"
    # The embed stage's time splits into the model's encode calls, its load and the rest
    # (the stage's own overhead, which the bench prints): the parts are within the whole.
    t = cold.report["timings_s"]
    assert t["embed_encode_s"] > 0 and t["embed_load_s"] > 0
    assert t["embed_encode_s"] + t["embed_load_s"] <= t["embed_s"]
    # A second configuration in the same process times no query again, and says so.
    other = pipeline.run_job(job_of([*base, "eval.latency_sample=5", "chunk.size=128"]),
                                progress=False)
    assert other.report["latency_source"].endswith("reused from an earlier configuration of "
                                                   "this process")

    def refuse(*_: object) -> None:
        raise AssertionError("the embedding model was loaded on a warm cache")

    monkeypatch.setattr(models, "_load_sentence_transformer", refuse)
    for sample in (5, 0):
        _fresh_process()
        warm = pipeline.run_job(job_of([*base, f"eval.latency_sample={sample}"]),
                                   progress=False)
        assert result_metrics(warm.report["metrics"]) == result_metrics(cold.report["metrics"])
        assert warm.report["metrics"]["n_texts_encoded"] == 0
        # nothing ran inside the model: the whole embed stage is overhead
        assert warm.report["timings_s"]["embed_encode_s"] == 0.0
        assert warm.report["timings_s"]["embed_load_s"] == 0.0
        # every distinct text the cold job encoded is read back, and nothing else
        assert warm.report["texts_encoded"] == 0
        assert warm.report["texts_from_cache"] == cold.report["texts_encoded"]
        assert warm.rows == cold.rows
        if sample:
            assert "cached" in warm.report["latency_source"]
            # The query times measured cold come back: end-to-end latency stays comparable.
            assert (warm.report["metrics"]["latency_query_embed_p50_ms"]
                    == cold.report["metrics"]["latency_query_embed_p50_ms"])
        else:
            assert warm.report["latency_source"] == "skipped (eval.latency_sample=0)"
    _fresh_process()
