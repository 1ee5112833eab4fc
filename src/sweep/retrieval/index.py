"""The vector index the dense stage searches: exact (the reference) or approximate (FAISS).

Every index answers like `ranking.dense_search`: per query a `Ranking` of chunk indices, best
first, equal scores ordered by chunk id, at most ``depth`` long. Scores are what the index
reports (exact inner products for HNSW and IVF-Flat, approximate ones for PQ and the scalar
quantisers, rescored exact ones for binary), so hybrid fusion and reranking work on top of
any of them unchanged.

Determinism: FAISS builds run single-threaded (`_build_threads`), and IVF k-means is seeded,
so one configuration gives the same rankings run after run; searching is per query and does
not depend on the thread count. Only the scale benchmark (`benchmarks/bench_index.py`) builds
with more threads, through `parallel_build`, and says so.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from sweep.common.errors import SweepError
from sweep.common.registry import Entry, Registry, Traits
from sweep.retrieval.ranking import Ranking, dense_search

log = logging.getLogger(__name__)


MAX_PARAMETER = 2**31 - 1
MAX_M = 512
# FAISS's k-means wants this many training points per cell (its min_points_per_centroid).
POINTS_PER_CELL = 39


@dataclass(frozen=True)
class IndexSpec:
    kind: str = "exact"  # an entry of `INDEX`
    M: int = 32
    ef_construction: int = 200
    ef_search: int = 64
    nlist: int = 64
    nprobe: int = 8
    pq_m: int = 16
    quantizer: str = "int8"  # scalar: int8 | int4 | fp16
    rescore: int = 4
    seed: int = 0
    host: str = "127.0.0.1"
    port: int = 8000

    def validate(self) -> IndexSpec:
        for name in ("M", "ef_construction", "ef_search", "nlist", "nprobe", "pq_m", "rescore"):
            value = getattr(self, name)
            if value < 1:
                raise SweepError(f"index.{name}={value} must be >= 1")
            if value > MAX_PARAMETER:  # FAISS takes a C int: a larger one is a traceback
                raise SweepError(f"index.{name}={value} must be <= {MAX_PARAMETER:,}")
        if self.M > MAX_M:
            raise SweepError(f"index.M={self.M} must be <= {MAX_M}: HNSW keeps 2*M links per "
                             "vector in memory, and past that more links only cost memory")
        INDEX.get_entry(self.kind)
        return self


class VectorIndex(Protocol):
    kind: str
    build_s: float  # seconds to build (train + add); 0 for exact search
    nbytes: int  # size of the index: the serialised FAISS index, or the float matrix

    def search(self, query_vecs: np.ndarray, depth: int) -> list[Ranking]: ...


@dataclass
class ExactIndex:
    """Today's search: one matrix product over the normalised float32 vectors."""

    vecs: np.ndarray
    tiebreak: np.ndarray
    kind: str = "exact"
    build_s: float = 0.0
    nbytes: int = 0

    def __post_init__(self) -> None:
        self.nbytes = int(self.vecs.nbytes)

    def search(self, query_vecs: np.ndarray, depth: int) -> list[Ranking]:
        return dense_search(query_vecs, self.vecs, self.tiebreak, depth)


def _rankings(scores: np.ndarray, ids: np.ndarray, tiebreak: np.ndarray) -> list[Ranking]:
    """FAISS result rows -> Rankings: missing slots (-1) dropped, ties ordered by chunk id
    (FAISS orders equal scores by its own heap, not by id)."""
    out = []
    for row_s, row_i in zip(scores, ids, strict=True):
        keep = row_i >= 0
        idx, sc = row_i[keep].astype(np.int64), row_s[keep]
        order = np.lexsort((tiebreak[idx], -sc))
        out.append(Ranking(tuple(idx[order].tolist()), tuple(sc[order].tolist())))
    return out


@dataclass
class FaissIndex:
    index: Any  # a faiss.Index
    tiebreak: np.ndarray
    kind: str
    build_s: float
    nbytes: int
    _warned: bool = False

    def search(self, query_vecs: np.ndarray, depth: int) -> list[Ranking]:
        k = min(depth, self.index.ntotal)
        if k == 0:
            return [Ranking((), ()) for _ in range(query_vecs.shape[0])]
        scores, ids = self.index.search(_f32(query_vecs), k)
        short = int(((ids >= 0).sum(axis=1) < k).sum())
        if short and not self._warned:
            # IVF visits nprobe cells only: their chunks may be fewer than the depth asked
            self._warned = True
            log.warning("index.kind=%s: %d of %d queries got fewer than %d chunks back (the "
                        "cells searched hold fewer); their rankings are shorter, and scored "
                        "as they are", self.kind, short, len(ids), k)
        return _rankings(scores, ids, self.tiebreak)


@dataclass
class BinaryIndex:
    """Sign bits searched by Hamming distance, the ``rescore * depth`` nearest rescored with
    the float vectors (the usual binary-quantisation recipe)."""

    index: Any  # a faiss.IndexBinaryFlat
    vecs: np.ndarray
    tiebreak: np.ndarray
    rescore: int
    kind: str
    build_s: float
    nbytes: int

    def search(self, query_vecs: np.ndarray, depth: int) -> list[Ranking]:
        n = self.index.ntotal
        k = min(depth * self.rescore, n)
        if k == 0:
            return [Ranking((), ()) for _ in range(query_vecs.shape[0])]
        _, cand = self.index.search(_bits(query_vecs), k)
        out = []
        for q, row in zip(query_vecs, cand, strict=True):
            row = row[row >= 0].astype(np.int64)
            scores = self.vecs[row] @ q
            order = np.lexsort((self.tiebreak[row], -scores))[:depth]
            out.append(Ranking(tuple(row[order].tolist()), tuple(scores[order].tolist())))
        return out


def _f32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def _bits(x: np.ndarray) -> np.ndarray:
    return np.packbits(np.asarray(x) > 0, axis=1)


def _faiss() -> Any:
    # Imported on use: exact search needs no FAISS. Its loader logs each CPU build it tries.
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    import faiss

    return faiss


_BUILD_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("build_threads", default=1)


@contextmanager
def parallel_build(threads: int) -> Iterator[None]:
    """Build FAISS indexes with ``threads`` OpenMP threads inside the block: faster, but a
    parallel HNSW build is not reproducible. The sweep never uses it (see the module doc)."""
    token = _BUILD_THREADS.set(max(1, threads))
    try:
        yield
    finally:
        _BUILD_THREADS.reset(token)


@contextmanager
def _build_threads() -> Iterator[None]:
    """FAISS builds with OpenMP; a parallel HNSW insert order depends on thread timing, so
    the graph would differ run to run. One thread for the build (unless `parallel_build`)
    makes it reproducible."""
    faiss = _faiss()
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(_BUILD_THREADS.get())
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _need(n: int, at_least: int, what: str) -> None:
    if n < at_least:
        raise SweepError(f"{what} needs at least {at_least} vectors to train; this "
                         f"configuration has {n} chunks (lower it or use a larger corpus)")


def _hnsw(spec: IndexSpec, vecs: np.ndarray) -> Any:
    faiss = _faiss()
    index = faiss.IndexHNSWFlat(vecs.shape[1], spec.M, faiss.METRIC_INNER_PRODUCT)
    # FAISS allocates a candidate heap of ef entries; past the number of vectors the heap
    # never fills, so capping there gives the same graph and answers without gigabytes.
    n = max(1, vecs.shape[0])
    index.hnsw.efConstruction = min(spec.ef_construction, n)
    index.add(vecs)
    index.hnsw.efSearch = min(spec.ef_search, n)
    return index


def _ivf(spec: IndexSpec, vecs: np.ndarray, pq: bool) -> Any:
    faiss = _faiss()
    n, d = vecs.shape
    _need(n, spec.nlist, f"index.nlist={spec.nlist}")
    coarse = faiss.IndexFlatIP(d)
    if pq:
        if d % spec.pq_m:
            raise SweepError(f"index.pq_m={spec.pq_m} must divide the vector dimension {d}")
        _need(n, 256, f"index.kind=ivf_pq (256 codes per sub-vector, index.pq_m={spec.pq_m})")
        index = faiss.IndexIVFPQ(coarse, d, spec.nlist, spec.pq_m, 8,
                                 faiss.METRIC_INNER_PRODUCT)
        index.pq.cp.seed = spec.seed
    else:
        index = faiss.IndexIVFFlat(coarse, d, spec.nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = spec.seed
    index.cp.verbose = False
    if n < POINTS_PER_CELL * spec.nlist:
        # said here, once, as one line (FAISS would print its own warning to stderr)
        log.warning("index.nlist=%d on %d chunks: %.1f per cell, fewer than the %d k-means "
                    "wants; cells this small make IVF's recall a matter of luck (lower "
                    "index.nlist or raise index.nprobe)", spec.nlist, n, n / spec.nlist,
                    POINTS_PER_CELL)
        index.cp.min_points_per_centroid = 1
    index.train(vecs)
    index.add(vecs)
    index.nprobe = min(spec.nprobe, spec.nlist)
    return index


def _scalar(spec: IndexSpec, vecs: np.ndarray) -> Any:
    faiss = _faiss()
    qtype = {"int8": faiss.ScalarQuantizer.QT_8bit, "int4": faiss.ScalarQuantizer.QT_4bit,
             "fp16": faiss.ScalarQuantizer.QT_fp16}.get(spec.quantizer)
    if qtype is None:
        raise SweepError(f"index.quantizer={spec.quantizer!r} is not one of int8, int4, fp16")
    index = faiss.IndexScalarQuantizer(vecs.shape[1], qtype, faiss.METRIC_INNER_PRODUCT)
    index.train(vecs)  # the per-dimension value ranges
    index.add(vecs)
    return index


def _build_faiss(make: Callable[[IndexSpec, np.ndarray], Any]
                 ) -> Callable[[IndexSpec, np.ndarray, np.ndarray], VectorIndex]:
    def build(spec: IndexSpec, vecs: np.ndarray, tiebreak: np.ndarray) -> VectorIndex:
        start = time.perf_counter()
        with _build_threads():
            index = make(spec, _f32(vecs))
        build_s = time.perf_counter() - start
        return FaissIndex(index, tiebreak, spec.kind, build_s, _serialised_bytes(index))
    return build


def _serialised_bytes(index: Any) -> int:
    """Length of the serialised index, counted as FAISS writes it in blocks (serialising
    into one array would hold a second copy: 1.7 GB for HNSW over 1M 384-d vectors)."""
    faiss = _faiss()
    total = 0

    def count(block: bytes) -> int:
        nonlocal total
        total += len(block)
        return len(block)

    faiss.write_index(index, faiss.PyCallbackIOWriter(count))
    return total


def _build_binary(spec: IndexSpec, vecs: np.ndarray, tiebreak: np.ndarray) -> VectorIndex:
    faiss = _faiss()
    d = vecs.shape[1]
    if d % 8:
        raise SweepError(f"index.kind=binary needs a dimension divisible by 8 (got {d})")
    start = time.perf_counter()
    index = faiss.IndexBinaryFlat(d)
    index.add(_bits(vecs))
    build_s = time.perf_counter() - start
    nbytes = len(faiss.serialize_index_binary(index))
    return BinaryIndex(index, _f32(vecs), tiebreak, spec.rescore, spec.kind, build_s, nbytes)


# The collection's metadata says who wrote it and what it holds. A collection is only read as
# this configuration's index when all of it matches: a name alone could be an earlier run's
# half-written one, another tool's, or an older chunk-sweep's without the marks.
CHROMA_FORMAT = 1
# Vectors read back and compared on reuse: the metadata can claim anything, the vectors cannot.
CHROMA_SAMPLE = 8


def _chroma_failed(url: str, doing: str, exc: BaseException) -> SweepError:
    """One line for a server that stopped answering (or answered with an error) mid-sweep."""
    detail = str(exc).splitlines()[0][:200] if str(exc) else ""
    return SweepError(
        f"index=chroma: the Chroma server at {url} failed while {doing} "
        f"({type(exc).__name__}{': ' + detail if detail else ''})",
        hint="restart it (make chroma-start) and run the sweep again: configurations already "
        "logged are kept and skipped, and the embeddings are cached")


@dataclass
class ChromaIndex:
    """A collection on a Chroma server, searched over HTTP the way an application would.

    Named by the content hash of the vectors (they are a function of the chunk texts and the
    model fingerprint) and the HNSW settings, so identical chunkings share one collection and
    a second run reuses it instead of rebuilding (``build_s`` is then 0)."""

    collection: Any
    tiebreak: np.ndarray
    kind: str
    build_s: float
    nbytes: int = 0  # the server's memory is not observable from the client
    url: str = ""

    def search(self, query_vecs: np.ndarray, depth: int) -> list[Ranking]:
        k = min(depth, len(self.tiebreak))
        try:
            res = self.collection.query(query_embeddings=_f32(query_vecs), n_results=k,
                                        include=["distances"])
        except Exception as exc:  # the client raises its own types, and httpx's
            raise _chroma_failed(self.url, f"searching {self.collection.name}", exc) from None
        out = []
        n = len(self.tiebreak)
        for ids, dist in zip(res["ids"], res["distances"], strict=True):
            try:
                idx = np.array([int(i) for i in ids], dtype=np.int64)
            except ValueError:
                idx = np.array([-1], dtype=np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= n):  # never index out of range
                raise SweepError(f"index=chroma: collection {self.collection.name} at "
                                 f"{self.url} answered ids that are not this chunking's "
                                 f"0..{n - 1}", hint="delete the collection; it is rebuilt")
            sc = 1.0 - np.asarray(dist, dtype=np.float64)  # cosine distance -> cosine
            order = np.lexsort((self.tiebreak[idx], -sc))
            out.append(Ranking(tuple(idx[order].tolist()), tuple(sc[order].tolist())))
        return out


def _vectors_digest(vecs: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(_f32(vecs).tobytes()).hexdigest()


def chroma_collection_name(spec: IndexSpec, vecs: np.ndarray) -> str:
    return f"cs-{_vectors_digest(vecs)[:32]}-m{spec.M}-c{spec.ef_construction}-s{spec.ef_search}"


def _chroma_metadata(spec: IndexSpec, vecs: np.ndarray) -> dict[str, Any]:
    return {"chunk_sweep": CHROMA_FORMAT, "vectors_sha256": _vectors_digest(vecs),
            "n": int(vecs.shape[0]), "dim": int(vecs.shape[1]), "space": "cosine",
            "M": spec.M, "ef_construction": spec.ef_construction, "ef_search": spec.ef_search}


def _chroma_sample(n: int) -> list[int]:
    """Fixed ids to read back: both ends and a spread between (deterministic, no RNG)."""
    return sorted({0, n - 1, *(int(i) for i in np.linspace(0, n - 1, CHROMA_SAMPLE))})


def chroma_mismatch(collection: Any, spec: IndexSpec, vecs: np.ndarray) -> str:
    """Why ``collection`` is not this configuration's index ('' when it is): written by
    something else or by an older chunk-sweep (no marks), for other vectors or settings, left
    half-written, or holding other vectors than its marks claim."""
    want = _chroma_metadata(spec, vecs)
    have = dict(collection.metadata or {})
    if have.get("chunk_sweep") != CHROMA_FORMAT:
        return "it carries no chunk-sweep marks (another tool's, or an older version's)"
    if have.get("complete") is not True:
        return "its build never finished"
    for key, value in want.items():
        if have.get(key) != value:
            return f"its {key} is {have.get(key)!r}, this configuration's {value!r}"
    count = collection.count()
    if count != want["n"]:
        return f"it holds {count} vectors of {want['n']} (left half-written)"
    ids = _chroma_sample(want["n"])
    got = collection.get(ids=[str(i) for i in ids], include=["embeddings"])
    back = {int(i): np.asarray(e, dtype=np.float32)
            for i, e in zip(got["ids"], got["embeddings"], strict=True)}
    for i in ids:
        if i not in back or not np.allclose(back[i], vecs[i], atol=1e-6):
            return f"its vector {i} differs from this chunking's"
    return ""


def _build_chroma(spec: IndexSpec, vecs: np.ndarray, tiebreak: np.ndarray) -> VectorIndex:
    try:
        import chromadb
    except ImportError:
        raise SweepError("index=chroma needs the Chroma client",
                         hint="pip install 'chunk-sweep[chroma]'") from None
    url = f"http://{spec.host}:{spec.port}"
    try:
        client = chromadb.HttpClient(host=spec.host, port=spec.port,
                                     settings=chromadb.Settings(anonymized_telemetry=False))
        client.heartbeat()
    except Exception as exc:  # the client raises its own types for a refused connection
        raise SweepError(f"index=chroma: no Chroma server at {url} ({type(exc).__name__})",
                         hint="start one with `make chroma-start` or set index.host/index.port"
                         ) from None
    vecs = _f32(vecs)
    name = chroma_collection_name(spec, vecs)
    start = time.perf_counter()
    try:
        collection = _chroma_reuse(client, name, spec, vecs)
        if collection is None:
            collection = _chroma_fill(client, name, spec, vecs)
            build_s = time.perf_counter() - start
        else:
            build_s = 0.0
    except SweepError:
        raise
    except Exception as exc:
        raise _chroma_failed(url, f"building {name}", exc) from None
    return ChromaIndex(collection, tiebreak, spec.kind, build_s, url=url)


def _chroma_reuse(client: Any, name: str, spec: IndexSpec, vecs: np.ndarray) -> Any | None:
    """The complete collection of this name, or None after deleting one that is not."""
    existing = {c.name for c in client.list_collections()}
    _drop_abandoned(client, name, existing)
    if name not in existing:
        return None
    collection = client.get_collection(name, embedding_function=None)
    why = chroma_mismatch(collection, spec, vecs)
    if not why:
        return collection
    log.warning("index=chroma: collection %s is not read as this configuration's index: %s; "
                "deleted and built again", name, why)
    _delete_quietly(client, name)
    return None


# A build copy older than this was left by a crash (a live build adds its vectors in minutes).
ABANDONED_AFTER_S = 6 * 3600


def _drop_abandoned(client: Any, name: str, existing: set[str]) -> None:
    """Delete the build copies of ``name`` that a crashed sweep left on the server."""
    for other in sorted(existing):
        if not other.startswith(f"{name}-b"):
            continue
        meta = client.get_collection(other, embedding_function=None).metadata or {}
        started = meta.get("started")
        if isinstance(started, int) and time.time() - started > ABANDONED_AFTER_S:
            log.warning("index=chroma: deleting %s, a build left unfinished by a sweep that "
                        "ended", other)
            _delete_quietly(client, other)


def _delete_quietly(client: Any, name: str) -> None:
    try:
        client.delete_collection(name)
    except Exception:  # another sweep deleted it first: the same end state
        log.debug("collection %s already gone", name)


def _chroma_fill(client: Any, name: str, spec: IndexSpec, vecs: np.ndarray) -> Any:
    """Build under a name of its own, then rename to ``name`` once every vector is in: a
    crash leaves only a ``-b<token>`` collection that no lookup ever reads, and two sweeps
    building the same index at once never read each other's half. The loser of the rename
    deletes its copy and reads the winner's (the same vectors, checked)."""
    import secrets

    own = f"{name}-b{secrets.token_hex(4)}"
    meta = _chroma_metadata(spec, vecs)
    # embedding_function=None: vectors are always ours (Chroma's default would download a
    # model on first use).
    collection = client.create_collection(
        own, embedding_function=None,
        metadata={**meta, "complete": False, "started": int(time.time())},
        configuration={"hnsw": {"space": "cosine", "max_neighbors": spec.M,
                                "ef_construction": spec.ef_construction,
                                "ef_search": spec.ef_search}})
    try:
        n = vecs.shape[0]
        step = client.get_max_batch_size()
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            collection.add(ids=[str(i) for i in range(lo, hi)], embeddings=vecs[lo:hi])
        collection.modify(name=name, metadata={**meta, "complete": True})
    except Exception:
        winner = _chroma_reuse(client, name, spec, vecs)
        _delete_quietly(client, own)
        if winner is not None:
            return winner
        raise
    return client.get_collection(name, embedding_function=None)


_HNSW = ("M", "ef_construction", "ef_search")
_IVF = ("nlist", "nprobe", "seed")


def _params(*names: str) -> dict[str, object]:
    """The named settings with `IndexSpec`'s defaults (the one home of the index defaults)."""
    return {n: getattr(IndexSpec, n) for n in names}


# The index.kind axis: name -> builder (spec, normalised vectors, tiebreak order -> index).
# Each entry lists the settings it reads: they enter config_hash only with it, so
# `index=exact,hnsw index.ef_search=8,64` is three configurations, not four. `exact` is the
# axis's off value: the whole index section stays out of the hash, as before the axis.
INDEX: Registry[Callable[[IndexSpec, np.ndarray, np.ndarray], VectorIndex]] = Registry(
    "index.kind", [
        Entry("exact", lambda spec, vecs, tiebreak: ExactIndex(vecs, tiebreak),
              doc="numpy inner products: the reference"),
        Entry("hnsw", _build_faiss(_hnsw), params=_params(*_HNSW), doc="FAISS IndexHNSWFlat"),
        Entry("ivf_flat", _build_faiss(lambda spec, vecs: _ivf(spec, vecs, pq=False)),
              params=_params(*_IVF), doc="FAISS IVF over flat vectors"),
        Entry("ivf_pq", _build_faiss(lambda spec, vecs: _ivf(spec, vecs, pq=True)),
              params=_params(*_IVF, "pq_m"), doc="FAISS IVF with product quantisation"),
        Entry("scalar", _build_faiss(_scalar), params=_params("quantizer"),
              doc="FAISS scalar quantiser"),
        Entry("binary", _build_binary, params=_params("rescore"),
              doc="sign bits by Hamming distance, rescored"),
        # a Chroma server (index.host, index.port: where it runs, never in the hash)
        Entry("chroma", _build_chroma, params=_params(*_HNSW), traits=Traits(remote=True),
              doc="a Chroma server's HNSW"),
    ], off="exact")


def build_index(spec: IndexSpec, vecs: np.ndarray, tiebreak: np.ndarray) -> VectorIndex:
    """The index of ``spec.kind`` over ``vecs`` (L2-normalised rows, one per chunk)."""
    return INDEX.impl(spec.validate().kind)(spec, vecs, tiebreak)


def overlap_at_k(exact: list[Ranking], approx: list[Ranking], ks: list[int] | tuple[int, ...]
                 ) -> dict[str, float]:
    """``ann_overlap_at_k``: per k, the mean over queries of the share of the exact top k
    that the index's top k holds (1 = the index returned the exact neighbours)."""
    out = {}
    for k in sorted(set(ks)):
        shares = []
        for e, a in zip(exact, approx, strict=True):
            want = set(e.indices[:k])
            if want:
                shares.append(len(want & set(a.indices[:k])) / len(want))
        if shares:
            out[f"ann_overlap_at_{k}"] = float(np.mean(shares))
    return out
