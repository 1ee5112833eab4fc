"""The batched first stage equals the per-question reference functions, ranking for ranking
and score for score (`==` on tuples of Python floats: bit for bit).

`top_k_rows` against `top_k` and `lexical_search`, `rrf_fuse_rows` against `rrf_fuse`, on
random cases built to hit the corners (ties across the cut, depth past the row, empty rows
and lists, weights of 0, negative and signed-zero scores, float64 values that round to one
float32), and `ConfigSearch.run_all` against the code it replaced (`old_run_all` in
tests/helpers.py, a copy of it written with the reference functions) for dense, BM25 and
hybrid on the demo.
COVID-QA: tests/realdata/test_search_covid.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from helpers import DEMO, old_run_all, same_results
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.retrieval import search as search_module
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.ranking import (
    RankedRows,
    Ranking,
    _packed_order,
    lexical_search,
    rrf_fuse,
    rrf_fuse_rows,
    top_k,
    top_k_rows,
)
from sweep.retrieval.search import ConfigSearch


def _scores(rng: np.random.Generator, case: int, shape: tuple[int, int]) -> np.ndarray:
    """Score matrices of the kinds the searches meet, and their corners."""
    kind = case % 5
    if kind == 0:  # cosines: float32, negative ones included
        out = rng.standard_normal(shape).astype(np.float32)
    elif kind == 1:  # few distinct values: ties everywhere, across the cut too
        out = rng.integers(-3, 4, shape).astype(np.float32)
    elif kind == 2:  # BM25-like: float64, mostly zero, ties among the positives
        out = np.where(rng.random(shape) < 0.6, 0.0, rng.integers(1, 5, shape) * 0.75)
    elif kind == 3:  # float64 neighbours that become one float32: order must still hold
        pool = rng.standard_normal(4)
        out = rng.choice(np.concatenate([pool, np.nextafter(pool, np.inf)]), shape)
    else:  # signed zeros: -0.0 == 0.0, so they tie
        out = rng.choice(np.array([-0.0, 0.0, 0.5, -0.5], dtype=np.float32), shape)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_top_k_rows_equals_top_k_row_by_row(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for case in range(300):
        n = int(rng.integers(0, 40))
        rows = int(rng.integers(0, 7))
        depth = int(rng.integers(0, 50))  # past n about half the time
        scores = _scores(rng, case, (rows, n))
        tiebreak = rng.permutation(n) if case % 2 else np.arange(n)[::-1].copy()
        got = top_k_rows(scores, tiebreak, depth)
        assert len(got) == rows
        assert got.rankings() == [top_k(row, tiebreak, depth) for row in scores]
        matched = top_k_rows(scores, tiebreak, depth, matched_only=True)
        assert matched.rankings() == [lexical_search(row, tiebreak, depth) for row in scores]


def test_top_k_rows_of_a_big_block_goes_a_few_rows_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the copy budget shrunk to 3 rows of 40 float64 (a 69k-chunk corpus's 256-row
    block is over it the same way), the rows are ranked in slices: the same rankings."""
    from sweep.retrieval import ranking

    rng = np.random.default_rng(11)
    scores = np.where(rng.random((10, 40)) < 0.5, 0.0, rng.integers(1, 6, (10, 40)) * 0.5)
    tiebreak = rng.permutation(40)
    whole = top_k_rows(scores, tiebreak, 7, matched_only=True)
    monkeypatch.setattr(ranking, "BLOCK_BYTES", 3 * 8 * 40)
    sliced = top_k_rows(scores, tiebreak, 7, matched_only=True)
    assert sliced.rankings() == whole.rankings() == [lexical_search(r, tiebreak, 7)
                                                    for r in scores]
    assert top_k_rows(scores, tiebreak, 7).rankings() == [top_k(r, tiebreak, 7) for r in scores]


def test_top_k_rows_keeps_python_types_and_signed_zeros() -> None:
    scores = np.array([[-0.0, 0.5, 0.0, -0.5]], dtype=np.float32)
    [ranking] = top_k_rows(scores, np.arange(4), 3).rankings()
    # 0.5 first, then the two zeros in tie order (index 0 before 2), each as it was stored
    assert ranking.indices == (1, 0, 2)
    assert [np.signbit(s) for s in ranking.scores] == [False, True, False]
    assert all(type(i) is int for i in ranking.indices)
    assert all(type(s) is float for s in ranking.scores)


def _ragged(rng: np.random.Generator, count: int, n: int, duplicates: bool) -> list[list[int]]:
    lists = []
    for _ in range(count):
        size = int(rng.integers(0, n + 1)) if n else 0
        ranked = rng.permutation(n)[:size].tolist()
        if duplicates and ranked:  # rrf_fuse sums a chunk listed twice: so must the block
            ranked += rng.choice(ranked, size=int(rng.integers(1, 3))).tolist()
        lists.append(ranked)
    return lists


def _rows(lists: Sequence[Sequence[int]]) -> RankedRows:
    return RankedRows.of([Ranking(tuple(x), tuple(0.0 for _ in x)) for x in lists])


@pytest.mark.parametrize("seed", range(6))
def test_rrf_fuse_rows_equals_rrf_fuse_query_by_query(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    for case in range(200):
        n = int(rng.integers(0, 30))
        queries = int(rng.integers(1, 6))
        n_lists = int(rng.integers(1, 4))
        per_list = [_ragged(rng, queries, n, duplicates=case % 4 == 3) for _ in range(n_lists)]
        if case % 5 == 0:  # one list empty for every query
            per_list[0] = [[] for _ in range(queries)]
        weights = [float(rng.choice([0.0, 0.5, 1.0, 2.0, 1 / 3])) for _ in range(n_lists)]
        k = int(rng.choice([0, 1, 60]))
        tiebreak = rng.permutation(n) if case % 2 else np.arange(n)
        depth = int(rng.integers(0, 70))
        got = rrf_fuse_rows([_rows(lists) for lists in per_list], weights, k, tiebreak, depth)
        expected = [rrf_fuse([lists[q] for lists in per_list], weights, k, tiebreak, depth)
                    for q in range(queries)]
        assert got.rankings() == expected


def test_rrf_fuse_rows_ties_and_a_hand_computed_block() -> None:
    # query 0 as in test_rrf_hand_computed; query 1: chunk 3 alone in one list, chunk 1 alone
    # in the other, both at rank 1: a tie (1/61 each), broken by tiebreak (3 before 1 here).
    dense = _rows([[0, 1, 2], [3]])
    bm25 = _rows([[2, 0, 3], [1]])
    tie = np.array([0, 3, 1, 2])
    fused = rrf_fuse_rows([dense, bm25], [1.0, 1.0], 60, tie, 10).rankings()
    assert fused[0].indices == (0, 2, 1, 3)
    assert fused[0].scores == (1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63)
    assert fused[1] == Ranking((3, 1), (1 / 61, 1 / 61))
    with pytest.raises(ValueError, match="one ranking per query"):
        rrf_fuse_rows([dense, _rows([[1]])], [1.0, 1.0], 60, tie, 10)


def test_the_packed_order_refuses_what_it_cannot_show_equal() -> None:
    """The quick path declines (None) and lexsort answers: two float64 values that share a
    float32, a tie value repeated among equal scores, NaN. Its answers, when it gives one,
    are lexsort's."""
    rows = np.zeros(3, dtype=np.int64)
    close = np.array([1.0, np.nextafter(1.0, 2.0), 0.5])
    assert np.float32(close[0]) == np.float32(close[1])
    assert _packed_order(rows, close, np.array([0, 1, 2]), 1) is None
    assert _packed_order(rows, np.array([1.0, 1.0, 0.5]), np.array([4, 4, 0]), 1) is None
    assert _packed_order(rows, np.array([1.0, np.nan, 0.5]), np.array([0, 1, 2]), 1) is None
    rng = np.random.default_rng(7)
    for _ in range(50):
        m = int(rng.integers(1, 200))
        r = np.sort(rng.integers(0, 5, m))
        v = rng.integers(-4, 5, m) * 0.25
        t = rng.permutation(m)
        order = _packed_order(r, v, t, 5)
        assert order is not None
        assert order.tolist() == np.lexsort((t, -v, r)).tolist()
    # and the rankings still equal the reference when the quick path declines
    scores = np.array([[1.0, np.nextafter(1.0, 2.0), 0.5, 1.0]])
    tb = np.array([3, 2, 1, 0])
    assert top_k_rows(scores, tb, 3).rankings() == [top_k(scores[0], tb, 3)]


def test_ranked_rows_round_trip_and_concat() -> None:
    rankings = [Ranking((2, 0), (0.5, 0.25)), Ranking((), ()), Ranking((1,), (1.0,))]
    rows = RankedRows.of(rankings)
    assert rows.rankings() == rankings and len(rows) == 3
    both = RankedRows.concat([rows, RankedRows.of(rankings[:1])])
    assert both.rankings() == rankings + rankings[:1]


# --------------------------------------------------------------- run_all against the old code


@pytest.fixture(scope="module")
def demo_search() -> tuple[list, list[str], np.ndarray, np.ndarray, BM25Index]:
    docs = load_corpus(DEMO / "corpus")
    chunks = chunk_corpus(docs, ChunkSpec("recursive", 64, 8), RegexTokenizer())
    # 600 questions (the demo's 60, ten times): three blocks, the last one short
    questions = [it.question for it in load_golden(DEMO / "golden.jsonl").items] * 10
    rng = np.random.default_rng(3)

    def unit(n: int) -> np.ndarray:  # random unit vectors stand in for a model's
        x = rng.standard_normal((n, 48)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    bm25 = BM25Index([c.embed_text for c in chunks], backend="bm25s")
    return chunks, questions, unit(len(chunks)), unit(len(questions)), bm25


@pytest.mark.parametrize("method", ["dense", "bm25", "hybrid"])
@pytest.mark.parametrize("depth", [10, 100, 10_000])
def test_run_all_equals_the_old_run_all_on_the_demo(demo_search: tuple, method: str,
                                                    depth: int) -> None:
    chunks, questions, chunk_vecs, query_vecs, bm25 = demo_search
    search = ConfigSearch(chunks, method, depth,
                          chunk_vecs=None if method == "bm25" else chunk_vecs,
                          bm25=None if method == "dense" else bm25, rrf_k=60,
                          dense_weight=1.0, bm25_weight=0.5 if method == "hybrid" else 1.0)
    vecs = None if method == "bm25" else query_vecs
    new = search.run_all(questions, vecs)
    assert same_results(new, old_run_all(search, questions, vecs)) > len(questions)
    if depth > len(chunks) and method == "dense":  # past the corpus: every chunk, ranked
        assert all(sorted(r.final.indices) == list(range(len(chunks))) for r in new)
    # A search with every retriever attached (the diagnosis lists) gives the same too.
    both = ConfigSearch(chunks, method, depth, chunk_vecs=chunk_vecs, bm25=bm25)
    same_results(both.run_all(questions, query_vecs), old_run_all(both, questions, query_vecs))


def test_run_all_equals_run_question_by_question(demo_search: tuple) -> None:
    """Against `run` itself: BM25 and the fusion's inputs are per question there, and the
    dense stage a product of one row. One row against a block of 256 may round a cosine's
    last float32 bit differently (BLAS picks the kernel by shape), so the dense scores are
    compared to 1e-6 and the rankings exactly; handed the same dense rankings, everything
    is equal."""
    chunks, questions, chunk_vecs, query_vecs, bm25 = demo_search
    search = ConfigSearch(chunks, "hybrid", 50, chunk_vecs=chunk_vecs, bm25=bm25)
    batched = search.run_all(questions[:300], query_vecs[:300])
    single = [search.run(q, v) for q, v in zip(questions[:300], query_vecs[:300], strict=True)]
    for a, b in zip(batched, single, strict=True):
        assert a.dense.indices == b.dense.indices and a.bm25 == b.bm25
        assert a.dense.scores == pytest.approx(b.dense.scores, abs=1e-6)
    handed = [search.run(q, dense=r.dense) for q, r in zip(questions[:300], batched,
                                                              strict=True)]
    same_results(batched, handed)


def test_run_all_holds_a_block_of_bm25_scores_to_its_budget(
        demo_search: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big corpus's BM25 block is scored a few rows at a time (the budget, here shrunk to
    seven rows' worth); same results."""
    chunks, questions, chunk_vecs, query_vecs, bm25 = demo_search
    search = ConfigSearch(chunks, "hybrid", 100, chunk_vecs=chunk_vecs, bm25=bm25)
    before = search.run_all(questions, query_vecs)
    monkeypatch.setattr(search_module, "STEP_BYTES", 7 * 8 * len(chunks))
    seen: list[int] = []
    real = search_module.top_k_rows

    def counting(scores: np.ndarray, *args: object, **kwargs: object) -> RankedRows:
        seen.append(scores.shape[0])
        return real(scores, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search_module, "top_k_rows", counting)
    after = search.run_all(questions, query_vecs)
    same_results(after, before)
    assert 7 in seen and max(seen) == 256  # BM25 blocks of 7; dense blocks still 256


def test_run_all_embeds_questions_without_vectors_one_at_a_time() -> None:
    chunks = chunk_corpus(load_corpus(DEMO / "corpus"), ChunkSpec("recursive", 64),
                          RegexTokenizer())
    vecs = np.eye(len(chunks), 8, dtype=np.float32)
    calls: list[str] = []

    def encode(q: str) -> np.ndarray:
        calls.append(q)
        return vecs[len(q) % len(chunks)]

    search = ConfigSearch(chunks, "dense", 5, chunk_vecs=vecs, encode_query=encode)
    got = search.run_all(["a", "bb", "ccc"], None)
    assert calls == ["a", "bb", "ccc"]
    assert [r.final for r in got] == [search.run(q, vecs[len(q) % len(chunks)]).final
                                      for q in ["a", "bb", "ccc"]]


@pytest.fixture(scope="module")
def tiny_reranker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sweep.dev.fixtures import make_untrained_cross_encoder

    return make_untrained_cross_encoder(tmp_path_factory.mktemp("rr") / "model")


def test_run_all_reranks_each_question_as_run_does(demo_search: tuple,
                                                   tiny_reranker: Path) -> None:
    from sweep.retrieval.rerank import RerankSpec, get_reranker

    chunks, questions, chunk_vecs, query_vecs, bm25 = demo_search
    search = ConfigSearch(chunks, "hybrid", 20, chunk_vecs=chunk_vecs, bm25=bm25,
                          reranker=get_reranker(RerankSpec(str(tiny_reranker))), pool=5)
    new = search.run_all(questions[:12], query_vecs[:12])
    same_results(new, old_run_all(search, questions[:12], query_vecs[:12]))
    plain = ConfigSearch(chunks, "hybrid", 20, chunk_vecs=chunk_vecs, bm25=bm25)
    first = plain.run_all(questions[:12], query_vecs[:12])
    assert any(a.final.indices[:5] != b.final.indices[:5] for a, b in zip(new, first,
                                                                          strict=True))
    assert all(a.final.indices[5:] == b.final.indices[5:] for a, b in zip(new, first,
                                                                          strict=True))



def _bm25s_reference(texts: list[str], queries: list[str]) -> np.ndarray:
    """bm25s indexing the word lists itself and scoring each query (`get_scores` of its known
    words, times k1 + 1 = 2.5; zeros when it knows none)."""
    import bm25s

    from sweep.retrieval.bm25 import query_tokens, tokenize

    ref = bm25s.BM25(k1=1.5, b=0.75, method="robertson", dtype="float64")
    ref.index([tokenize(t) for t in texts], show_progress=False)
    rows = []
    for q in queries:
        known = [t for t in query_tokens(q) if t in ref.vocab_dict]
        rows.append(np.asarray(ref.get_scores(known), dtype=np.float64) * 2.5 if known
                    else np.zeros(len(texts)))
    return np.stack(rows)


@pytest.mark.parametrize("backend", ["bm25s", "rank_bm25"])
def test_scores_many_equals_scores_bit_for_bit(demo_search: tuple, backend: str) -> None:
    """`BM25Index.scores_many` (one bincount over the block) against `scores` and, for bm25s,
    against bm25s's own per-query `np.add.at`: the same float64 bits, on the demo's questions plus queries with
    no known word, a repeated word, a stop word only and an empty text."""
    chunks, questions, *_ = demo_search
    index = BM25Index([c.embed_text for c in chunks], backend=backend)
    odd = ["zzzqqq unknownword", "", "the of and", "backup backup BACKUP restore",
           questions[0] + " " + questions[0]]
    queries = [*questions[:60], *odd]
    many = index.scores_many(queries)
    single = np.stack([index.scores(q) for q in queries])
    assert many.shape == (len(queries), len(chunks)) and many.dtype == np.float64
    assert np.array_equal(many.view(np.int64), single.view(np.int64))
    if backend == "bm25s":  # both are numpy's sums here: against bm25s's own get_scores too
        ref = _bm25s_reference([c.embed_text for c in chunks], queries)
        assert np.array_equal(many.view(np.int64), ref.view(np.int64))
    assert (many[:60] > 0).any(axis=1).all()  # every demo question matches some chunk
    assert not many[60:63].any()  # unknown, empty, stop words only: nothing matches
    assert index.scores_many([]).shape == (0, len(chunks))
