"""BM25, reciprocal rank fusion, reranking mechanics and per-question diagnosis."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sweep.chunking.chunkers import Chunk
from sweep.retrieval.bm25 import BM25Index, query_tokens, tokenize
from sweep.retrieval.ranking import Ranking, lexical_search, rerank, rrf_fuse, tiebreak_order
from sweep.retrieval.search import ConfigSearch, latency_summary


def _chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk(f"d#{i}", "d", i, 0, len(t), t, t, len(t.split())) for i, t in enumerate(texts)]


def test_tokenisation_is_lowercase_unicode_words_minus_stopwords() -> None:
    assert tokenize("The ERR_4021 code on the KT-200: Café!") == ["err_4021", "code", "kt",
                                                                   "200", "café"]
    assert tokenize("the a of", frozenset()) == ["the", "a", "of"]
    assert query_tokens("refund refund window") == ["refund", "window"]


def test_query_tokens_are_remembered_per_stop_words_and_handed_out_as_new_lists() -> None:
    """A question's tokens are kept (a sweep asks it of every configuration): another stop
    word list is another entry, and a caller changing its list changes no later answer."""
    first = query_tokens("the refund and the window")
    assert first == ["refund", "window"]
    first.append("changed")
    again = query_tokens("the refund and the window")
    assert again == ["refund", "window"] and again is not first
    assert query_tokens("the refund and the window", frozenset()) == ["the", "refund", "and",
                                                                       "window"]
    assert query_tokens("the refund and the window", frozenset({"refund"})) == [
        "the", "and", "window"]


def test_rrf_hand_computed() -> None:
    tie = np.arange(4)
    fused = rrf_fuse([[0, 1, 2], [2, 0, 3]], [1.0, 1.0], 60, tie, depth=10)
    # 0: 1/61 + 1/62 = 0.0325225; 2: 1/63 + 1/61 = 0.0322664; 1: 1/62; 3: 1/63
    assert fused.indices == (0, 2, 1, 3)
    assert fused.scores == pytest.approx((1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63),
                                         abs=1e-15)
    weighted = rrf_fuse([[0, 1, 2], [2, 0, 3]], [1.0, 2.0], 60, tie, depth=3)
    # 2: 1/63 + 2/61 = 0.0486615; 0: 1/61 + 2/62 = 0.0486520; 3: 2/63; 1: 1/62
    assert weighted.indices == (2, 0, 3)
    assert weighted.scores[0] == pytest.approx(1 / 63 + 2 / 61, abs=1e-15)


@pytest.mark.parametrize("seed", range(20))
def test_rrf_equals_a_running_sum_sorted_by_score_then_id(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    lists = [rng.permutation(n)[: int(rng.integers(0, n + 1))].tolist() for _ in range(2)]
    weights = [float(rng.choice([0.5, 1.0, 2.0])), 1.0]
    tie = rng.permutation(n)
    depth = int(rng.integers(1, 100))
    fused: dict[int, float] = {}
    for ranked, w in zip(lists, weights, strict=True):
        for rank, i in enumerate(ranked, start=1):
            fused[i] = fused.get(i, 0.0) + w / (60 + rank)
    expected = sorted(fused, key=lambda i: (-fused[i], tie[i]))[:depth]
    got = rrf_fuse(lists, weights, 60, tie, depth)
    assert got.indices == tuple(expected)
    assert got.scores == tuple(fused[i] for i in expected)  # bit for bit


def test_rrf_ties_are_broken_by_chunk_id() -> None:
    tie = tiebreak_order(["b#0", "a#0"])  # chunk 1 ("a#0") sorts first
    fused = rrf_fuse([[0], [1]], [1.0, 1.0], 60, tie, depth=2)
    assert fused.indices == (1, 0)


def test_rerank_follows_scores_within_the_pool_and_keeps_the_tail() -> None:
    first = Ranking((5, 3, 9, 1, 7), (0.9, 0.8, 0.7, 0.6, 0.5))
    tie = np.arange(10)
    out = rerank(first, [0.1, 0.9, 0.5], tie)  # pool = first three
    assert out.indices == (3, 9, 5, 1, 7)
    assert out.scores[:3] == (0.9, 0.5, 0.1)
    assert out.indices[3:] == first.indices[3:]


def test_lexical_search_drops_chunks_without_a_query_word() -> None:
    scores = np.array([0.0, 2.0, 0.0, 1.0])
    assert lexical_search(scores, np.arange(4), 10).indices == (1, 3)
    assert lexical_search(scores, np.array([3, 2, 1, 0]), 1) == Ranking((1,), (2.0,))
    assert lexical_search(np.zeros(5), np.arange(5), 3) == Ranking((), ())


@pytest.mark.parametrize("seed", range(20))
def test_lexical_search_equals_a_full_sort_without_the_zeros(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    # Mostly zeros, few distinct positive values: many ties, at the cut too.
    scores = np.where(rng.random(n) < 0.8, 0.0, rng.integers(1, 5, n).astype(float))
    tiebreak = rng.permutation(n)
    depth = int(rng.integers(1, 60))
    expected = sorted((i for i in range(n) if scores[i] > 0),
                      key=lambda i: (-scores[i], tiebreak[i]))[:depth]
    got = lexical_search(scores, tiebreak, depth)
    assert got.indices == tuple(expected)
    assert got.scores == tuple(scores[i] for i in expected)


def test_bm25_backends_give_the_same_scores_on_a_small_corpus() -> None:
    texts = ["the refund window is 30 days", "ERR_4021 means the code was wrong",
             "refund refund refund", "shipping takes five days", "", "days days window"]
    a = BM25Index(texts, backend="rank_bm25")
    b = BM25Index(texts, backend="bm25s")
    for q in ["refund window", "what does ERR_4021 mean", "days", "nothing matches", "the"]:
        np.testing.assert_allclose(a.scores(q), b.scores(q), rtol=1e-9, atol=1e-12)


def test_bm25_scores_match_the_formula_by_hand() -> None:
    texts = ["apple banana", "apple apple cherry", "banana"]
    idx = BM25Index(texts, k1=1.5, b=0.75, stopwords="none")
    n, avgdl = 3, (2 + 3 + 1) / 3

    def idf(df: int) -> float:
        return max(0.0, np.log((n - df + 0.5) / (df + 0.5)))

    def term(tf: int, dl: int, df: int) -> float:
        return idf(df) * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))

    expected = [0.0, term(1, 3, 1), 0.0]  # only "cherry" (df=1) has a positive idf
    np.testing.assert_allclose(idx.scores("cherry apple"), expected, rtol=1e-12)


def test_search_diagnosis_and_latency_stages() -> None:
    chunks = _chunks(["refund window thirty days", "ERR_4021 wrong code", "shipping options"])
    vecs = np.eye(3, dtype=np.float32)
    bm25 = BM25Index([c.embed_text for c in chunks], stopwords="none")
    search = ConfigSearch(chunks, "hybrid", 3, chunk_vecs=vecs, bm25=bm25,
                          encode_query=lambda q: np.array([0, 0, 1], dtype=np.float32))
    res = search.run("ERR_4021")
    assert res.dense.indices[0] == 2 and res.bm25.indices == (1,)
    assert set(res.final.indices) == {0, 1, 2}
    assert {"query_embed", "dense_search", "bm25_search", "fusion", "end_to_end"} <= set(
        res.times_ms)
    summary = latency_summary([res.times_ms, search.run("refund").times_ms])
    assert {"latency_end_to_end_p50_ms", "latency_bm25_search_p95_ms"} <= set(summary)
    # A query embedded (and timed) elsewhere: its time is the query_embed stage and counts
    # into end_to_end, on top of this search's own stages.
    timed = search.run("ERR_4021", np.array([0, 0, 1], dtype=np.float32), query_ms=1000.0)
    assert timed.final == res.final and timed.times_ms["query_embed"] == 1000.0
    own = sum(v for k, v in timed.times_ms.items()
              if k not in ("query_embed", "end_to_end", "retrieval"))
    assert 1000.0 + own <= timed.times_ms["end_to_end"] < 2000.0  # counted once
    # retrieval: everything but the query embedding (issue 45: it hides the differences)
    assert timed.times_ms["retrieval"] == timed.times_ms["end_to_end"] - 1000.0
    assert own <= timed.times_ms["retrieval"] < 1000.0
    # Dense ranking handed in: no embedding stage, so query_ms is not counted.
    given = search.run("ERR_4021", dense=res.dense, query_ms=1000.0)
    assert "query_embed" not in given.times_ms and given.times_ms["end_to_end"] < 1000.0
    assert given.times_ms["retrieval"] == given.times_ms["end_to_end"]
    with pytest.raises(ValueError, match="query vector or encode_query"):
        ConfigSearch(chunks, "dense", 3, chunk_vecs=vecs).run("refund")


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sweep.dev.fixtures import make_untrained_cross_encoder

    return make_untrained_cross_encoder(tmp_path_factory.mktemp("rr") / "model")


def test_latency_summary_percentiles_by_hand() -> None:
    # Linear interpolation between closest ranks (numpy's default), worked out by hand:
    # end_to_end sorted = 1, 2, 4, 10 -> p50 at position 1.5 = 3.0; p95 at 2.85 = 4 + 0.85*6.
    samples = [{"end_to_end": 4.0, "rerank": 7.0}, {"end_to_end": 1.0}, {"end_to_end": 10.0},
               {"end_to_end": 2.0, "rerank": 9.0}]
    summary = latency_summary(samples)
    assert summary == pytest.approx({
        "latency_end_to_end_p50_ms": 3.0, "latency_end_to_end_p95_ms": 9.1,
        # a stage only some questions have is summarised over those: 7, 9
        "latency_rerank_p50_ms": 8.0, "latency_rerank_p95_ms": 7.0 + 0.95 * 2.0})
    assert latency_summary([]) == {}


def test_cross_encoder_rerank_orders_the_pool_by_its_scores(tiny_reranker: Path) -> None:
    from sweep.retrieval.rerank import RerankSpec, get_reranker

    texts = [f"passage {i}" + (" refunds" if i % 3 == 0 else "") + (" codes" if i % 4 == 1
                                                                      else "") for i in range(10)]
    chunks = _chunks(texts)
    bm25 = BM25Index([c.embed_text for c in chunks], stopwords="none")
    reranker = get_reranker(RerankSpec(str(tiny_reranker)))
    base = ConfigSearch(chunks, "bm25", 10, bm25=bm25)
    ranked = ConfigSearch(chunks, "bm25", 10, bm25=bm25, reranker=reranker, pool=5)
    first = base.run("refunds codes").final
    assert len(first.indices) == 6  # chunks 0, 1, 3, 5, 6, 9 share a word with the query
    final = ranked.run("refunds codes").final
    pool = first.indices[:5]
    scores = reranker.scores("refunds codes", [chunks[i].embed_text for i in pool])
    expected = [pool[j] for j in sorted(range(5), key=lambda j: (-scores[j], pool[j]))]
    assert list(final.indices[:5]) == expected
    assert final.indices[5:] == first.indices[5:]
    assert "rerank" in ranked.run("refunds").times_ms


def test_pipeline_scores_the_reranked_list(tiny_reranker: Path, tmp_path: Path) -> None:
    """bm25 + rerank end to end without an embedding model: metrics follow the new order."""
    from sweep.application.job import run_job
    from sweep.config.compose import compose
    from sweep.config.specs import build_job_spec

    base = compose(["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=3"])
    reranked = compose(["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=3",
                        "rerank=cross_encoder", f"rerank.model={tiny_reranker}",
                        "rerank.pool=10"])
    a = run_job(build_job_spec(base), progress=False)
    b = run_job(build_job_spec(reranked), progress=False)
    assert a.report["metrics"]["recall_at_10"] == pytest.approx(
        b.report["metrics"]["recall_at_10"])  # the pool (top 10) holds the same chunks
    assert a.report["metrics"]["mrr"] != b.report["metrics"]["mrr"]
    for row_a, row_b in zip(a.rows, b.rows, strict=True):
        assert sorted(row_a["retrieved_ids"].split()) == sorted(row_b["retrieved_ids"].split())
    assert "latency_rerank_p50_ms" in b.report["metrics"]
    assert "latency_query_embed_p50_ms" not in b.report["metrics"]
    json.dumps(b.report)  # serialisable


