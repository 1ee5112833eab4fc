"""index=chroma against a real `chroma run` server started for the test (slow suite).

The server comes from `make chroma-venv` (.venv-chroma/bin/chroma) or $CHUNK_SWEEP_CHROMA.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, free_port
from sweep.common.errors import SweepError
from sweep.retrieval.index import IndexSpec, build_index, overlap_at_k
from sweep.retrieval.ranking import dense_search, tiebreak_order

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chroma_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    binary = Path(os.environ.get("CHUNK_SWEEP_CHROMA") or ROOT / ".venv-chroma" / "bin" / "chroma")
    if not binary.is_file():
        pytest.fail(f"no Chroma server at {binary}: run `make chroma-venv` "
                    "(or set CHUNK_SWEEP_CHROMA to a `chroma` executable)")
    port = free_port()
    data = tmp_path_factory.mktemp("chroma")
    proc = subprocess.Popen([str(binary), "run", "--path", str(data), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            pytest.fail("chroma run did not answer its heartbeat within 20 s")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _clustered(n: int, d: int = 384) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(30, d))
    x = centres[rng.integers(0, 30, n)] + 0.7 * rng.normal(size=(n, d))
    q = x[rng.choice(n, 50, replace=False)] + 0.3 * rng.normal(size=(50, d))
    return tuple((a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)
                 for a in (x, q))  # type: ignore[return-value]


def test_wide_search_returns_the_exact_neighbours(chroma_port: int) -> None:
    x, q = _clustered(600)
    tb = tiebreak_order([f"c{i:04d}" for i in range(600)])
    index = build_index(IndexSpec("chroma", ef_search=600, port=chroma_port), x, tb)
    got = index.search(q, 10)
    exact = dense_search(q, x, tb, 10)
    assert overlap_at_k(exact, got, [10])["ann_overlap_at_10"] == 1.0
    for g, e in zip(got, exact, strict=True):  # cosine back from Chroma's distance
        assert np.allclose(g.scores, e.scores, atol=1e-5)


def test_same_vectors_reuse_the_collection_and_agree_with_faiss_hnsw(chroma_port: int) -> None:
    x, q = _clustered(3000)
    tb = tiebreak_order([f"c{i:04d}" for i in range(3000)])
    spec = IndexSpec("chroma", M=16, ef_construction=100, ef_search=32, port=chroma_port)
    first = build_index(spec, x, tb)
    again = build_index(spec, x, tb)
    assert first.build_s > 0 and again.build_s == 0.0  # one collection per content hash
    assert again.search(q, 10) == first.search(q, 10)
    exact = dense_search(q, x, tb, 10)
    faiss_hnsw = build_index(IndexSpec("hnsw", M=16, ef_construction=100, ef_search=32), x, tb)
    chroma = overlap_at_k(exact, first.search(q, 10), [10])["ann_overlap_at_10"]
    faiss = overlap_at_k(exact, faiss_hnsw.search(q, 10), [10])["ann_overlap_at_10"]
    # Two HNSW implementations with the same M / ef: not the same graph (Chroma's parallel
    # build differs run to run), but the same recall within a few points.
    assert chroma >= 0.85 and faiss >= 0.85 and abs(chroma - faiss) <= 0.1


def test_no_server_is_one_line() -> None:
    x, _ = _clustered(50)
    with pytest.raises(SweepError) as err:
        build_index(IndexSpec("chroma", port=free_port()), x, tiebreak_order(list("x" * 50)))
    assert "no Chroma server at http://127.0.0.1:" in str(err.value)
    assert "\n" not in str(err.value)
