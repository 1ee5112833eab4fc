"""index=chroma when the server misbehaves (issue 30): it dies mid-build or mid-search, a
collection under this configuration's name was written by something else, holds other
vectors than its marks claim, or was left half-built by a crash; two builds race. A real
`chroma run` server (slow suite); the only fake is a TCP relay in front of it that can be cut,
which is how a server dies from the client's side.

$CHUNK_SWEEP_CHROMA_PORT reuses a server already running there (e.g. `make chroma-start`)."""

from __future__ import annotations

import logging
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from helpers import ROOT, TcpRelay, free_port
from sweep.common.errors import SweepError
from sweep.retrieval.index import (
    ABANDONED_AFTER_S,
    IndexSpec,
    build_index,
    chroma_collection_name,
)
from sweep.retrieval.ranking import dense_search, tiebreak_order

pytestmark = pytest.mark.slow
chromadb = pytest.importorskip("chromadb")


def _healthy(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1)
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    given = os.environ.get("CHUNK_SWEEP_CHROMA_PORT")
    if given:
        assert _healthy(int(given)), f"no Chroma server on $CHUNK_SWEEP_CHROMA_PORT={given}"
        yield int(given)
        return
    binary = Path(os.environ.get("CHUNK_SWEEP_CHROMA") or ROOT / ".venv-chroma" / "bin" / "chroma")
    if not binary.is_file():
        pytest.fail(f"no Chroma server at {binary}: run `make chroma-venv`")
    chosen = free_port()
    proc = subprocess.Popen([str(binary), "run", "--path", str(tmp_path_factory.mktemp("ch")),
                             "--host", "127.0.0.1", "--port", str(chosen)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if _healthy(chosen):
                break
            time.sleep(0.2)
        else:
            pytest.fail("chroma run did not answer its heartbeat within 60 s")
        yield chosen
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(seed).normal(size=(n, 64))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    return x, tiebreak_order([f"c{i:05d}" for i in range(n)])


def _client(port: int) -> object:
    return chromadb.HttpClient(host="127.0.0.1", port=port,
                               settings=chromadb.Settings(anonymized_telemetry=False))


def _names(port: int) -> list[str]:
    return sorted(c.name for c in _client(port).list_collections())


def _fresh(port: int, spec: IndexSpec, x: np.ndarray) -> str:
    """The index's name, with whatever an earlier run of this test left under it deleted
    (a reused server keeps its collections)."""
    name = chroma_collection_name(spec, x)
    client = _client(port)
    for other in _names(port):
        if other.startswith(name):
            client.delete_collection(other)
    return name


def _exact_ok(index: object, x: np.ndarray, tb: np.ndarray) -> None:
    got = index.search(x[:20], 5)  # type: ignore[attr-defined]
    assert [r.indices for r in got] == [r.indices for r in dense_search(x[:20], x, tb, 5)]


def test_the_server_dying_mid_build_is_one_line(port: int) -> None:
    x, tb = _data(3000, 1)
    relay = TcpRelay("127.0.0.1", port)
    relay.cut_on = b"/add "  # the collection is created, its vectors never arrive
    spec = IndexSpec("chroma", port=relay.port, ef_search=3000)
    name = _fresh(port, spec, x)
    with pytest.raises(SweepError) as err:
        build_index(spec, x, tb)
    text = str(err.value)
    assert text.startswith(f"index=chroma: the Chroma server at http://127.0.0.1:{relay.port} "
                           "failed while building cs-")
    assert "\n" not in text and "make chroma-start" in (err.value.hint or "")
    # what it left is a build copy, never a collection under the index's own name
    assert name not in _names(port)
    index = build_index(IndexSpec("chroma", port=port, ef_search=3000), x, tb)  # server back
    _exact_ok(index, x, tb)


def test_the_server_dying_mid_search_is_one_line(port: int) -> None:
    x, tb = _data(500, 2)
    relay = TcpRelay("127.0.0.1", port)
    spec = IndexSpec("chroma", port=relay.port, ef_search=500)
    _fresh(port, spec, x)
    index = build_index(spec, x, tb)
    _exact_ok(index, x, tb)
    relay.cut()
    with pytest.raises(SweepError) as err:
        index.search(x[:3], 5)
    assert "failed while searching cs-" in str(err.value) and "\n" not in str(err.value)


def test_a_foreign_collection_under_the_name_is_not_read(port: int,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    x, tb = _data(400, 3)
    spec = IndexSpec("chroma", port=port, ef_search=400)
    name = _fresh(port, spec, x)
    other, _ = _data(400, 33)
    # what a chunk-sweep before the marks, or any other tool, would have left: right name,
    # right size, other vectors
    _client(port).create_collection(name, embedding_function=None).add(
        ids=[str(i) for i in range(400)], embeddings=other)
    with caplog.at_level(logging.WARNING):
        index = build_index(spec, x, tb)
    assert index.build_s > 0  # rebuilt, not reused
    assert "carries no chunk-sweep marks" in caplog.text
    _exact_ok(index, x, tb)


def test_marks_that_lie_about_the_vectors_are_caught(port: int,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    x, tb = _data(400, 4)
    spec = IndexSpec("chroma", port=port, ef_search=400)
    _fresh(port, spec, x)
    build_index(spec, x, tb)
    col = _client(port).get_collection(chroma_collection_name(spec, x), embedding_function=None)
    col.update(ids=["399"], embeddings=[x[0] * -1.0])  # one vector changed, marks kept
    with caplog.at_level(logging.WARNING):
        index = build_index(spec, x, tb)
    assert index.build_s > 0 and "its vector 399 differs" in caplog.text
    _exact_ok(index, x, tb)


def test_an_abandoned_build_is_deleted_and_a_fresh_one_never_read(port: int) -> None:
    x, tb = _data(300, 5)
    spec = IndexSpec("chroma", port=port, ef_search=300)
    name = _fresh(port, spec, x)
    client = _client(port)
    old = client.create_collection(f"{name}-bdeadbeef", embedding_function=None, metadata={
        "chunk_sweep": 1, "complete": False, "started": int(time.time()) - ABANDONED_AFTER_S - 60})
    old.add(ids=["0"], embeddings=[x[0]])
    live = client.create_collection(f"{name}-bfeedface", embedding_function=None, metadata={
        "chunk_sweep": 1, "complete": False, "started": int(time.time())})
    live.add(ids=["0"], embeddings=[x[0]])
    index = build_index(spec, x, tb)
    _exact_ok(index, x, tb)
    names = _names(port)
    assert f"{name}-bdeadbeef" not in names  # a crash's leftover, gone
    assert f"{name}-bfeedface" in names  # maybe another sweep's build: left alone
    client.delete_collection(f"{name}-bfeedface")


def test_two_sweeps_building_one_index_at_once(port: int) -> None:
    x, tb = _data(2000, 6)
    spec = IndexSpec("chroma", port=port, ef_search=2000)
    name = _fresh(port, spec, x)
    with ThreadPoolExecutor(2) as pool:
        indexes = list(pool.map(lambda _: build_index(spec, x, tb), range(2)))
    for index in indexes:
        _exact_ok(index, x, tb)
    mine = [n for n in _names(port) if n.startswith(name)]
    assert mine == [name]  # the loser's copy deleted


def test_a_sweep_with_no_chroma_server_is_one_line_and_exit_1(tmp_path: Path) -> None:
    from helpers import run_cli

    closed = free_port()
    res = run_cli("-m", "sweep", "index=chroma", f"index.port={closed}", "tracking=off",
                  f"cache.dir={tmp_path}/cache", f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert res.returncode == 1, res.stderr[-2000:]
    errors = [ln for ln in res.stderr.splitlines() if "error" in ln.lower()]
    assert any(f"index=chroma: no Chroma server at http://127.0.0.1:{closed}" in ln
               for ln in errors), res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    # the embeddings it made before the index step are kept: a rerun does not embed again
    assert (tmp_path / "cache" / "embeddings.sqlite").stat().st_size > 0
