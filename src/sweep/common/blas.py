"""The sweep's own matrix products on one BLAS thread.

A BLAS splits a product between its threads by blocks of the result, and the blocks it gives
its edge kernels change with the number of threads, so the last bit of a float32 score can
too: a 256 x 384 by 384 x 5,233 product on numpy's OpenBLAS differed in 7% of its scores
between one thread and two. Rankings of near-ties then depend on the machine's core count
(main at 1ddc525 swapped a pair of chunks around rank 23 in four of the bench grid's COVID-QA
configurations between one BLAS thread and two). On one thread the scores are the same on
any machine with the same BLAS build and CPU kernel, and a 2-core machine stops spinning a
second BLAS thread against the MLflow worker (issue 46: the warm bench sweep took 1.5 s less CPU, 0.4 s less wall).
"""

from __future__ import annotations

import functools


@functools.cache
def one_blas_thread() -> None:
    """Limit the BLAS libraries loaded in this process (numpy's) to one thread, for the rest of
    the process. Idempotent. The embedding model's own threads (torch's) are not BLAS
    libraries loaded through numpy and keep their settings; a BLAS loaded later keeps its own."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
