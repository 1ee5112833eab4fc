"""The entry points through the real command line, no model: bad values and impossible
combinations exit non-zero in one line, `validate` on the demo and on a broken file, paths that
resolve from any folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import DEMO, ROOT, run_cli


def test_cli_bad_value_exits_nonzero_without_traceback(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "chunk.boundary=words", "tracking=off", cwd=tmp_path)
    assert res.returncode != 0
    assert ("expected one of [fixed, sentence, paragraph, heading, recursive, token_text, "
            "langchain_recursive, semantic, cluster]") in res.stderr
    assert "Traceback" not in res.stderr


def test_cli_impossible_overlap_is_one_line_and_nonzero(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", "chunk.overlap=300", "tracking=off",
                  f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
    assert res.returncode == 1
    assert "error: chunk.overlap=300 must be >= 0 and smaller than chunk.size=254" in res.stderr
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


def test_python_m_sweep_resolves_paths_from_another_folder(tmp_path: Path) -> None:
    # --resolve: without it Hydra prints `${project_root:}` unexpanded, which proves nothing.
    res = run_cli("-m", "sweep", "--cfg", "job", "--resolve", "tracking=off", cwd=tmp_path,
                  env={"CHUNK_SWEEP_CACHE_DIR": str(tmp_path / "cache-from-env")})
    assert res.returncode == 0, res.stderr
    cfg = yaml.safe_load(res.stdout)
    assert cfg["corpus"]["path"] == str(DEMO / "corpus")  # the clone's demo, not ./data/demo
    assert cfg["golden"]["path"] == str(DEMO / "golden.jsonl")
    assert cfg["cache"]["dir"] == str(tmp_path / "cache-from-env")


def test_cache_dir_defaults_to_the_repository_without_the_variable(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CHUNK_SWEEP_CACHE_DIR"}
    res = subprocess.run([sys.executable, "-m", "sweep", "--cfg", "job", "--resolve",
                          "tracking=off"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert yaml.safe_load(res.stdout)["cache"]["dir"] == str(ROOT / ".cache")


def test_a_sweep_that_left_no_report_fails_instead_of_finishing_empty(tmp_path, capsys) -> None:
    from omegaconf import OmegaConf

    from sweep.cli.hydra_job import MlflowSweepCallback

    cfg = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "multirun")}}})
    with pytest.raises(SystemExit) as exc:
        MlflowSweepCallback().on_multirun_end(cfg)
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert f"error: no job report under {tmp_path / 'multirun'}" in err


def test_sweep_help_lists_every_command_in_one_line_each(tmp_path: Path) -> None:
    from sweep.cli.main import COMMANDS

    for flag in ("--help", "help", "-h"):
        res = run_cli("-m", "sweep.cli", flag, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        lines = res.stdout.splitlines()
        start = lines.index("commands:") + 1
        listed = [ln.split()[0] for ln in lines[start: lines.index("", start)]]
        assert listed == list(COMMANDS)  # every command once, in order, one line each
        assert all(len(ln) <= 82 for ln in lines)
        assert len(lines) < 40  # not Hydra's 222-line help
        assert "--hydra-help" in res.stdout and "--cfg job" in res.stdout
    # The line of a command is the first sentence of its module's docstring.
    assert "  show       why questions were missed, in the terminal\n" in res.stdout
    # `sweep help COMMAND`: that command's own options; Hydra's help is still one flag away.
    res = run_cli("-m", "sweep.cli", "help", "flips", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("usage: sweep flips")
    res = run_cli("-m", "sweep.cli", "--hydra-help", cwd=tmp_path)
    assert res.returncode == 0 and "Hydra" in res.stdout


def test_the_command_list_imports_no_command() -> None:
    code = ("import sys; from sweep.cli.main import usage; usage(); "
            "print(sorted(m for m in sys.modules if m.startswith(('sweep.cli.', 'sweep.label', "
            "'pandas', 'mlflow'))))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
                         check=True)
    assert res.stdout.strip() == "['sweep.cli.main']"


def test_a_summary_is_the_first_sentence_shortened_at_a_clause() -> None:
    from sweep.cli.main import summary_of

    assert summary_of("``sweep x A B``: does one thing. Then more.\n\nDetails.") == \
        "does one thing"
    assert summary_of("`sweep y`: reads the store, e.g. a sweep (see below), and prints it, "
                      "with a very long tail of words that goes on", 40) == \
        "reads the store, e.g. a sweep"
    assert summary_of("``sweep z``: " + "word " * 20, 30) == "word word word word word..."
