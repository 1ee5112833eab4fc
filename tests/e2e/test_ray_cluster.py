"""A sweep on a real Ray cluster (issue 34): a head and a worker node, each its own `ray start` on
127.0.0.1 with its own temp dir and 1 CPU (servers/ray.sh, `make ray-start`), a real `mlflow
server`, and `hydra/launcher=ray_cluster tracking=server` run from `.venv-ray` (`make
ray-venv`: hydra-ray-launcher's pins clash with .venv's).

What the README promises, checked: one parent run and one nested child per configuration, the
reports in the shared sweep folder, configurations spread over both nodes, metrics equal to the
same sweep run by the basic launcher in one process; and a worker node killed (SIGKILL, every
process of the node) while it runs a configuration leaves that configuration FAILED with the
reason, in its report and as a child run, and the same command resumes the sweep to the end.

Bounded in time: every command has a timeout, every wait a deadline.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow

RAY_VENV = ROOT / ".venv-ray"
RAY_PY = RAY_VENV / "bin" / "python"
SCRIPT = ROOT / "servers" / "ray.sh"
# Fixed, as on a real cluster (servers/ray.sh derives every port from it: 6390-6429).
PORT = int(os.environ.get("CHUNK_SWEEP_TEST_RAY_PORT", "6390"))
SWEEP_TIMEOUT_S = 1200
# The demo, four configurations; the static model keeps them quick (distilled once, cached).
GRID = ["chunk.size=128,256", "chunk.boundary=fixed,heading", "embedding=minilm_static",
        "eval.latency_sample=0"]
ON_RAY = ["tracking=server", "hydra/launcher=ray_cluster",
          # 1 CPU per node, so each node runs one configuration at a time
          "hydra.launcher.ray.remote.num_cpus=1"]
# Metrics that are timings or depend on what a cache already held, not on the configuration.
NOT_COMPARED = ("_s", "_ms")
CACHE_COUNTS = {"n_texts_encoded", "n_texts_from_cache", "bm25_index_cached"}


@dataclass
class Cluster:
    address: str
    env: dict[str, str]
    state: Path

    def node_dir(self, name: str) -> Path:
        return Path((self.state / f"ray-{PORT}.tmpdir").read_text().strip()) / name


def _script(cluster_env: dict[str, str], *args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], env=cluster_env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if not RAY_PY.exists():
        pytest.skip(f"{RAY_VENV} is missing: run `make ray-venv` (Ray and hydra-ray-launcher in "
                    "their own venv; .ci/run builds it)")
    state = tmp_path_factory.mktemp("ray-state")
    env = {**os.environ, "VENV": str(RAY_VENV), "STATE": str(state), "PORT": str(PORT),
           "WAIT_S": "300", "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    # The nodes must not know the tracking server: the driver gives each job its store.
    for name in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS", "CHUNK_SWEEP_PARENT_RUN_ID"):
        env.pop(name, None)
    try:
        res = _script(env, "start", timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        yield Cluster(address=res.stdout.strip().splitlines()[-1], env=env, state=state)
    finally:
        _script(env, "stop", timeout=300)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (folder / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri",
         f"sqlite:///{folder}/server.db", "--artifacts-destination", str(folder / "art"),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=folder, stdout=log, stderr=subprocess.STDOUT)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 300
        while True:
            try:
                urllib.request.urlopen(f"{uri}/health", timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.time() < deadline, \
                    (folder / "server.log").read_text()[-2000:]
                time.sleep(1)
        yield uri
    finally:
        server.terminate()
        server.wait(60)
        log.close()


def _env(cluster: Cluster, uri: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "RAY_ADDRESS": cluster.address, "MLFLOW_TRACKING_URI": uri}


def _sweep(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RAY_PY), "-m", "sweep", "-m", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=SWEEP_TIMEOUT_S)


def _reports(sweep_dir: Path) -> dict[int, dict[str, Any]]:
    return {int(p.parent.name): json.loads(p.read_text(encoding="utf-8"))
            for p in sweep_dir.glob("*/report.json")}


def _runs(uri: str, experiment: str) -> tuple[list[Any], list[Any]]:
    """(parent runs, configuration runs) of ``experiment`` in the server."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, experiment
    runs = client.search_runs([exp.experiment_id], max_results=100)
    return ([r for r in runs if r.data.tags.get("chunk_sweep.role") == "sweep"],
            [r for r in runs if r.data.tags.get("chunk_sweep.role") == "config"])


def _compared(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items()
            if not k.endswith(NOT_COMPARED) and k not in CACHE_COUNTS}


def test_a_sweep_on_the_cluster_matches_the_same_sweep_run_locally(
        cluster: Cluster, mlflow_server: str, tmp_path: Path) -> None:
    env = _env(cluster, mlflow_server)
    local = _sweep([*GRID, "tracking=off", f"hydra.sweep.dir={tmp_path}/local",
                    f"cache.dir={tmp_path}/cache-local"], tmp_path, env)
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = _sweep([*GRID, *ON_RAY, "tracking.experiment=ray-grid",
                     f"hydra.sweep.dir={tmp_path}/cluster",
                     f"cache.dir={tmp_path}/cache-cluster"], tmp_path, env)
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]

    # The reports are in the one sweep folder the driver named, and the table read them back.
    reports = _reports(tmp_path / "cluster")
    assert sorted(reports) == [0, 1, 2, 3]
    assert {r["status"] for r in reports.values()} == {"FINISHED"}
    assert (tmp_path / "cluster" / "comparison.csv").is_file()
    # Both nodes ran configurations (each node names itself in CHUNK_SWEEP_NODE).
    assert {r["node"] for r in reports.values()} == {"head", "worker1"}

    # One parent, one nested child per configuration, all in the server the driver named
    # (the nodes' environment has no MLFLOW_TRACKING_URI).
    parents, children = _runs(mlflow_server, "ray-grid")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert Path(parents[0].data.tags["sweep_dir"]) == (tmp_path / "cluster").resolve()
    assert len(children) == 4
    assert {r.info.status for r in children} == {"FINISHED"}
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    assert sorted(r.data.tags["config_hash"] for r in children) == \
        sorted(r["config_hash"] for r in reports.values())

    # The same numbers as the basic launcher's, configuration by configuration.
    local_by_hash = {r["config_hash"]: r for r in _reports(tmp_path / "local").values()}
    assert sorted(local_by_hash) == sorted(r["config_hash"] for r in reports.values())
    for rep in reports.values():
        expected = _compared(local_by_hash[rep["config_hash"]]["metrics"])
        assert len(expected) > 50
        assert _compared(rep["metrics"]) == expected, rep["config"]["chunk"]


def _node_pids(root: Path) -> set[int]:
    """The processes of one node: those whose command line names its temp dir, and their
    descendants (Ray's worker processes rename themselves ``ray::...``)."""
    parent: dict[int, int] = {}
    found: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        parent[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        if f"{root}/" in cmd or f"{root} " in cmd + " ":
            found.add(pid)
    grew = True
    while grew:
        new = {p for p, pp in parent.items() if pp in found and p not in found}
        found |= new
        grew = bool(new)
    return found


def _running_on(root: Path, sweep_dir: Path) -> set[int]:
    """The job numbers whose job folder a process of the node at ``root`` holds a file open in
    (the job's log, sweep.log, which Hydra opens when the job starts)."""
    jobs = set()
    for pid in _node_pids(root):
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        for link in links:
            rel = Path(link)
            if rel.is_relative_to(sweep_dir) and rel.relative_to(sweep_dir).parts[0].isdigit():
                jobs.add(int(rel.relative_to(sweep_dir).parts[0]))
    return jobs


def test_a_worker_killed_mid_sweep_fails_its_configuration_and_the_sweep_resumes(
        cluster: Cluster, mlflow_server: str, tmp_path: Path) -> None:
    # Two configurations on the torch MiniLM (tens of seconds each on the demo) and two on the
    # static one: the first two tasks go out first, one to each node, so the worker holds a
    # slow configuration long enough to be killed in the middle of it. Runs last: the worker
    # stays dead for the rest of the module.
    sweep_dir = tmp_path / "kill"
    args = ["embedding=minilm,minilm_static", "chunk.size=128,256", "eval.latency_sample=0",
            *ON_RAY, "tracking.experiment=ray-kill", f"hydra.sweep.dir={sweep_dir}",
            f"cache.dir={tmp_path}/cache"]
    env = _env(cluster, mlflow_server)
    out, err = (tmp_path / "kill.out").open("w"), (tmp_path / "kill.err").open("w")
    proc = subprocess.Popen([str(RAY_PY), "-m", "sweep", "-m", *args], cwd=tmp_path, env=env,
                            stdout=out, stderr=err)
    worker = cluster.node_dir("worker1")
    killed: int | None = None
    try:
        deadline = time.time() + 600
        while killed is None:
            assert proc.poll() is None, "the sweep ended before the worker ran a torch job: " + \
                (tmp_path / "kill.err").read_text()[-3000:]
            assert time.time() < deadline, "the worker never ran a torch configuration"
            for job in _running_on(worker, sweep_dir):
                overrides = (sweep_dir / str(job) / ".hydra" / "overrides.yaml")
                if (overrides.is_file() and "embedding=minilm\n" in overrides.read_text()
                        and not (sweep_dir / str(job) / "report.json").exists()):
                    res = _script(cluster.env, "kill-worker", "1", timeout=120)
                    assert res.returncode == 0, res.stderr
                    killed = job
                    break
            time.sleep(0.5)
        proc.wait(timeout=SWEEP_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        out.close()
        err.close()
    stderr = (tmp_path / "kill.err").read_text()
    assert proc.returncode == 1, stderr[-3000:]
    assert "1 of 4 configurations failed" in stderr, stderr[-3000:]

    reports = _reports(sweep_dir)
    assert sorted(reports) == [0, 1, 2, 3]
    lost = reports[killed]
    assert lost["status"] == "FAILED"
    assert lost["error"].startswith("the Ray task running this configuration was lost ("), lost
    assert "the same command resumes the sweep" in lost["error"]
    assert lost["config"]["embedding"]["name"] == "minilm"
    print(f"job {killed} lost: {lost['error']}")  # which error Ray gave, for the record (-s)
    assert [r["status"] for n, r in sorted(reports.items()) if n != killed] == ["FINISHED"] * 3

    parents, children = _runs(mlflow_server, "ray-kill")
    assert len(parents) == 1 and parents[0].info.status == "FAILED"
    assert len(children) == 4
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
    failed = [r for r in children if r.info.status == "FAILED"]
    assert len(failed) == 1 and sorted(r.info.status for r in children).count("FINISHED") == 3
    assert failed[0].data.tags["error"] == lost["error"]
    assert failed[0].data.params["chunk.size"] == str(lost["config"]["chunk"]["size"])

    # The same command, on what is left of the cluster (the head): the three finished
    # configurations are skipped, the lost one runs, the sweep ends FINISHED.
    resumed = _sweep(args, tmp_path, env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    reports = _reports(sweep_dir)
    assert {r["status"] for r in reports.values()} == {"FINISHED"}
    assert sorted(n for n, r in reports.items() if "resumed_from_run" not in r) == [killed]
    assert reports[killed]["node"] == "head"
    parents, children = _runs(mlflow_server, "ray-kill")
    assert sorted(r.info.status for r in parents) == ["FAILED", "FINISHED"]
    second = next(r for r in parents if r.info.status == "FINISHED")
    rerun = [r for r in children if r.data.tags["mlflow.parentRunId"] == second.info.run_id]
    assert len(rerun) == 1 and rerun[0].info.status == "FINISHED"
    assert rerun[0].data.tags["config_hash"] == reports[killed]["config_hash"]
    assert not [r for r in parents + children if r.info.status == "RUNNING"]
