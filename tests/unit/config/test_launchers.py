"""Launcher configs for sweeps that outgrow one machine (conf/hydra/launcher/*.yaml, fast).

The plugins are optional extras. CI installs `.[slurm]` from locks/venv.txt (two small packages), so
the Slurm configs compose through Hydra there. `.[ray]` stays out of .venv: hydra-ray-launcher
pins cloudpickle<3 and pulls joblib back to 1.5, under the joblib launcher everyone else uses,
and adds ~250 MB; it lives in .venv-ray (`make ray-venv`), where tests/e2e/test_ray_cluster.py
runs a sweep on a real two-node cluster. Here, what the Ray config itself decides (the cluster
address, the environment forwarded to workers) is resolved with OmegaConf alone; composing
through the plugin runs where it is installed (this file under .venv-ray/bin/python).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from helpers import ROOT
from sweep.outputs import tracking

LAUNCHERS = ROOT / "conf" / "hydra" / "launcher"


def _load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((LAUNCHERS / f"{name}.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    return data


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


HAS_SUBMITIT = _has("hydra_plugins.hydra_submitit_launcher")
HAS_RAY = _has("hydra_plugins.hydra_ray_launcher")
RAY_TARGET = "hydra_plugins.chunk_sweep_ray.SweepRayLauncher"


def test_slurm_yaml_extends_submitit_slurm_with_the_documented_keys() -> None:
    cfg = _load("slurm")
    assert cfg["defaults"] == ["submitit_slurm", "_self_"]
    for key in ("partition", "timeout_min", "cpus_per_task", "mem_gb", "array_parallelism",
                "setup"):
        assert key in cfg, key
    assert cfg["timeout_min"] > 0 and cfg["cpus_per_task"] >= 1 and cfg["mem_gb"] >= 1
    assert "export HF_HUB_OFFLINE=1" in cfg["setup"]
    assert cfg["additional_parameters"]["export"] == "ALL"  # carries the parent run id
    assert all(isinstance(line, str) for line in cfg["setup"])


def test_slurm_local_yaml_uses_the_local_executor() -> None:
    cfg = _load("slurm_local")
    assert cfg["defaults"] == ["submitit_local", "_self_"]
    assert cfg["timeout_min"] > 0


def test_ray_cluster_yaml_joins_a_cluster_and_forwards_the_parent_run_id() -> None:
    cfg = _load("ray_cluster")
    assert cfg["defaults"] == ["ray", "_self_"]
    # The project's launcher (a lost task is a FAILED configuration), and no silent retry.
    assert cfg["_target_"] == RAY_TARGET
    init, remote = cfg["ray"]["init"], cfg["ray"]["remote"]
    assert remote["max_retries"] == 0
    assert "RAY_ADDRESS" in init["address"]
    # hydra-ray-launcher would otherwise add object_store_memory, which Ray refuses when
    # joining an existing cluster.
    assert "object_store_memory" in init and init["object_store_memory"] is None
    env = remote["runtime_env"]["env_vars"]
    # Workers of a running cluster do not inherit the driver's environment: the variable the
    # sweep callback sets must be the one forwarded, or child runs lose their parent.
    assert tracking.PARENT_ENV in env and tracking.PARENT_ENV in env[tracking.PARENT_ENV]
    assert env["HF_HUB_OFFLINE"] == "1"
    assert all(isinstance(v, str) for v in env.values())  # Ray wants strings


def test_extras_declare_the_launcher_plugins() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert any(dep.startswith("hydra-submitit-launcher") for dep in extras["slurm"])
    assert any(dep.startswith("hydra-ray-launcher") for dep in extras["ray"])


def test_ray_cluster_interpolations_resolve_without_the_plugin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from omegaconf import OmegaConf

    def resolved() -> dict[str, Any]:
        cfg = OmegaConf.create(_load("ray_cluster"))
        return OmegaConf.to_container(cfg.ray, resolve=True)  # type: ignore[return-value]

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv(tracking.PARENT_ENV, raising=False)
    ray = resolved()
    assert ray["init"]["address"] == "auto"
    assert ray["remote"]["runtime_env"]["env_vars"][tracking.PARENT_ENV] == ""
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    monkeypatch.setenv(tracking.PARENT_ENV, "parent-456")
    ray = resolved()
    assert ray["init"]["address"] == "ray://head:10001"
    env = ray["remote"]["runtime_env"]["env_vars"]
    assert env[tracking.PARENT_ENV] == "parent-456"
    assert all(isinstance(v, str) for v in env.values())  # Ray wants strings, resolved too


def test_the_ray_launcher_is_a_hydra_plugin_that_loads_without_ray() -> None:
    """Hydra imports every module of hydra_plugins at start-up, wherever the project runs:
    the launcher's module must import (and register as a launcher) without Ray, which .venv
    lacks. Ray is made unimportable in the child, so this holds in .venv-ray too."""
    code = ("import sys, warnings\n"
            "sys.modules['ray'] = None  # import ray: ImportError\n"
            "from hydra.core.plugins import Plugins\n"
            "from hydra.plugins.launcher import Launcher\n"
            "with warnings.catch_warnings(record=True) as said:\n"
            "    warnings.simplefilter('always')\n"
            "    found = Plugins.instance().discover(Launcher)\n"
            "names = {f'{c.__module__}.{c.__name__}' for c in found}\n"
            f"assert {RAY_TARGET!r} in names, names\n"
            "bad = [str(w.message) for w in said if 'chunk_sweep_ray' in str(w.message)]\n"
            "assert not bad, bad\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert res.returncode == 0, res.stderr[-2000:]


@pytest.fixture
def hydra_launcher_config(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from hydra import compose, initialize_config_dir

    from sweep.config.schema import conf_dir, register

    register()
    monkeypatch.setenv(tracking.PARENT_ENV, "parent-123")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def launcher(name: str, *overrides: str) -> Any:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3",
                                   job_name="sweep"):
            cfg = compose(config_name="config", return_hydra_config=True,
                          overrides=[f"hydra/launcher={name}", *overrides])
        return cfg.hydra.launcher

    yield launcher


@pytest.mark.skipif(not HAS_SUBMITIT, reason="optional extra not installed: pip install -e '.[slurm]'"
                    " (.ci/run installs it)")
def test_slurm_composes_through_hydra(hydra_launcher_config: Any) -> None:
    launcher = hydra_launcher_config("slurm", "hydra.launcher.partition=cpu")
    assert launcher._target_.endswith("SlurmLauncher")
    assert launcher.partition == "cpu"
    assert launcher.cpus_per_task == 4 and launcher.mem_gb == 16
    assert "export HF_HUB_OFFLINE=1" in list(launcher.setup)
    local = hydra_launcher_config("slurm_local")
    assert local._target_.endswith("LocalLauncher")


@pytest.mark.skipif(not HAS_RAY, reason="optional extra not installed here: it lives in .venv-ray "
                    "(make ray-venv; run this file with .venv-ray/bin/python), see the module "
                    "docstring; the interpolations are tested above")
def test_ray_cluster_composes_through_hydra(hydra_launcher_config: Any) -> None:
    launcher = hydra_launcher_config("ray_cluster")
    assert launcher._target_ == RAY_TARGET
    assert launcher.ray.init.address == "auto"
    assert launcher.ray.remote.runtime_env.env_vars[tracking.PARENT_ENV] == "parent-123"
