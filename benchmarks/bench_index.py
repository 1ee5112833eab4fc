"""`make bench-index`: exact search vs FAISS HNSW vs IVF-PQ (and IVF-Flat) at 10k-1M vectors.

Unit vectors of dimension 384 (MiniLM's) and 200 queries from the same distribution; per
index: build seconds (wall, and CPU seconds over all threads), bytes (the serialised index, or
the float matrix for exact), query p50/p95 in CPU ms and the wall p50 (one query at a time,
as `eval.latency_sample` times them) and ann_overlap_at_10 against exact search. The indexes
are the sweep's own (`sweep.retrieval.index.build_index`); each graph or trained index is
built once per size and searched at every ef_search / nprobe, with one BLAS thread. Nothing
is asserted.

Data (``--data``):
- ``uniform``: uniform on the sphere, no cluster structure: the hardest case for an
  approximate index (every point is almost equally far from every other), so read its
  overlaps as a lower bound;
- ``clustered``: a Gaussian mixture, closer to real embeddings: 1,000 centres uniform on the
  sphere, each vector a centre plus isotropic noise of norm ~0.75 (so a vector's cosine to its
  own centre is ~0.8 and to another centre ~0), normalised; queries drawn the same way.

Build settings, per size n (the ones a team would start from, see docs/guide/indexes.md):
- HNSW: M=32, ef_construction=40 (FAISS's default efConstruction, at the M its docs use) at
  every size: Chroma's M=16/100 costs twice as much to build, and 32/200 would take hours at
  1M here;
- IVF: nlist = the power of two nearest sqrt(n) (pgvector's and Milvus's rule of thumb at
  ~1M rows), k-means trained on FAISS's default subsample (at most 256 points per centroid);
  IVF-PQ with pq_m=48 (48 bytes per vector).
The sweep builds single-threaded (reproducible); ``--threads N`` builds with N threads
(`parallel_build`) and the table says so.

    python benchmarks/bench_index.py [--sizes 10000,100000,1000000] [--threads 2]
        [--data uniform|clustered] [--kinds ivf_pq,ivf_flat,hnsw] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
from threadpoolctl import threadpool_limits

from sweep.retrieval.index import IndexSpec, VectorIndex, build_index, overlap_at_k, parallel_build
from sweep.retrieval.ranking import Ranking, tiebreak_order

DIM = 384
N_QUERIES = 200
K = 10
N_CENTRES = 1000
NOISE = 0.75
HNSW_M, HNSW_EF_CONSTRUCTION = 32, 40
EF_SEARCH = (16, 64, 256, 1024)
NPROBE = (8, 32, 128, 512)
PQ_M = 48
BLOCK = 100_000  # vectors generated per step, so float64 temporaries stay small at 1M


def _normalise(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def vectors(rng: np.random.Generator, n: int, data: str, centres: np.ndarray | None
            ) -> np.ndarray:
    out = np.empty((n, DIM), dtype=np.float32)
    for lo in range(0, n, BLOCK):
        m = min(BLOCK, n - lo)
        x = rng.standard_normal((m, DIM), dtype=np.float32)
        if data == "clustered":
            assert centres is not None
            x *= NOISE / math.sqrt(DIM)
            x += centres[rng.integers(0, len(centres), m)]
        out[lo : lo + m] = _normalise(x)
    return out


def nlist_for(n: int) -> int:
    return 1 << round(math.log2(math.sqrt(n)))


def specs(n: int) -> Iterator[tuple[str, IndexSpec, list[tuple[str, int]]]]:
    """(build label, spec, [(search label, ef_search or nprobe)]): one build, many searches."""
    yield "exact (numpy)", IndexSpec("exact"), [("", 0)]
    nlist = nlist_for(n)
    probes = sorted({min(p, nlist) for p in NPROBE})
    yield (f"ivf_pq nlist={nlist} pq_m={PQ_M}", IndexSpec("ivf_pq", nlist=nlist, pq_m=PQ_M),
           [(f"nprobe={p}", p) for p in probes])
    yield (f"ivf_flat nlist={nlist}", IndexSpec("ivf_flat", nlist=nlist),
           [(f"nprobe={p}", p) for p in probes])
    # Last: the longest build, so a run stopped at 1M keeps the other rows.
    yield (f"hnsw M={HNSW_M} ef_construction={HNSW_EF_CONSTRUCTION}",
           IndexSpec("hnsw", M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION),
           [(f"ef_search={ef}", ef) for ef in EF_SEARCH])


def timed_search(index: VectorIndex, q: np.ndarray
                 ) -> tuple[list[Ranking], list[float], list[float]]:
    """Rankings, per-query CPU ms and wall ms. One BLAS and OpenMP thread, as FAISS searches
    one query: on the shared 2-core machine numpy's 2-thread OpenBLAS spent ~24 ms handing one
    3,000 x 384 product between threads (0.2 ms on one thread), which inflated exact search in
    the earlier table. CPU time (`time.thread_time`) is what a query costs on a free core; the
    wall time also holds the waits for a core at the load the run had."""
    with threadpool_limits(limits=1):
        index.search(q[:2], K)  # warm-up
        cpu, wall, results = [], [], []
        for row in q:
            c, t = time.thread_time(), time.perf_counter()
            results += index.search(row[None, :], K)
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.thread_time() - c) * 1000)
    return results, cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--threads", type=int, default=1,
                    help="FAISS build threads (1 = as the sweep builds, reproducible)")
    ap.add_argument("--data", choices=("uniform", "clustered"), default="uniform")
    ap.add_argument("--kinds", default="exact,ivf_pq,ivf_flat,hnsw",
                    help="indexes to time (exact search is always the overlap reference)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    kinds = set(args.kinds.split(","))
    rng = np.random.default_rng(0)
    centres = (_normalise(rng.standard_normal((N_CENTRES, DIM), dtype=np.float32))
               if args.data == "clustered" else None)
    threads = f", {args.threads} threads" if args.threads > 1 else ""
    rows = []
    print(f"data={args.data}, dim {DIM}, {N_QUERIES} queries, top {K}; build threads "
          f"{args.threads}; started {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| vectors | index | build s (CPU s) | bytes | query CPU p50 ms | query CPU p95 ms | "
          "query wall p50 ms | ann_overlap_at_10 |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for n in (int(s) for s in args.sizes.split(",")):
        x, q = vectors(rng, n, args.data, centres), vectors(rng, N_QUERIES, args.data, centres)
        tb = tiebreak_order([f"{i:09d}" for i in range(n)])
        # The reference: exact search, batched (one product per 256 queries); timed per
        # query below only when "exact" is among --kinds.
        exact = build_index(IndexSpec("exact"), x, tb).search(q, K)
        for build_label, spec, searches in specs(n):
            if spec.kind not in kinds:
                continue
            print(f"# {datetime.now(UTC):%H:%M:%S} n={n:,} building {build_label} "
                  f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
            cpu = time.process_time()
            with parallel_build(args.threads):
                index = build_index(spec, x, tb)
            cpu = time.process_time() - cpu
            for i, (search_label, value) in enumerate(searches):
                if spec.kind == "hnsw":
                    index.index.hnsw.efSearch = value  # type: ignore[attr-defined]
                elif spec.kind.startswith("ivf"):
                    index.index.nprobe = value  # type: ignore[attr-defined]
                results, times, wall = timed_search(index, q)
                overlap = overlap_at_k(exact, results, [K])[f"ann_overlap_at_{K}"]
                name = f"{build_label}, {search_label}" if search_label else build_label
                rec = {"n": n, "data": args.data, "index": name, "build_s": index.build_s,
                       "build_cpu_s": cpu, "threads": args.threads if spec.kind != "exact" else 1,
                       "bytes": index.nbytes, "p50_ms": float(np.percentile(times, 50)),
                       "p95_ms": float(np.percentile(times, 95)),
                       "wall_p50_ms": float(np.percentile(wall, 50)), "ann_overlap_at_10": overlap,
                       "load": os.getloadavg()[0]}
                rows.append(rec)
                if spec.kind == "exact":
                    build = "0"
                elif i == 0:
                    build = f"{index.build_s:.1f} ({cpu:.0f}{threads})"
                else:
                    build = "(same index)"
                print(f"| {n:,} | {name} | {build} | {index.nbytes / 1e6:.1f} MB | "
                      f"{rec['p50_ms']:.2f} | {rec['p95_ms']:.2f} | {rec['wall_p50_ms']:.2f} | "
                      f"{overlap:.3f} |", flush=True)
            del index
            gc.collect()
        del x
        gc.collect()
    print(f"finished {datetime.now(UTC):%H:%M} UTC, load average {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
