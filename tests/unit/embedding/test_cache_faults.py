"""Caches a user's disk does things to (issue 30): half the database file gone, a read-only
cache folder, two warm processes on one folder. Each is one line naming the file and the real
cause; a damaged cache is never blamed on permissions, nor a read-only one on damage."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sweep.chunking.cache import TokenStartsCache
from sweep.common.errors import SweepError
from sweep.common.sqlite import text_key
from sweep.embedding.cache import EmbeddingCache

N = 3000


def _vec(i: int) -> np.ndarray:
    return np.random.default_rng(i).normal(size=64).astype(np.float32)


def _filled(path: Path) -> None:
    cache = EmbeddingCache(path)
    cache.put_many("m", [(text_key(f"t{i}"), _vec(i)) for i in range(N)])
    cache.close()
    db = sqlite3.connect(path)  # everything into the main file, so cutting it loses rows
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


@pytest.mark.parametrize("kept", [0.5, 0.9])
def test_a_cache_cut_short_is_named_damaged_not_read_only(tmp_path: Path, kept: float) -> None:
    path = tmp_path / "embeddings.sqlite"
    _filled(path)
    with path.open("r+b") as f:
        f.truncate(int(path.stat().st_size * kept))
    with pytest.raises(SweepError) as err:
        cache = EmbeddingCache(path)  # the schema pages may survive: then the read fails
        cache.get_many("m", [text_key(f"t{i}") for i in range(N)])
    text = str(err.value)
    assert f"the embedding cache {path} is damaged" in text and "cut short" in text
    assert f"delete {path}" in (err.value.hint or "")
    for wrong in ("writable", "read-only", "permission"):
        assert wrong not in text.lower() and wrong not in (err.value.hint or "").lower()
    assert "\n" not in text


def test_a_file_written_over_is_damaged_too(tmp_path: Path) -> None:
    path = tmp_path / "tokens.sqlite"
    path.write_bytes(b"not a database at all, " * 200)
    with pytest.raises(SweepError, match=r"token starts cache .* is damaged"):
        TokenStartsCache(path)


_READ_ONLY = textwrap.dedent("""
    import os, sys
    from sweep.common.errors import SweepError
    from sweep.embedding.cache import EmbeddingCache
    from sweep.common.sqlite import text_key
    if os.getuid() == 0:  # root ignores file modes: drop to nobody so the mode means it
        os.setgid(65534); os.setuid(65534)
    try:
        cache = EmbeddingCache(sys.argv[1])
        cache.get_many("m", [text_key("t1")])
        cache.put_many("m", [(text_key("new"), __import__("numpy").zeros(64, "float32"))])
    except SweepError as exc:
        print(exc); print(exc.hint); sys.exit(3)
    print("no error")
""")


@pytest.mark.parametrize("fresh", [False, True], ids=["existing", "new"])
def test_a_read_only_cache_folder_says_read_only(tmp_path: Path, fresh: bool) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "embeddings.sqlite"
    if not fresh:
        _filled(path)
        path.chmod(0o444)
    folder.chmod(0o555)
    tmp_path.chmod(0o755)
    try:
        out = subprocess.run([sys.executable, "-c", _READ_ONLY, str(path)], capture_output=True,
                             text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    finally:
        folder.chmod(0o755)
    assert out.returncode == 3, out.stdout + out.stderr
    line, hint = out.stdout.splitlines()[:2]
    assert f"cannot write the embedding cache {path}" in line and "read-only" in line
    assert "damaged" not in line and "writable folder" in hint
    assert "Traceback" not in out.stderr


def _warm_reader(path: str, rounds: int, out: mp.Queue) -> None:
    cache = EmbeddingCache(path)
    keys = [text_key(f"t{i}") for i in range(N)]
    bad = 0
    for _ in range(rounds):
        got = cache.get_many("m", keys)
        bad += len(got) != N or any(not np.array_equal(got[keys[i]], _vec(i))
                                    for i in range(0, N, 97))
        # a warm run also records facts while reading (token lengths): writes interleave
        cache.put_lengths("m", [(k, i) for i, k in enumerate(keys[:200])])
    cache.close()
    out.put(bad)


def test_two_warm_processes_on_one_cache_folder(tmp_path: Path) -> None:
    path = tmp_path / "embeddings.sqlite"
    _filled(path)
    ctx = mp.get_context("spawn")
    results: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_warm_reader, args=(str(path), 15, results)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    assert [results.get(timeout=5) for _ in procs] == [0, 0]  # every vector, every round
    cache = EmbeddingCache(path)
    assert cache.info()["vectors"] == N and cache.info()["token_lengths"] == 200
