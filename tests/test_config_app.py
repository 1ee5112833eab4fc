"""Config composition and entry-point behaviour that needs no model (fast)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import DEMO, ROOT, run_cli
from sweep.common.errors import SweepError
from sweep.config.checks import check_config
from sweep.config.compose import compose


def test_default_config_composes_with_absolute_demo_paths() -> None:
    cfg = compose([])
    assert Path(cfg.corpus.path) == DEMO / "corpus"
    assert Path(cfg.golden.path) == DEMO / "golden.jsonl"
    assert cfg.chunk.boundary.value == "recursive"
    assert cfg.eval.headline == "recall_at_5"
    assert cfg.tracking.uri.startswith("sqlite:////")


def test_experiment_chunking_grid_is_on_the_search_path() -> None:
    cfg = compose(["experiment=chunking_grid"])
    assert cfg.eval.headline == "evidence_recall_at_budget"


def test_group_option_changes_the_embedding_family() -> None:
    cfg = compose(["embedding=minilm_static"])
    assert cfg.embedding.family.value == "model2vec_distill"


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("chunk.sise=3", ["sise"]),
        ("chunk.boundary=words", ["words", "fixed", "sentence", "paragraph", "heading",
                                  "recursive"]),
        ("chunk.header=everything", ["everything", "none", "title", "path"]),
        ("chunk.size=abc", ["abc", "chunk.size"]),
        ("embedding=nonexistent", ["nonexistent", "minilm"]),
    ],
)
def test_bad_override_fails_before_work_naming_the_key(override: str, words: list[str]) -> None:
    with pytest.raises(SweepError) as err:
        compose([override])
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize(
    ("override", "words"),
    [
        (["chunk.overlap=256"], ["chunk.overlap=256", "smaller than chunk.size=256"]),
        (["chunk.size=0"], ["chunk.size=0", "at least 1"]),
        (["chunk.overlap=-1"], ["chunk.overlap=-1"]),
        (["eval.k=[0,5]"], ["eval.k", ">= 1"]),
        (["eval.min_overlap=1.5"], ["eval.min_overlap"]),
        (["retrieval.depth=3"], ["retrieval.depth=3", "largest eval.k"]),
        (["corpus.on_error=ignore"], ["corpus.on_error", "raise, skip"]),
    ],
)
def test_impossible_values_are_one_line_errors(override: list[str], words: list[str]) -> None:
    cfg = compose(override)
    with pytest.raises(SweepError) as err:
        check_config(cfg)
    for word in words:
        assert word in str(err.value)


def test_cli_bad_value_exits_nonzero_without_traceback(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "chunk.boundary=words", "tracking=off", cwd=tmp_path)
    assert res.returncode != 0
    assert ("expected one of [fixed, sentence, paragraph, heading, recursive, semantic, "
            "cluster]") in res.stderr
    assert "Traceback" not in res.stderr


def test_cli_impossible_overlap_is_one_line_and_nonzero(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "chunk.overlap=300", "tracking=off",
                  f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert res.returncode == 1
    assert "error: chunk.overlap=300 must be >= 0 and smaller than chunk.size=256" in res.stderr
    assert "Traceback" not in res.stderr


def test_cli_missing_corpus_folder(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", f"corpus.path={tmp_path}/nope", "tracking=off",
                  f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert res.returncode == 1
    assert f"corpus folder not found: {tmp_path}/nope" in res.stderr
    assert "Traceback" not in res.stderr


def test_validate_passes_on_the_demo() -> None:
    res = run_cli("-m", "sweep.cli", "validate")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "OK:" in res.stderr
    assert "60 items" in res.stderr


def test_validate_names_the_line_of_an_unknown_chunk_id(tmp_path: Path) -> None:
    lines = (DEMO / "golden.jsonl").read_text().splitlines()
    bad = lines[6].replace('"relevant_chunk_ids": ["', '"relevant_chunk_ids": ["faq#999", "', 1)
    assert bad != lines[6]
    lines[6] = bad
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(lines) + "\n")
    (tmp_path / "golden.reference.yaml").write_text(
        (DEMO / "golden.reference.yaml").read_text())
    res = run_cli("-m", "sweep.cli", "validate", f"golden.path={golden}")
    assert res.returncode == 1
    assert f"{golden}:7: relevant_chunk_ids[0]: 'faq#999' does not exist under the reference " \
           "chunking" in res.stdout
    assert "FAILED" in res.stderr


def test_validate_json_output(tmp_path: Path) -> None:
    import json

    res = run_cli("-m", "sweep.cli", "validate", "--json")
    data = json.loads(res.stdout)
    assert data["ok"] is True and data["items"] == 60 and data["errors"] == 0


def test_python_m_sweep_help_works_from_another_folder(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "--cfg", "job", "tracking=off", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert str(ROOT / "data" / "demo" / "corpus") in res.stdout or "project_root" in res.stdout


def test_a_sweep_that_left_no_report_fails_instead_of_finishing_empty(tmp_path, capsys) -> None:
    from omegaconf import OmegaConf

    from sweep.cli.hydra_job import MlflowSweepCallback

    cfg = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "multirun")}}})
    with pytest.raises(SystemExit) as exc:
        MlflowSweepCallback().on_multirun_end(cfg)
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f"error: no job report under {tmp_path / 'multirun'}" in err
