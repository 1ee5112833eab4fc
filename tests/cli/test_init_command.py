"""``sweep init``: the starter project, its refusal to overwrite, its errors, and the layering
of the project's conf/ over the bundled one (run here through the clone's install from
another folder: conf/project/ marks the project)."""

from __future__ import annotations

from pathlib import Path

import pytest
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


# --------------------------------------------------------------------------- issue 44


@pytest.mark.parametrize("folder", ["docs #2024", "a: b"])
def test_init_writes_values_through_a_yaml_emitter(tmp_path: Path, folder: str) -> None:
    # Before: `path: ${project_root:}/docs #2024` read back as `.../docs`; `a: b` did not parse
    (tmp_path / folder).mkdir()
    (tmp_path / folder / "a.md").write_text("# Returns\n\nThirty days to send it back.\n")
    proc = run_cli("-m", "sweep.cli", "init", "--corpus", folder, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    name = "docs_2024" if folder.startswith("docs") else "a_b"
    corpus = yaml.safe_load((tmp_path / "conf" / "corpus" / f"{name}.yaml").read_text())
    assert corpus["path"] == "${project_root:}/" + folder
    gh = yaml.safe_load((tmp_path / ".github/workflows/retrieval-gate.yml").read_text())
    assert f"{folder}/**" in gh[True]["pull_request"]["paths"]
    gl = yaml.safe_load((tmp_path / ".gitlab-ci.yml").read_text())["retrieval-gate"]
    assert f"{folder}/**" in gl["rules"][0]["changes"]


def test_init_corpus_path_with_a_hash_composes_whole(tmp_path: Path) -> None:
    (tmp_path / "docs #2024").mkdir()
    (tmp_path / "docs #2024" / "a.md").write_text("# Returns\n\nThirty days.\n")
    assert run_cli("-m", "sweep.cli", "init", "--corpus", "docs #2024",
                   cwd=tmp_path).returncode == 0
    cfg = run_cli("-m", "sweep", "--cfg", "job", "--resolve", "tracking=off", cwd=tmp_path)
    assert cfg.returncode == 0, cfg.stderr
    assert yaml.safe_load(cfg.stdout)["corpus"]["path"] == str(tmp_path / "docs #2024")


@pytest.mark.parametrize("link", ["conf", ".github"])
def test_init_refuses_a_folder_that_links_outside(tmp_path: Path, link: str) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / link).symlink_to(elsewhere, target_is_directory=True)
    proc = run_cli("-m", "sweep.cli", "init", cwd=project)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"error: sweep init writes nothing: {link} leads outside the project (to {elsewhere}) "
        "(move them away, or run sweep init in another folder)"]
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in project.iterdir()] == [link]


def test_init_allows_a_link_that_stays_inside(tmp_path: Path) -> None:
    (tmp_path / "real-conf").mkdir()
    (tmp_path / "conf").symlink_to(tmp_path / "real-conf", target_is_directory=True)
    proc = run_cli("-m", "sweep.cli", "init", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "real-conf" / "project" / "default.yaml").is_file()


@pytest.mark.parametrize("plain_file", [".github", "golden", "experiments", "corpus"])
def test_init_checks_every_target_before_writing_any(tmp_path: Path, plain_file: str) -> None:
    # Before: conf/ and golden/ were written, then a traceback at .github/ (a file)
    (tmp_path / plain_file).write_text("not a folder\n")
    proc = run_cli("-m", "sweep.cli", "init", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert f"{plain_file} is a file where a folder must be" in lines[0]
    assert [p.name for p in tmp_path.iterdir()] == [plain_file]


def test_init_says_where_ci_installs_chunk_sweep_from(tmp_path: Path) -> None:
    spec = "git+https://example.org/you/chunk-sweep@v0.1.0"
    proc = run_cli("-m", "sweep.cli", "init", "--install", spec, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"CI installs chunk-sweep with pip install {spec} (CHUNK_SWEEP_INSTALL" in proc.stdout
    gh = yaml.safe_load((tmp_path / ".github/workflows/retrieval-gate.yml").read_text())
    assert gh["env"]["CHUNK_SWEEP_INSTALL"] == spec
    other = tmp_path / "other"
    other.mkdir()
    proc = run_cli("-m", "sweep.cli", "init", cwd=other)
    assert proc.returncode == 0, proc.stderr
    assert "CI installs chunk-sweep from wheels/chunk_sweep-" in proc.stdout
    assert "not on PyPI" in proc.stdout
    assert ".venv/" in (other / ".gitignore").read_text().splitlines()
    bad = run_cli("-m", "sweep.cli", "init", "--install", "two words", cwd=tmp_path / "corpus")
    assert bad.returncode == 1 and bad.stderr.startswith("error: --install 'two words'")
    assert list((tmp_path / "corpus").iterdir()) == []
