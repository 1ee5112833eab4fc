"""cache.backend=postgres against a real PostgreSQL server: the caches' suite (tests/cache_suite.py,
the same tests the SQLite backend passes), two writers racing on the same texts, a connection
dropped in the middle of a batch, and a wrong password.

The server is the one at $CHUNK_SWEEP_TEST_POSTGRES (a postgresql://USER@HOST:PORT/DB URL; its
password in $CHUNK_SWEEP_CACHE_PASSWORD) when that is set: ``.ci/run`` starts it with
``make postgres``. Otherwise the module starts its own with servers/postgres.sh on a free port,
its data in a temporary folder, with a password made here, and stops it afterwards. Each test
gets a schema of its own (``options=-csearch_path=...`` in the URL), dropped afterwards.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cache_suite import *  # noqa: F403  (the suite's tests, collected here on PostgreSQL)
from helpers import TcpRelay, postgres_server, run_cli
from sweep.common.errors import SweepError
from sweep.common.sqlite import text_key
from sweep.common.store import CacheTarget
from sweep.embedding.cache import EmbeddingCache, checksum

pytestmark = pytest.mark.slow

PASSWORD_ENV = "CHUNK_SWEEP_CACHE_PASSWORD"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's URL (no password); the password is in $CHUNK_SWEEP_CACHE_PASSWORD."""
    yield from postgres_server(tmp_path_factory)


def _admin(url: str):  # a plain connection for the test's own SQL
    import psycopg

    return psycopg.connect(url, password=os.environ[PASSWORD_ENV], autocommit=True)


def _with_schema(url: str, schema: str) -> str:
    return f"{url}?options=-csearch_path%3D{schema}"


@pytest.fixture
def target(server: str, tmp_path: Path) -> Iterator[CacheTarget]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with _admin(server) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    try:
        yield CacheTarget(tmp_path / "cache", "postgres", _with_schema(server, schema),
                          PASSWORD_ENV)
    finally:
        with _admin(server) as db:
            db.execute(f"DROP SCHEMA {schema} CASCADE")


# ---------------------------------------------------------------- two writers, same texts

DIM = 384


def _texts_vectors(n: int) -> list[tuple[bytes, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [(text_key(f"shared text {i}"), rng.standard_normal(DIM).astype(np.float32))
            for i in range(n)]


def _race_writer(target: CacheTarget, reverse: bool, go: object) -> None:
    items = _texts_vectors(1500)
    cache = EmbeddingCache(target)
    go.wait(60)  # type: ignore[attr-defined]
    for lo in range(0, len(items), 500):  # batches of 500, as the embedder writes them
        batch = items[lo : lo + 500]
        cache.put_many("model", batch[::-1] if reverse else batch)


def _race_reader(target: CacheTarget, go: object, out: object) -> None:
    """Reads the whole key set again and again while the writers write: every vector it gets
    must be whole (the cache checks dim and checksum; a torn one would be left out and logged
    as a checksum failure, which this counts)."""
    keys = [k for k, _ in _texts_vectors(1500)]
    cache = EmbeddingCache(target)
    go.wait(60)  # type: ignore[attr-defined]
    seen, torn = 0, 0
    for _ in range(40):
        rows = cache._db.execute("SELECT key, dim, vector, checksum FROM embeddings")
        for key, dim, blob, check in rows:
            if len(blob) != 4 * dim or bytes(check) != checksum("model", bytes(key), bytes(blob)):
                torn += 1
        seen = max(seen, len(cache.get_many("model", keys)))
    out.put((seen, torn))  # type: ignore[attr-defined]


def test_two_writers_racing_on_the_same_texts_write_each_once(target: CacheTarget) -> None:
    EmbeddingCache(target)  # the tables
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_race_writer, args=(target, False, go)),
             ctx.Process(target=_race_writer, args=(target, True, go)),
             ctx.Process(target=_race_reader, args=(target, go, out))]
    for p in procs:
        p.start()
    go.set()
    seen, torn = out.get(timeout=180)
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    assert torn == 0 and 0 <= seen <= 1500
    cache = EmbeddingCache(target)
    rows = cache._db.execute("SELECT key, COUNT(*) FROM embeddings GROUP BY key")
    assert len(rows) == 1500 and all(n == 1 for _, n in rows)
    got = cache.get_many("model", [k for k, _ in _texts_vectors(1500)])
    for key, vec in _texts_vectors(1500):
        np.testing.assert_array_equal(got[key], vec)


# ---------------------------------------------------------------- a connection dropped mid-write


def _via(url: str, port: int) -> str:
    head, _, tail = url.partition("@")
    return f"{head}@127.0.0.1:{port}/{tail.split('/', 1)[1]}"


def test_a_connection_dropped_mid_batch_is_opened_again_and_the_batch_sent_whole(
        target: CacheTarget, caplog: pytest.LogCaptureFixture) -> None:
    host_port = target.url.split("@", 1)[1].split("/", 1)[0]
    proxy = TcpRelay(host_port.split(":")[0], int(host_port.split(":")[1]))
    try:
        cut = CacheTarget(target.dir, "postgres", _via(target.url, proxy.port), PASSWORD_ENV)
        cache = EmbeddingCache(cut)
        items = _texts_vectors(3000)  # ~4.6 MB of vectors: the cut lands inside the batch
        cache.put_many("model", items[:10])
        watcher = EmbeddingCache(target)  # straight to the server
        proxy.cut_after = 1_000_000
        with caplog.at_level("WARNING"):
            cache.put_many("model", items)
        assert proxy.cuts == 1 and "dropped" in caplog.text
        got = watcher.get_many("model", [k for k, _ in items])
        assert len(got) == 3000
        for key, vec in items:
            np.testing.assert_array_equal(got[key], vec)
        # A server that stays out of reach: one line naming the URL, no traceback to read.
        proxy.refuse = True
        proxy.cut_after = 0
        with pytest.raises(SweepError) as err:
            cache.put_many("model", _texts_vectors(3001)[3000:])
        assert "cache.url" in str(err.value) and "\n" not in str(err.value)
        rows = watcher._db.execute("SELECT COUNT(*) FROM embeddings")
        assert rows[0][0] == 3000  # the failed batch left nothing
    finally:
        proxy.close()


# ---------------------------------------------------------------- a wrong password


def test_a_wrong_password_is_one_line_and_no_password_is_written(server: str,
                                                                 tmp_path: Path) -> None:
    wrong = "wrong-" + secrets.token_urlsafe(12)
    right = os.environ[PASSWORD_ENV]
    res = run_cli("-m", "sweep.cli", "cache", "info", "cache.backend=postgres",
                  f"cache.url={server}", "cache.password_env=SWEEP_TEST_WRONG_PW",
                  f"cache.dir={tmp_path / 'cache'}", cwd=tmp_path,
                  env={"SWEEP_TEST_WRONG_PW": wrong})
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "password authentication failed" in lines[0] and "cache.url" in lines[0]
    for secret in (wrong, right):
        assert secret not in res.stdout + res.stderr
        for f in tmp_path.rglob("*"):
            if f.is_file():
                assert secret.encode() not in f.read_bytes(), f
    # The URL with the password in it is refused before anything connects.
    res = run_cli("-m", "sweep.cli", "cache", "info", "cache.backend=postgres",
                  f"cache.url={server.replace('@', ':' + wrong + '@', 1)}", cwd=tmp_path)
    assert res.returncode != 0 and wrong not in res.stdout + res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------- a run through the shared cache


def test_a_run_on_the_shared_cache_matches_sqlite_and_a_second_node_encodes_nothing(
        target: CacheTarget, tmp_path: Path) -> None:
    """Two processes with their own cache.dir (two nodes) on one database: the second sends
    no text to the model and scores what a SQLite-cached run scores; no parse, starts or
    vector file appears in either cache.dir."""
    import json

    from sweep.outputs.report import result_metrics

    common = ["chunk.size=200", "chunk.boundary=paragraph", "tracking=off"]
    shared = ["cache.backend=postgres", f"cache.url='{target.url}'",  # quoted: ?options=
              f"cache.password_env={PASSWORD_ENV}"]
    reports = {}
    for name, extra in [("node_a", shared), ("node_b", shared), ("sqlite", [])]:
        res = run_cli("-m", "sweep", *common, *extra, f"hydra.run.dir={tmp_path}/{name}",
                      f"cache.dir={tmp_path}/cache-{name}", cwd=tmp_path,
                      env={"CHUNK_SWEEP_NODE": name})
        assert res.returncode == 0, res.stderr[-3000:]
        reports[name] = json.loads((tmp_path / name / "report.json").read_text())
    a, b, local = reports["node_a"], reports["node_b"], reports["sqlite"]
    assert a["texts_encoded"] > 100 and a["texts_from_cache"] == 0
    assert b["texts_encoded"] == 0 and b["texts_from_cache"] == a["texts_encoded"]
    assert (a["node"], b["node"], a["cache_backend"]) == ("node_a", "node_b", "postgres")
    assert local["texts_encoded"] == a["texts_encoded"] and local["cache_backend"] == "sqlite"
    assert result_metrics(a["metrics"]) == result_metrics(local["metrics"])
    assert result_metrics(b["metrics"]) == result_metrics(local["metrics"])
    for name in ("node_a", "node_b"):
        assert not list((tmp_path / f"cache-{name}").glob("*.sqlite"))
    assert list((tmp_path / "cache-sqlite").glob("embeddings.sqlite"))
