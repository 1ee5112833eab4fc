"""A secret-looking config key or a URL with credentials is refused before any file is
written (issue 14, item 2): Hydra writes .hydra/ files before the job runs, so the check must
come earlier."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli

SECRET = "sk-redteam-0123456789abcdef"


def _files_with(root: Path, needle: str) -> list[Path]:
    if not root.exists():
        return []
    return [p for p in root.rglob("*") if p.is_file()
            and needle in p.read_text(encoding="utf-8", errors="replace")]


def _common(tmp: Path) -> list[str]:
    return [f"hydra.run.dir={tmp}/run", f"hydra.sweep.dir={tmp}/sweep",
            f"tracking.uri=sqlite:///{tmp}/mlflow.db", f"cache.dir={tmp}/cache"]


@pytest.mark.parametrize("override", [
    f"+generation.api_key={SECRET}",
    f"generation.api_key={SECRET}",
    f"+judge.token={SECRET}",
    f"+secrets.password={SECRET}",
    f"generation.base_url=http://user:{SECRET}@127.0.0.1:9/v1",
    f"tracking.uri=http://{SECRET}@127.0.0.1:9",
])
def test_secret_override_is_refused_and_never_written(tmp_path: Path, override: str) -> None:
    res = run_cli("-m", "sweep", override, *_common(tmp_path), timeout=300)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:"), res.stderr
    assert SECRET not in res.stdout + res.stderr
    assert "api_key_env" in err[0]  # says where the key belongs instead
    assert _files_with(tmp_path, SECRET) == []


def test_secret_in_a_multirun_value_is_refused(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "-m", f"+generation.api_key=a,{SECRET}", *_common(tmp_path),
                  timeout=300)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert _files_with(tmp_path, SECRET) == []


@pytest.mark.parametrize("body,named", [
    # The schema is closed: a new key in an experiment file fails composition (Hydra's own
    # error), and nothing is written either way.
    (f"generation:\n  api_key: {SECRET}\n", "api_key"),
    (f"generation:\n  base_url: http://user:{SECRET}@127.0.0.1:9/v1\n", "generation.base_url"),
    (f"judge:\n  base_url: https://{SECRET}@127.0.0.1:9/v1\n", "judge.base_url"),
])
def test_secret_in_an_experiment_file_is_refused(tmp_path: Path, body: str, named: str) -> None:
    extra = tmp_path / "extra"
    (extra / "experiment").mkdir(parents=True)
    (extra / "experiment" / "leaky.yaml").write_text("# @package _global_\n" + body,
                                                      encoding="utf-8")
    res = run_cli("-m", "sweep", f"hydra.searchpath=[file://{extra}]", "experiment=leaky",
                  *_common(tmp_path), timeout=300)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    assert named in res.stderr
    assert SECRET not in res.stdout + res.stderr
    assert _files_with(tmp_path / "run", SECRET) == []
    assert _files_with(tmp_path / "sweep", SECRET) == []
    assert not (tmp_path / "mlflow.db").exists()


def test_subcommands_refuse_secret_overrides(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep.cli", "validate", f"+generation.api_key={SECRET}", timeout=300)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "generation.api_key" in res.stderr and SECRET not in res.stderr


@pytest.mark.parametrize("how", [["-m", "chunk.size=128,256"], ["--cfg", "job"], ["--info", "config"]],
                         ids=["multirun", "cfg", "info"])
def test_an_experiment_files_secret_is_refused_by_every_command(tmp_path: Path,
                                                                how: list[str]) -> None:
    """A run or multirun checks the configuration Hydra composes first (to read hydra.mode,
    before it writes anything); --cfg and --info, which print a configuration without that
    step, are checked on a composition of their own: both refuse it."""
    extra = tmp_path / "extra"
    (extra / "experiment").mkdir(parents=True)
    (extra / "experiment" / "leaky.yaml").write_text(
        f"# @package _global_\ngeneration:\n  base_url: http://user:{SECRET}@127.0.0.1:9/v1\n",
        encoding="utf-8")
    res = run_cli("-m", "sweep", *how, f"hydra.searchpath=[file://{extra}]", "experiment=leaky",
                  *_common(tmp_path), timeout=300)
    assert res.returncode != 0 and "Traceback" not in res.stderr, res.stderr
    assert "generation.base_url" in res.stderr and res.stderr.startswith("error:")
    assert SECRET not in res.stdout + res.stderr
    assert _files_with(tmp_path / "run", SECRET) == [] and not (tmp_path / "sweep").exists()
