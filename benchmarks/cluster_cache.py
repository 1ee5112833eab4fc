"""Texts encoded by a sweep split over two nodes: a SQLite cache per node vs one shared
PostgreSQL cache (cache.backend=postgres), on COVID-QA (issue 34).

    CHUNK_SWEEP_CACHE_PASSWORD=... python benchmarks/cluster_cache.py \\
        --url postgresql://sweep@127.0.0.1:5433/sweep_cache [--out DIR] [--sizes 512]

The grid is bench.py's (recursive/heading x sizes x header none/path, MiniLM, hybrid), split in
two by boundary: "node" a runs the recursive configurations, "node" b the heading ones, at the
same time, each in its own process with its own cache.dir (as two machines would). Per-node
SQLite: each node's cache starts empty. Shared: both nodes use one empty schema of the database
at --url. Printed per mode: texts_encoded per node (summed over its jobs' report.json), the
total, the unique texts the sweep needed (the vectors in the caches afterwards, counted
across them), and the wall time of the slower node. Needs ../shared/data and a server
(`make postgres`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CHUNK_SWEEP_SHARED_DATA") or ROOT.parent / "shared" / "data")
COVID = SHARED / "covid_qa" / "200423_covidQA.json"
PASSWORD_ENV = "CHUNK_SWEEP_CACHE_PASSWORD"
NODES = {"a": "recursive", "b": "heading"}


def node_args(out: Path, mode: str, node: str, sizes: str, url: str) -> list[str]:
    data = out / "covid"
    cache = ["cache.backend=postgres", f"cache.url='{url}'",
             f"cache.password_env={PASSWORD_ENV}"] if mode == "shared" else []
    return [sys.executable, "-m", "sweep", "-m", f"chunk.size={sizes}",
            f"chunk.boundary={NODES[node]}", "chunk.header=none,path", "retrieval=hybrid",
            f"corpus.path={data}/corpus", f"golden.path={data}/golden.jsonl",
            "corpus.name=covid", "golden.name=covid", f"cache.dir={out}/{mode}-cache-{node}",
            "tracking=off", "eval.latency_sample=0", f"hydra.sweep.dir={out}/{mode}-{node}",
            *cache]


def run_mode(out: Path, mode: str, sizes: str, url: str) -> dict[str, object]:
    start = time.perf_counter()
    procs = {n: subprocess.Popen(node_args(out, mode, n, sizes, url), cwd=out,
                                 env={**os.environ, "HF_HUB_OFFLINE": "1",
                                      "CHUNK_SWEEP_NODE": f"node-{n}"},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for n in NODES}
    walls = {}
    for n, p in procs.items():
        _, err = p.communicate()
        walls[n] = time.perf_counter() - start
        if p.returncode != 0:
            sys.exit(f"cluster_cache: node {n} ({mode}) failed:\n{err.decode()[-2000:]}")
    encoded = {}
    for n in NODES:
        reports = [json.loads(r.read_text()) for r in (out / f"{mode}-{n}").glob("*/report.json")]
        encoded[n] = sum(int(r["texts_encoded"]) for r in reports)
    return {"encoded": encoded, "wall_s": max(walls.values()), "walls": walls}


def unique_vectors(out: Path, url: str) -> tuple[int, int]:
    """(distinct texts over both per-node SQLite caches, vectors in the shared schema)."""
    import sqlite3

    keys: set[bytes] = set()
    for n in NODES:
        with sqlite3.connect(out / f"sqlite-cache-{n}" / "embeddings.sqlite") as db:
            keys.update(bytes(k) for (k,) in db.execute("SELECT key FROM embeddings"))
    import psycopg

    with psycopg.connect(url, password=os.environ[PASSWORD_ENV]) as db:
        shared = db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    return len(keys), int(shared)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="postgresql://USER@HOST:PORT/DB")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--sizes", default="512")
    args = parser.parse_args()
    if not COVID.is_file():
        sys.exit(f"cluster_cache: {COVID} missing (../shared/data)")
    if not os.environ.get(PASSWORD_ENV):
        sys.exit(f"cluster_cache: set {PASSWORD_ENV}")
    out = args.out or Path(tempfile.mkdtemp(prefix="chunk-sweep-cluster-cache-"))
    out.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([sys.executable, "-m", "sweep.cli", "import", "squad", str(COVID),
                          "--out", str(out / "covid")], cwd=out, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(res.stderr[-2000:])
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.url, password=os.environ[PASSWORD_ENV], autocommit=True) as db:
        db.execute(f"CREATE SCHEMA {schema}")
    url = f"{args.url}?options=-csearch_path%3D{schema}"
    results = {mode: run_mode(out, mode, args.sizes, url) for mode in ("sqlite", "shared")}
    unique_sqlite, unique_shared = unique_vectors(out, url)
    for mode, r in results.items():
        enc = r["encoded"]
        print(f"{mode}: texts_encoded node-a={enc['a']} node-b={enc['b']} "  # type: ignore[index]
              f"total={sum(enc.values())} wall_s={r['wall_s']:.1f} "  # type: ignore[union-attr]
              f"(node walls {', '.join(f'{k}={v:.1f}' for k, v in r['walls'].items())})")  # type: ignore[union-attr]
    print(f"unique texts the sweep needed: {unique_sqlite} (both SQLite caches, distinct); "
          f"{unique_shared} vectors in the shared cache")
    print(f"out: {out}")


if __name__ == "__main__":
    main()
