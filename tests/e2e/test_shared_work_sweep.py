"""cache.prewarm end to end: a real sweep of two configurations run side by side (the joblib
launcher, two processes) on one cache, SQLite and PostgreSQL: the texts both need are planned
before the fan-out and embedded once, so the jobs' texts_encoded add up to the sweep's unique
texts (each text encoded once in total), and the sweep's end says so.

PostgreSQL: the server at $CHUNK_SWEEP_TEST_POSTGRES (password in $CHUNK_SWEEP_CACHE_PASSWORD),
as tests/e2e/test_cache_postgres.py; otherwise one started here with servers/postgres.sh on a
free port, its data in a temporary folder, with a password made here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import DEMO, postgres_server, run_cli

pytestmark = pytest.mark.slow

PASSWORD_ENV = "CHUNK_SWEEP_CACHE_PASSWORD"


@pytest.fixture(scope="module")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from postgres_server(tmp_path_factory)


def _schema_url(server: str) -> str:
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, password=os.environ[PASSWORD_ENV], autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    return f"{server}?options=-csearch_path%3D{schema}"


def _vectors(backend: str, cache: Path, url: str) -> int:
    if backend == "sqlite":
        with sqlite3.connect(cache / "embeddings.sqlite") as db:
            return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
    import psycopg

    with psycopg.connect(url, password=os.environ[PASSWORD_ENV]) as db:
        units = db.execute("SELECT COUNT(*) FROM prewarm_units").fetchone()[0]
        assert units == 0  # the sweep's end removed its plan
        return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_two_jobs_side_by_side_encode_each_text_once(backend: str, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    cache = tmp_path / "cache"
    url = ""
    args = [f"cache.dir={cache}"]
    if backend == "postgres":
        url = _schema_url(request.getfixturevalue("postgres"))
        args += ["cache.backend=postgres", f"cache.url='{url}'",
                 f"cache.password_env={PASSWORD_ENV}"]
    sweep_dir = tmp_path / "sweep"
    res = run_cli("-m", "sweep", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
                  "chunk.size=128,256", f"corpus.path={DEMO}/corpus",
                  f"golden.path={DEMO}/golden.jsonl", "tracking=off", "eval.latency_sample=0",
                  "sweep.audit=false", f"hydra.sweep.dir={sweep_dir}", *args, cwd=tmp_path,
                  timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    plan = json.loads((sweep_dir / "prewarm.json").read_text())
    reports = [json.loads(p.read_text()) for p in sorted(sweep_dir.glob("*/report.json"))]
    assert len(reports) == 2 and all(r["status"] == "FINISHED" for r in reports)
    # the questions at least are needed by both configurations
    assert plan["shared_texts"] >= len(DEMO.joinpath("golden.jsonl").read_text().splitlines())
    # each job took part in the shared work, and every text was encoded once in total
    assert all("shared_work" in r for r in reports)
    assert sum(r["shared_work"]["texts_encoded"] for r in reports) == plan["shared_texts"]
    total = sum(r["texts_encoded"] for r in reports)
    assert total == plan["unique_texts"] == _vectors(backend, cache, url)
    assert (f"texts encoded: {total:,} in total" in res.stdout
            and f"the sweep's unique texts: {plan['unique_texts']:,}" in res.stdout)
