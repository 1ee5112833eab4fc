"""Texts encoded by one sweep whose jobs run on two nodes: a SQLite cache per node against the
shared PostgreSQL cache with the pre-fan-out plan (cache.prewarm), on COVID-QA (issue 34).

    CHUNK_SWEEP_CACHE_PASSWORD=... python benchmarks/cluster_cache.py \\
        --url postgresql://sweep@127.0.0.1:5442/sweep_cache [--launcher ray|joblib] \\
        [--sizes 512] [--embedding minilm] [--modes sqlite,shared,shared-noprewarm] [--out DIR]

The grid is bench.py's (chunk.boundary recursive/heading x chunk.header none/path x --sizes,
hybrid retrieval), one sweep per mode:

- ``--launcher ray`` (run with the Ray venv's python: the sweeps are ``sys.executable -m
  sweep``): hydra/launcher=ray_cluster on the cluster at $RAY_ADDRESS (its nodes set
  $CHUNK_SWEEP_NODE, started with $CHUNK_SWEEP_CACHE_PASSWORD and PYTHONPATH in their
  environment), one CPU per configuration. Per-node SQLite: ``cache.dir`` names the node
  (``${oc.env:CHUNK_SWEEP_NODE}``), so each node's jobs share that node's cache only.
- ``--launcher joblib`` (no cluster): per-node SQLite is two sweep processes at the same time,
  node a the recursive configurations and node b the heading ones, each with its own
  ``cache.dir``; the shared modes are one sweep with hydra/launcher=joblib n_jobs=2.

Modes: ``sqlite`` (a cache per node, cache.prewarm=off), ``shared`` (one new PostgreSQL schema,
cache.prewarm=on), ``shared-noprewarm`` (the same without the plan: what the upsert alone
saves). Printed per mode: texts_encoded per node (summed over the jobs' report.json) and in
total, the unique texts of the sweep (distinct keys over the caches afterwards), the sweep's
wall time, and whether every configuration's headline equals the first mode's.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CHUNK_SWEEP_SHARED_DATA") or ROOT.parent / "shared" / "data")
COVID = SHARED / "covid_qa" / "200423_covidQA.json"
PASSWORD_ENV = "CHUNK_SWEEP_CACHE_PASSWORD"
HALVES = {"a": "recursive", "b": "heading"}


def grid(out: Path, sizes: str, embedding: str, boundaries: str) -> list[str]:
    data = out / "covid"
    return [f"chunk.size={sizes}", f"chunk.boundary={boundaries}", "chunk.header=none,path",
            "retrieval=hybrid", f"embedding={embedding}", f"corpus.path={data}/corpus",
            f"golden.path={data}/golden.jsonl", "corpus.name=covid", "golden.name=covid",
            "tracking=off", "eval.latency_sample=0", "sweep.audit=false"]


def cache_args(mode: str, out: Path, url: str, node_dir: str) -> list[str]:
    if mode == "sqlite":
        return [f"cache.dir={node_dir}", "cache.prewarm=off"]
    return [f"cache.dir={out}/{mode}-local", "cache.backend=postgres", f"cache.url='{url}'",
            f"cache.password_env={PASSWORD_ENV}",
            f"cache.prewarm={'on' if mode == 'shared' else 'off'}"]


def launcher_args(launcher: str) -> list[str]:
    if launcher == "ray":
        return ["hydra/launcher=ray_cluster", "hydra.launcher.ray.remote.num_cpus=1"]
    return ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]


def sweep(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "sweep", "-m", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_mode(out: Path, mode: str, opts: argparse.Namespace, url: str) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    runs: list[tuple[Path, subprocess.Popen[bytes]]] = []
    start = time.perf_counter()
    if mode == "sqlite" and opts.launcher == "joblib":  # two "nodes": two sweeps at once
        for node, boundary in HALVES.items():
            folder = out / f"{mode}-{node}"
            args = [*grid(out, opts.sizes, opts.embedding, boundary),
                    *cache_args(mode, out, url, str(out / f"sqlite-cache-node-{node}")),
                    f"hydra.sweep.dir={folder}"]
            runs.append((folder, sweep(args, {**env, "CHUNK_SWEEP_NODE": f"node-{node}"}, out)))
    else:
        folder = out / mode
        node_dir = f"{out}/sqlite-cache-${{oc.env:CHUNK_SWEEP_NODE,driver}}"
        args = [*grid(out, opts.sizes, opts.embedding, "recursive,heading"),
                *cache_args(mode, out, url, node_dir), *launcher_args(opts.launcher),
                f"hydra.sweep.dir={folder}"]
        runs.append((folder, sweep(args, env, out)))
    for folder, proc in runs:
        stdout, stderr = proc.communicate()
        (folder.parent / f"{folder.name}.log").write_bytes(stdout + b"\n" + stderr)
        if proc.returncode != 0:
            sys.exit(f"cluster_cache: {mode} failed:\n{stderr.decode()[-3000:]}")
    wall = time.perf_counter() - start
    reports = [json.loads(p.read_text()) for folder, _ in runs
               for p in sorted(folder.glob("*/report.json"))]
    per_node: dict[str, int] = {}
    for r in reports:
        per_node[r["node"]] = per_node.get(r["node"], 0) + int(r["texts_encoded"])
    plans = [json.loads((f / "prewarm.json").read_text()) for f, _ in runs
             if (f / "prewarm.json").is_file()]
    headlines = {run_key(r): r["headline"]["value"] for r in reports}
    return {"per_node": per_node, "total": sum(per_node.values()), "wall_s": wall,
            "jobs": len(reports), "headlines": headlines,
            "plan": plans[0] if plans else None}


def run_key(rep: dict[str, Any]) -> str:
    c = rep["config"]["chunk"]
    return f"{c['boundary']}/{c['size']}/{c['header']}"


def distinct_sqlite(out: Path) -> int:
    keys: set[bytes] = set()
    for path in out.glob("sqlite-cache-*/embeddings.sqlite"):
        with sqlite3.connect(path) as db:
            keys.update(bytes(k) for (k,) in db.execute("SELECT key FROM embeddings"))
    return len(keys)


def distinct_postgres(url: str) -> int:
    import psycopg

    with psycopg.connect(url, password=os.environ[PASSWORD_ENV]) as db:
        return int(db.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="postgresql://USER@HOST:PORT/DB")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--sizes", default="512")
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--launcher", choices=("ray", "joblib"), default="ray")
    parser.add_argument("--modes", default="sqlite,shared,shared-noprewarm")
    opts = parser.parse_args()
    if not COVID.is_file():
        sys.exit(f"cluster_cache: {COVID} missing (../shared/data)")
    if not os.environ.get(PASSWORD_ENV):
        sys.exit(f"cluster_cache: set {PASSWORD_ENV}")
    if opts.launcher == "ray" and not os.environ.get("RAY_ADDRESS"):
        sys.exit("cluster_cache: --launcher ray needs RAY_ADDRESS (the cluster's address)")
    out = (opts.out or Path(tempfile.mkdtemp(prefix="chunk-sweep-cluster-cache-"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not (out / "covid" / "golden.jsonl").is_file():
        res = subprocess.run([sys.executable, "-m", "sweep.cli", "import", "squad", str(COVID),
                              "--out", str(out / "covid")], cwd=out, capture_output=True,
                             text=True)
        if res.returncode != 0:
            sys.exit(res.stderr[-2000:])
    import psycopg

    results: dict[str, dict[str, Any]] = {}
    for mode in opts.modes.split(","):
        url = opts.url
        if mode != "sqlite":  # each shared mode starts from an empty schema of its own
            schema = f"bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(opts.url, password=os.environ[PASSWORD_ENV],
                                 autocommit=True) as db:
                db.execute(f"CREATE SCHEMA {schema}")
            url = f"{opts.url}?options=-csearch_path%3D{schema}"
        results[mode] = run_mode(out, mode, opts, url)
        results[mode]["unique"] = (distinct_sqlite(out) if mode == "sqlite"
                                   else distinct_postgres(url))
        r = results[mode]
        first = next(iter(results.values()))
        same = r["headlines"] == first["headlines"]
        nodes = ", ".join(f"{n}={v}" for n, v in sorted(r["per_node"].items()))
        print(f"{mode}: {r['jobs']} jobs, texts_encoded {nodes}, total={r['total']}, "
              f"unique texts={r['unique']}, wall_s={r['wall_s']:.1f}, "
              f"headlines equal to {next(iter(results))}: {same}", flush=True)
        if r["plan"]:
            p = r["plan"]
            print(f"  plan: {p['unique_texts']} unique, {p['shared_texts']} shared, "
                  f"{p['units']} units, {p['plan_s']} s", flush=True)
    (out / "cluster_cache.json").write_text(json.dumps(results, indent=1))
    print(f"out: {out}")


if __name__ == "__main__":
    main()
