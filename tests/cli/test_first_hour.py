"""First-hour traps of a new user (issue 45), each reproduced: an empty corpus.path, the UI
hint in a user's repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli


@pytest.mark.parametrize("key", ["corpus.path", "golden.path"])
def test_an_empty_path_is_refused_not_read_as_the_current_folder(tmp_path: Path,
                                                                  key: str) -> None:
    # the folder it would have indexed: a built docs site in the working folder
    (tmp_path / "index.md").write_text("# Site\n\nA built page.\n")
    proc = run_cli("-m", "sweep.cli", "validate", f"{key}=", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith(f"error: {key} is empty: set it")
    assert "index.md" not in proc.stdout
    sweep = run_cli("-m", "sweep", f"{key}= ", "tracking=off", cwd=tmp_path)
    assert sweep.returncode == 1 and f"error: {key} is empty" in sweep.stderr


def test_the_ui_hint_in_a_users_repository_is_sweep_ui(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import sweep.outputs.tracking as hj

    monkeypatch.setattr(hj.paths, "in_clone", lambda: False)
    monkeypatch.setattr(hj, "PROJECT_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path / "Makefile").exists()
    assert hj.ui_command(f"sqlite:///{tmp_path / 'mlflow.db'}") == "sweep ui"
    other = f"sqlite:///{tmp_path / 'team store.db'}"
    assert hj.ui_command(other) == f"sweep ui --tracking-uri '{other}'"
    assert hj.ui_command("http://mlflow.internal:5000") is None


def _ran_nothing(folder: Path) -> None:
    """No job ran and no MLflow store was written (so no parent run exists)."""
    assert not list(folder.rglob("report.json"))
    assert not (folder / "mlflow.db").exists()


def test_one_invalid_combination_refuses_the_sweep_before_any_job(tmp_path: Path) -> None:
    # tracking on (the default store, ./mlflow.db): the refusal comes before the parent run
    proc = run_cli("-m", "sweep", "-m", "chunk.size=128,256", "chunk.overlap=200",
                   f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert proc.returncode == 1
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith("error: nothing ran")
    assert "[chunk.size=128]" in line and "chunk.size=256" not in line
    assert "resumes the rest" not in proc.stderr
    _ran_nothing(tmp_path)


@pytest.mark.parametrize(("override", "said"), [
    ("embedding=minilm,minlm", "embedding=minlm: no such option of embedding (did you mean "
                               "embedding=minilm"),
    ("chunk.sise=128,256", "chunk.sise: no such key (did you mean chunk.size?)"),
])
def test_a_misspelt_option_or_key_in_a_sweep_says_did_you_mean(tmp_path: Path, override: str,
                                                               said: str) -> None:
    proc = run_cli("-m", "sweep", "-m", override, f"hydra.sweep.dir={tmp_path / 'sweep'}",
                   cwd=tmp_path)
    assert proc.returncode == 1
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and said in errors[0], proc.stderr
    assert "Config search path" not in proc.stderr and "+chunk.sise" not in proc.stderr
    assert "resumes the rest" not in proc.stderr
    _ran_nothing(tmp_path)


def test_a_misspelt_option_outside_a_sweep_is_one_line_not_a_file_error(tmp_path: Path) -> None:
    proc = run_cli("-m", "sweep", "embedding=bge_small", cwd=tmp_path)
    assert proc.returncode == 1
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: config: embedding=bge_small: no such option of embedding "
                           "(the options are ") and "minilm_static" in line
    _ran_nothing(tmp_path)
