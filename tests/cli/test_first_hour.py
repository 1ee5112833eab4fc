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
    import sweep.cli.hydra_job as hj

    monkeypatch.setattr(hj.paths, "in_clone", lambda: False)
    monkeypatch.setattr(hj, "PROJECT_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path / "Makefile").exists()
    assert hj.ui_command(f"sqlite:///{tmp_path / 'mlflow.db'}") == "sweep ui"
    other = f"sqlite:///{tmp_path / 'team store.db'}"
    assert hj.ui_command(other) == f"sweep ui --tracking-uri '{other}'"
    assert hj.ui_command("http://mlflow.internal:5000") is None
