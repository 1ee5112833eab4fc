"""`make bench-index`: exact search vs FAISS HNSW vs IVF-PQ at 10k and 100k vectors.

Random unit vectors of dimension 384 (MiniLM's) and 200 random unit queries; per index: build
seconds (single-threaded, as the sweep builds), bytes (the serialised index, or the float
matrix for exact), query p50/p95 in ms (one query at a time, the way `eval.latency_sample`
times them) and ann_overlap_at_10 against exact search. Uniform random vectors have no
cluster structure, the hardest case for an approximate index: read the overlaps as a lower
bound (the demo sweep in the README gives a real set). Nothing is asserted.

    python benchmarks/bench_index.py [--sizes 10000,100000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from sweep.retrieval.index import IndexSpec, build_index, overlap_at_k
from sweep.retrieval.ranking import tiebreak_order

DIM = 384
N_QUERIES = 200


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def specs(n: int) -> list[tuple[str, IndexSpec]]:
    # IVF: ~n/39 cells (FAISS wants 39 training points per centroid), 48 bytes per vector.
    nlist = 1 << int(np.log2(max(n // 39, 1)))
    out = [("exact", IndexSpec("exact"))]
    out += [(f"hnsw M=32 ef_search={ef}", IndexSpec("hnsw", M=32, ef_construction=200,
                                                    ef_search=ef)) for ef in (16, 64, 256)]
    out += [(f"ivf_pq nlist={nlist} pq_m=48 nprobe={p}",
             IndexSpec("ivf_pq", nlist=nlist, nprobe=p, pq_m=48)) for p in (8, 64)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    print("| vectors | index | build s | bytes | query p50 ms | query p95 ms | "
          "ann_overlap_at_10 |")
    print("|---|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        x, q = unit(rng, n), unit(rng, N_QUERIES)
        tb = tiebreak_order([f"{i:09d}" for i in range(n)])
        exact = None
        built: dict[IndexSpec, object] = {}
        for name, spec in specs(n):
            # One HNSW graph / IVF-PQ index per build setting; ef_search / nprobe are set on it.
            key = IndexSpec(spec.kind, M=spec.M, ef_construction=spec.ef_construction,
                            nlist=spec.nlist, pq_m=spec.pq_m)
            if key not in built:
                built[key] = build_index(spec, x, tb)
            index = built[key]
            if spec.kind == "hnsw":
                index.index.hnsw.efSearch = spec.ef_search  # type: ignore[attr-defined]
            elif spec.kind == "ivf_pq":
                index.index.nprobe = spec.nprobe  # type: ignore[attr-defined]
            index.search(q[:2], 10)  # type: ignore[attr-defined]  # warm-up
            times, results = [], []
            for row in q:
                t = time.perf_counter()
                results += index.search(row[None, :], 10)  # type: ignore[attr-defined]
                times.append((time.perf_counter() - t) * 1000)
            if exact is None:
                exact = results
            rec = {"n": n, "index": name, "build_s": index.build_s,  # type: ignore[attr-defined]
                   "bytes": index.nbytes,  # type: ignore[attr-defined]
                   "p50_ms": float(np.percentile(times, 50)),
                   "p95_ms": float(np.percentile(times, 95)),
                   "ann_overlap_at_10": overlap_at_k(exact, results, [10])["ann_overlap_at_10"]}
            rows.append(rec)
            print(f"| {n:,} | {name} | {rec['build_s']:.1f} | {rec['bytes'] / 1e6:.1f} MB | "
                  f"{rec['p50_ms']:.2f} | {rec['p95_ms']:.2f} | {rec['ann_overlap_at_10']:.3f} |",
                  flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
