"""Absurd FAISS parameters and IVF on a tiny corpus (issue 30). Failed before: ``ef_search``
past a C int was an OverflowError traceback from FAISS's wrapper; an enormous ``ef_search``
or ``M`` that fits one allocated a heap or link table of that size (gigabytes on a
127-chunk corpus); IVF on a tiny corpus printed FAISS's own stderr warning mid-progress and
said nothing when queries got fewer chunks back than the depth they were scored at."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sweep.common.errors import SweepError
from sweep.retrieval.index import MAX_M, MAX_PARAMETER, IndexSpec, build_index
from sweep.retrieval.ranking import dense_search, tiebreak_order


def _unit(n: int, d: int = 16, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _ids(n: int) -> np.ndarray:
    return tiebreak_order([f"c{i:05d}" for i in range(n)])


@pytest.mark.parametrize(("spec", "line"), [
    (IndexSpec("hnsw", ef_search=0), "index.ef_search=0 must be >= 1"),
    (IndexSpec("hnsw", ef_search=-5), "index.ef_search=-5 must be >= 1"),
    (IndexSpec("hnsw", ef_search=2**40), f"index.ef_search={2**40} must be <= {MAX_PARAMETER:,}"),
    (IndexSpec("ivf_flat", nprobe=2**31), f"index.nprobe={2**31} must be <= {MAX_PARAMETER:,}"),
    (IndexSpec("hnsw", M=100_000), f"index.M=100000 must be <= {MAX_M}"),
    (IndexSpec("ivf_flat", nlist=-1), "index.nlist=-1 must be >= 1"),
])
def test_absurd_parameters_are_one_line_before_any_build(spec: IndexSpec, line: str) -> None:
    with pytest.raises(SweepError) as err:
        build_index(spec, _unit(50), _ids(50))
    assert str(err.value).startswith(line)
    assert "\n" not in str(err.value)


def test_an_enormous_ef_that_fits_gives_the_exhaustive_answer_in_little_memory() -> None:
    x, q = _unit(300), _unit(20, seed=1)
    tb = _ids(300)
    index = build_index(IndexSpec("hnsw", M=16, ef_construction=10**9, ef_search=10**9), x, tb)
    got = index.search(q, 10)
    # ef >= n makes HNSW's search visit every reachable vector: the exact answer
    exact = dense_search(q, x, tb, 10)
    assert [r.indices for r in got] == [r.indices for r in exact]
    capped = build_index(IndexSpec("hnsw", M=16, ef_construction=300, ef_search=300), x, tb)
    assert capped.search(q, 10) == got  # capping at n changes nothing
    import resource

    # a heap of 10**9 entries would be gigabytes; the process stays where it was
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 6 * 2**20  # KiB: 6 GiB


def test_nlist_above_the_number_of_chunks_names_both() -> None:
    with pytest.raises(SweepError) as err:
        build_index(IndexSpec("ivf_flat", nlist=64), _unit(40), _ids(40))
    assert "index.nlist=64 needs at least 64 vectors to train; this configuration has 40 " \
           "chunks" in str(err.value)


def test_ivf_on_a_tiny_corpus_says_so_once_and_scores_what_it_returns(
        caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.WARNING, logger="sweep.retrieval.index")
    n = 127  # the demo's chunk count at the default size
    x, q = _unit(n), _unit(30, seed=2)
    index = build_index(IndexSpec("ivf_flat", nlist=64, nprobe=8), x, _ids(n))
    got = index.search(q, 20)
    index.search(q, 20)
    lines = [r.getMessage() for r in caplog.records]
    assert sum("index.nlist=64 on 127 chunks: 2.0 per cell, fewer than the 39" in m
               for m in lines) == 1
    short = sum(len(r.indices) < 20 for r in got)
    assert short > 0  # 8 of 64 cells of ~2 chunks: about 16 candidates for 20 places
    assert sum(f"{short} of 30 queries got fewer than 20 chunks back" in m for m in lines) == 1
    assert "WARNING clustering" not in capfd.readouterr().err  # FAISS's own print, silenced
    # every returned chunk is a real one, once, best first
    for r in got:
        assert len(set(r.indices)) == len(r.indices) and all(0 <= i < n for i in r.indices)
        assert list(r.scores) == sorted(r.scores, reverse=True)
