"""`common.blas.one_blas_thread`: numpy's BLAS on one thread, so that a product's last bits (and
the rankings of near-ties) do not follow the machine's core count; every job sets it."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from helpers import DEMO, job_of
from sweep.application import job as pipeline
from sweep.common.blas import one_blas_thread
from sweep.pipeline import memo


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_one_blas_thread_leaves_numpys_blas_one_thread() -> None:
    assert np.ones(1) @ np.ones(1) == 1.0  # numpy's BLAS loaded
    with threadpool_limits(limits=2, user_api="blas"):  # as on a machine with two cores
        assert _blas_threads() and set(_blas_threads()) == {2}
        one_blas_thread.cache_clear()
        one_blas_thread()
        assert set(_blas_threads()) == {1}
    one_blas_thread.cache_clear()  # the limit above ended with the block


def test_a_job_runs_on_one_blas_thread(tmp_path: pytest.TempPathFactory) -> None:
    memo.clear_memo()
    with threadpool_limits(limits=2, user_api="blas"):
        one_blas_thread.cache_clear()
        pipeline.run_job(job_of([f"corpus.path={DEMO}/corpus", f"golden.path={DEMO}/golden.jsonl",
                                 "retrieval=bm25", "retrieval.diagnose=false",
                                 "eval.latency_sample=3", f"cache.dir={tmp_path}/cache"]),
                         progress=False)
        assert set(_blas_threads()) == {1}
    one_blas_thread.cache_clear()
    memo.clear_memo()
