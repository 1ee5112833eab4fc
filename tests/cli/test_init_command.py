"""``sweep init``: the starter project, its refusal to overwrite, its errors, and the layering
of the project's conf/ over the bundled one (run here through the clone's install from
another folder: conf/project/ marks the project)."""

from __future__ import annotations

from pathlib import Path

import yaml

from helpers import DEMO, run_cli

FILES = ["conf/project/default.yaml", "conf/corpus/handbook.yaml", "conf/golden/handbook.yaml",
         "golden/handbook.jsonl", "golden/handbook.reference.yaml", "experiments/grid.yaml",
         "evals/README.md", ".github/workflows/retrieval-gate.yml", ".gitlab-ci.yml",
         ".gitignore"]


def test_init_writes_the_project_and_layers_it(tmp_path: Path) -> None:
    (tmp_path / "handbook").mkdir()
    (tmp_path / "handbook" / "a.md").write_text("# Returns\n\nThirty days to send it back.\n")
    proc = run_cli("-m", "sweep.cli", "init", "--corpus", "handbook", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "0 golden items" in proc.stdout
    for rel in FILES:
        assert (tmp_path / rel).is_file(), rel
    assert (tmp_path / "conf" / "experiment").resolve() == (tmp_path / "experiments").resolve()
    assert (tmp_path / "golden" / "handbook.jsonl").read_text() == ""
    ref = yaml.safe_load((tmp_path / "golden" / "handbook.reference.yaml").read_text())
    assert ref["chunk"] == yaml.safe_load((DEMO / "golden.reference.yaml").read_text())["chunk"]
    grid = yaml.safe_load((tmp_path / "experiments" / "grid.yaml").read_text())
    params = grid["hydra"]["sweeper"]["params"]
    assert len(params["chunk.boundary"].split(",")) * len(params["chunk.size"].split(",")) == 4
    gh = yaml.safe_load((tmp_path / ".github/workflows/retrieval-gate.yml").read_text())
    assert "handbook/**" in gh[True]["pull_request"]["paths"]  # YAML 1.1 reads `on` as True
    steps = gh["jobs"]["gate"]["steps"]
    assert any(s.get("with", {}).get("path") == ".cache" for s in steps)
    assert steps[-1]["run"] == "sweep baseline check tracking=off"
    gl = yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())["retrieval-gate"]
    assert gl["script"][-1] == "sweep baseline check tracking=off"
    assert gl["cache"]["paths"] == [".cache/"]

    cfg = run_cli("-m", "sweep", "--cfg", "job", "--resolve", "tracking=off",
                  "experiment=grid", cwd=tmp_path)
    assert cfg.returncode == 0, cfg.stderr
    job = yaml.safe_load(cfg.stdout)
    assert job["corpus"]["path"] == str(tmp_path / "handbook")
    assert job["golden"]["path"] == str(tmp_path / "golden" / "handbook.jsonl")
    assert job["eval"]["headline"] == "evidence_recall_at_budget"  # the project's experiment


def test_init_overwrites_nothing(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "README.md").write_text("ours\n")
    (tmp_path / ".gitlab-ci.yml").write_text("ours: {}\n")
    proc = run_cli("-m", "sweep.cli", "init", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: sweep init writes nothing over existing files: ")
    assert "evals/README.md" in proc.stderr and ".gitlab-ci.yml" in proc.stderr
    assert (tmp_path / "evals" / "README.md").read_text() == "ours\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitlab-ci.yml", "evals"]


def test_init_keeps_an_existing_gitignore_and_names_from_the_folder(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n")
    proc = run_cli("-m", "sweep.cli", "init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n"
    assert (tmp_path / "corpus").is_dir()
    assert (tmp_path / "conf" / "corpus" / "corpus.yaml").is_file()


def test_init_errors(tmp_path: Path) -> None:
    missing = run_cli("-m", "sweep.cli", "init", "--corpus", "nowhere", cwd=tmp_path)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: --corpus nowhere: not a folder")
    (tmp_path / "d").mkdir()
    bad = run_cli("-m", "sweep.cli", "init", "--corpus", "d", "--name", "My Docs", cwd=tmp_path)
    assert bad.returncode == 1 and "--name 'My Docs'" in bad.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "d"]  # nothing written on an error


def test_the_clone_layers_nothing_and_refuses_init(tmp_path: Path) -> None:
    from sweep.common import paths

    assert paths.in_clone() and paths.PROJECT_ROOT == paths.CLONE_ROOT
    assert paths.user_conf_path() is None  # the clone's conf/ is the bundled one
    assert paths.project_root(tmp_path) == paths.CLONE_ROOT  # no conf/project/ there
    (tmp_path / "conf" / "project").mkdir(parents=True)
    assert paths.project_root(tmp_path) == tmp_path.resolve()
    proc = run_cli("-m", "sweep.cli", "init", cwd=paths.CLONE_ROOT)
    assert proc.returncode == 1 and "chunk-sweep's own clone" in proc.stderr
