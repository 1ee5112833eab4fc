"""The pipeline's BM25 index memo: one index per (texts as cut, backend, parameters)."""

from __future__ import annotations


def test_bm25_index_is_shared_by_chunkings_with_the_same_texts() -> None:
    from sweep.config.compose import compose
    from sweep.pipeline.run import bm25_for

    cfg = compose(["retrieval=bm25"])
    a, _ = bm25_for(["alpha beta", "gamma"], cfg, "bm25s")
    assert bm25_for(["alpha beta", "gamma"], cfg, "bm25s")[0] is a
    # Same characters, cut differently: a different index.
    assert bm25_for(["alpha", "beta gamma"], cfg, "bm25s")[0] is not a
    assert bm25_for(["alpha betagamma"], cfg, "bm25s")[0] is not a
    assert bm25_for(["alpha beta", "gamma"], cfg, "rank_bm25")[0] is not a
    other = compose(["retrieval=bm25", "retrieval.bm25_k1=1.2"])
    assert bm25_for(["alpha beta", "gamma"], other, "bm25s")[0] is not a
