"""FAISS indexes behind the dense stage: the same answers as exact search where they must be,
reproducible builds, and one-line errors for corpora too small to train on."""

from __future__ import annotations

import numpy as np
import pytest

from sweep.common.errors import SweepError
from sweep.retrieval.index import IndexSpec, build_index, overlap_at_k
from sweep.retrieval.ranking import Ranking, dense_search, tiebreak_order


def _clustered(n: int, d: int = 384, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors around 40 centres (like topics of a corpus), and queries near some."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, d))
    x = centres[rng.integers(0, 40, n)] + 0.7 * rng.normal(size=(n, d))
    q = x[rng.choice(n, min(n, 60), replace=False)] + 0.3 * rng.normal(size=(min(n, 60), d))
    norm = lambda a: (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    return norm(x), norm(q)


def _ids(n: int) -> np.ndarray:
    return tiebreak_order([f"c{i:05d}" for i in range(n)])


def test_overlap_at_k_by_hand() -> None:
    exact = [Ranking((1, 2, 3), (0.9, 0.8, 0.7)), Ranking((4, 5, 6), (0.9, 0.8, 0.7))]
    approx = [Ranking((2, 1, 9), (0.8, 0.7, 0.1)), Ranking((7, 8, 4), (0.9, 0.8, 0.7))]
    got = overlap_at_k(exact, approx, [1, 2, 3])
    # k=1: {1} vs {2} -> 0, {4} vs {7} -> 0; k=2: {1,2} both -> 1, {4,5} vs {7,8} -> 0;
    # k=3: {1,2,3} vs {2,1,9} -> 2/3, {4,5,6} vs {7,8,4} -> 1/3.
    assert got == pytest.approx({"ann_overlap_at_1": 0.0, "ann_overlap_at_2": 0.5,
                                 "ann_overlap_at_3": 0.5})


def test_exact_index_is_todays_search() -> None:
    x, q = _clustered(500)
    tb = _ids(500)
    index = build_index(IndexSpec("exact"), x, tb)
    assert index.search(q, 20) == dense_search(q, x, tb, 20)
    assert overlap_at_k(dense_search(q, x, tb, 20), index.search(q, 20), [1, 5, 10]) == {
        "ann_overlap_at_1": 1.0, "ann_overlap_at_5": 1.0, "ann_overlap_at_10": 1.0}
    assert index.nbytes == x.nbytes and index.build_s == 0.0


@pytest.mark.parametrize("kind", ["ivf_flat", "scalar"])
def test_exhaustive_settings_return_the_exact_neighbours(kind: str) -> None:
    # IVF probing every cell scans every vector exactly; fp16 keeps ~3 significant digits.
    x, q = _clustered(800)
    tb = _ids(800)
    spec = IndexSpec(kind, nlist=16, nprobe=16, quantizer="fp16")
    got = build_index(spec, x, tb).search(q, 10)
    overlap = overlap_at_k(dense_search(q, x, tb, 10), got, [10])["ann_overlap_at_10"]
    assert overlap >= (1.0 if kind == "ivf_flat" else 0.99)


def test_binary_rescoring_everything_is_exact() -> None:
    x, q = _clustered(300)
    tb = _ids(300)
    index = build_index(IndexSpec("binary", rescore=30), x, tb)  # 30 * depth 10 = every vector
    exact = dense_search(q, x, tb, 10)
    got = index.search(q, 10)
    assert [r.indices for r in got] == [r.indices for r in exact]
    assert index.nbytes < x.nbytes / 20  # 1 bit per component instead of 32


def test_starved_hnsw_loses_neighbours_and_a_generous_one_does_not() -> None:
    x, q = _clustered(3000)
    tb = _ids(3000)
    exact = dense_search(q, x, tb, 10)
    starved = build_index(IndexSpec("hnsw", M=2, ef_construction=2, ef_search=1), x, tb)
    generous = build_index(IndexSpec("hnsw", M=32, ef_construction=200, ef_search=512), x, tb)
    low = overlap_at_k(exact, starved.search(q, 10), [10])["ann_overlap_at_10"]
    high = overlap_at_k(exact, generous.search(q, 10), [10])["ann_overlap_at_10"]
    assert low < 0.5 < 0.98 <= high


@pytest.mark.parametrize("spec", [
    IndexSpec("hnsw", M=8, ef_construction=40, ef_search=16),
    IndexSpec("ivf_flat", nlist=32, nprobe=2, seed=3),
    IndexSpec("ivf_pq", nlist=16, nprobe=4, pq_m=8, seed=3),
    IndexSpec("scalar", quantizer="int4"),
], ids=lambda s: s.kind)
def test_two_builds_give_identical_rankings(spec: IndexSpec) -> None:
    x, q = _clustered(2000, seed=1)
    tb = _ids(2000)
    a = build_index(spec, x, tb).search(q, 20)
    b = build_index(spec, x, tb).search(q, 20)
    assert a == b  # indices and scores
    assert all(len(r.indices) == 20 for r in a)


def test_rankings_are_ordered_by_score_then_chunk_id() -> None:
    x, q = _clustered(200)
    x = np.concatenate([x, x[:50]])  # 50 exact duplicates: equal scores
    tb = tiebreak_order([f"c{i:05d}" for i in range(250)][::-1])  # ids sort in reverse
    for r in build_index(IndexSpec("hnsw", ef_search=300), x, tb).search(q, 30):
        keys = [(-s, tb[i]) for i, s in zip(r.indices, r.scores, strict=True)]
        assert keys == sorted(keys)


def test_ivf_with_fewer_vectors_than_cells_is_one_line_naming_nlist() -> None:
    x, _ = _clustered(40)
    with pytest.raises(SweepError) as err:
        build_index(IndexSpec("ivf_flat", nlist=64), x, _ids(40))
    assert "index.nlist=64" in str(err.value) and "40 chunks" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(SweepError, match=r"index.kind=ivf_pq .* at least 256 vectors"):
        build_index(IndexSpec("ivf_pq", nlist=4, pq_m=8), x, _ids(40))
    with pytest.raises(SweepError, match=r"index\.pq_m=7 must divide the vector dimension 384"):
        build_index(IndexSpec("ivf_pq", nlist=4, pq_m=7), _clustered(300)[0], _ids(300))


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(SweepError, match=r"index\.ef_search=0 must be >= 1"):
        IndexSpec("hnsw", ef_search=0).validate()


def test_index_bytes_are_the_serialised_length() -> None:
    import faiss

    x, _ = _clustered(600)
    for spec in (IndexSpec("hnsw", M=8, ef_construction=20),
                 IndexSpec("ivf_pq", nlist=8, pq_m=16), IndexSpec("scalar")):
        index = build_index(spec, x, _ids(600))
        # counted block by block as FAISS writes it; the whole serialised array as a check
        assert index.nbytes == len(faiss.serialize_index(index.index))  # type: ignore[attr-defined]


def test_parallel_build_is_scoped_to_its_block() -> None:
    import faiss

    from sweep.retrieval import index as index_module

    before = faiss.omp_get_max_threads()
    seen = []
    real = faiss.omp_set_num_threads

    def spy(n: int) -> None:
        seen.append(n)
        real(n)

    x, _ = _clustered(400)
    faiss.omp_set_num_threads = spy
    try:
        with index_module.parallel_build(2):
            build_index(IndexSpec("hnsw", M=8, ef_construction=20), x, _ids(400))
        build_index(IndexSpec("hnsw", M=8, ef_construction=20), x, _ids(400))
    finally:
        faiss.omp_set_num_threads = real
    # 2 threads inside the block, 1 (the reproducible build) after it; restored each time
    assert seen == [2, before, 1, before]
    assert faiss.omp_get_max_threads() == before
