"""The pipeline's BM25 index memo: one index per (texts as cut, backend, parameters)."""

from __future__ import annotations


def test_bm25_index_is_shared_by_chunkings_with_the_same_texts() -> None:
    from helpers import job_of
    from sweep.pipeline.memo import bm25_for

    job = job_of(["retrieval=bm25"])
    bm25, cache = job.retrieval.bm25, job.cache.dir
    a, _ = bm25_for(["alpha beta", "gamma"], bm25, "bm25s", cache)
    assert bm25_for(["alpha beta", "gamma"], bm25, "bm25s", cache)[0] is a
    # Same characters, cut differently: a different index.
    assert bm25_for(["alpha", "beta gamma"], bm25, "bm25s", cache)[0] is not a
    assert bm25_for(["alpha betagamma"], bm25, "bm25s", cache)[0] is not a
    assert bm25_for(["alpha beta", "gamma"], bm25, "rank_bm25", cache)[0] is not a
    other = job_of(["retrieval=bm25", "retrieval.bm25_k1=1.2"]).retrieval.bm25
    assert bm25_for(["alpha beta", "gamma"], other, "bm25s", cache)[0] is not a
