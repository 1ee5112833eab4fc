"""The built wheel, installed into a fresh venv outside the clone, runs a project of its own.

The wheel is built from a copy of the tracked tree (the repository stays as it was) without
build isolation (no download), then installed with ``--no-deps`` into a venv that reaches the
project venv's site-packages through a plain path line: that folder's ``.pth`` files (the
editable install pointing at this clone's src/) are not processed, so ``sweep`` can only
come from the wheel. From an empty folder: ``sweep init --corpus docs``, the demo's golden set
in place of the empty one, then validate, a sweep, compare, export, the exported winner run
from the project's experiments/, baseline update and the gate.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from helpers import DEMO, ROOT

pytestmark = pytest.mark.slow


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{cmd}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        if rel.split("/")[0] in ("src", "conf", "experiments", "data") or rel in (
                "pyproject.toml", "README.md"):
            dest = src / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            origin = ROOT / rel
            if origin.is_symlink():
                dest.symlink_to(os.readlink(origin))
            else:
                shutil.copy2(origin, dest)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(out), str(src)], cwd=src, env=dict(os.environ))
    (built,) = out.glob("chunk_sweep-*.whl")
    return built


def test_wheel_carries_conf_demo_and_plugin(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {str(p.relative_to(ROOT / "conf")) for p in (ROOT / "conf").rglob("*.yaml")}
    assert {f"sweep/conf/{s}" for s in shipped} <= names
    assert "sweep/conf/experiment/chunking_grid.yaml" in names  # through conf/experiment's link
    demo = {str(p.relative_to(DEMO)) for p in DEMO.rglob("*") if p.is_file()}
    assert {f"sweep/demo/{d}" for d in demo} <= names
    assert "hydra_plugins/chunk_sweep_searchpath/__init__.py" in names


def test_project_from_an_empty_folder(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path,
         env=dict(os.environ))
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "project-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q",
          str(wheel)], cwd=tmp_path, env=dict(os.environ))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CHUNK_SWEEP_", "MLFLOW_")) and k != "PYTHONPATH"}
    env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    shutil.copytree(DEMO / "corpus", project / "docs", dirs_exist_ok=True)
    where = _run([str(py), "-c", "import sweep; print(sweep.__file__)"], project, env)
    assert Path(where.stdout.strip()).is_relative_to(venv)  # the wheel's, not this clone's
    sweep = [str(venv / "bin" / "sweep")]

    init = _run([*sweep, "init", "--corpus", "docs/"], project, env)
    assert "validate: the corpus" in init.stdout and "0 golden items" in init.stdout
    assert (project / "golden" / "docs.jsonl").read_text() == ""
    again = subprocess.run([*sweep, "init", "--corpus", "docs/"], cwd=project, env=env,
                           capture_output=True, text=True)
    assert again.returncode == 1 and "writes nothing over existing files" in again.stderr

    # the demo's 60 labelled items in the empty golden file (same reference chunking)
    shutil.copy(DEMO / "golden.jsonl", project / "golden" / "docs.jsonl")
    cfg = _run([*sweep, "--cfg", "job", "--resolve", "tracking=off"], project, env).stdout
    assert f"path: {project}/docs" in cfg and f"path: {project}/golden/docs.jsonl" in cfg
    _run([*sweep, "validate"], project, env)
    swept = _run([*sweep, "-m", "experiment=grid"], project, env)
    assert (project / "mlflow.db").is_file(), swept.stderr
    compared = json.loads(_run([*sweep, "compare", "--json", "--no-plot"], project, env).stdout)
    assert len(compared["rows"] if isinstance(compared, dict) else compared) == 4
    _run([*sweep, "export", "--name", "best"], project, env)
    assert (project / "experiments" / "winners" / "best.yaml").is_file()
    # the tutorial's "run the winner again", as written (same store): it runs, not skipped
    again = _run([*sweep, "experiment=winners/best"], project, env)
    assert "running it again" in again.stdout + again.stderr
    assert "skipped" not in again.stdout + again.stderr
    _run([*sweep, "baseline", "update"], project, env)
    assert (project / "evals" / "baseline.json").is_file()
    _run([*sweep, "baseline", "check", "tracking=off"], project, env)
    assert (project / ".cache").is_dir()  # the project's cache, not the package's folder
    assert not (Path(where.stdout.strip()).parent / ".cache").exists()
