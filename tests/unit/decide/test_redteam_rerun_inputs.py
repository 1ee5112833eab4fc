"""``sweep rerun`` after the corpus or golden set changed (issue 14, item 11): the before/after
ranking compares different inputs, and the command says so in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from sweep.cli.rerun import _report_agreement
from sweep.decide import runs
from sweep.decide.rerun import input_change
from sweep.outputs import tracking

CORPUS_A, CORPUS_B, GOLDEN = "a" * 64, "b" * 64, "c" * 64


def _rows(corpus: str, golden: str, n: int = 2) -> list[dict]:
    return [{"run_id": f"r{i}", "inputs": {"corpus": corpus, "golden": golden}}
            for i in range(n)]


def test_input_change_names_each_changed_input() -> None:
    assert input_change(_rows(CORPUS_A, GOLDEN), _rows(CORPUS_A, GOLDEN)) is None
    line = input_change(_rows(CORPUS_A, GOLDEN), _rows(CORPUS_B, GOLDEN))
    assert line == ("warning: the re-run scored different inputs than the sweep it re-ranks "
                    "(corpus aaaaaaaaaaaa -> bbbbbbbbbbbb): before and after are not comparable")
    both = input_change(_rows(CORPUS_A, GOLDEN), _rows(CORPUS_B, "d" * 64))
    assert both is not None and "corpus aaaaaaaaaaaa -> bbbbbbbbbbbb; golden set cccccccccccc " \
        "-> dddddddddddd" in both
    # Runs logged before fingerprints were tagged: nothing to compare, nothing claimed.
    assert input_change([{"run_id": "x", "inputs": {}}], _rows(CORPUS_B, GOLDEN)) is None


def _sweep(uri: str, root: Path, name: str, corpus_fp: str) -> str:
    """A two-configuration sweep whose runs carry ``corpus_fp`` as their corpus fingerprint."""
    _, parent = tracking.start_parent(uri, "rerun-inputs", run_name=name, params={},
                                      tags={"sweep_dir": str(root / name)})
    for size, recall in ((128, 0.5), (256, 0.75)):
        folder = root / name / str(size)
        folder.mkdir(parents=True)
        config = {"chunk": {"boundary": "heading", "size": size}, "eval": {"prompt_k": 5}}
        (folder / "config.yaml").write_text(yaml.safe_dump(config))
        with (folder / "per_question.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["qid", "status", "recall_at_5"])
            for i in range(4):
                w.writerow([f"q{i}", "scored", int(i < recall * 4)])
        report = {"status": "FINISHED", "config": config, "config_hash": f"{name}{size}",
                  "headline": {"metric": "recall_at_5", "value": recall},
                  "fingerprints": {"corpus": corpus_fp, "golden": GOLDEN, "model": "m"},
                  "metrics": {"recall_at_5": recall, "context_tokens_at_5": float(size)}}
        (folder / "report.json").write_text(json.dumps(report))
        tracking.log_job(uri, "rerun-inputs", run_name=f"{name}-{size}", plain_config=config,
                         report=report, parent_run_id=parent,
                         artifacts=[folder / f for f in ("report.json", "per_question.csv",
                                                         "config.yaml")])
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    return parent


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Three logged sweeps: the first, one on the same corpus, one on an edited corpus (its
    runs carry another corpus fingerprint)."""
    root = tmp_path_factory.mktemp("rerun-store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    return {"uri": uri, "root": str(root), "coarse": _sweep(uri, root, "coarse", CORPUS_A),
            "same": _sweep(uri, root, "same", CORPUS_A),
            "edited": _sweep(uri, root, "edited", CORPUS_B)}


@pytest.mark.parametrize("edited", [False, True])
def test_rerun_report_warns_when_the_corpus_changed(store: dict[str, str], tmp_path: Path,
                                                    edited: bool,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The comparison `sweep rerun` prints after its sweep, read from the logged runs."""
    uri, coarse_id = store["uri"], store["coarse"]
    fine_id = store["edited" if edited else "same"]
    coarse = runs.load_table(uri, "rerun-inputs", coarse_id, None, tmp_path / "c", n=200)
    fine = runs.load_table(uri, "rerun-inputs", fine_id, None, tmp_path / "f", n=200)
    assert {r["inputs"]["corpus"] for r in fine.rows} == {CORPUS_B if edited else CORPUS_A}
    _report_agreement(coarse, coarse.rows[:2], fine)
    out, err = capsys.readouterr()
    assert "ranking before -> after (recall_at_5):" in out
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    if edited:
        assert warnings == ["warning: the re-run scored different inputs than the sweep it "
                            "re-ranks (corpus aaaaaaaaaaaa -> bbbbbbbbbbbb): before and after "
                            "are not comparable"]
    else:
        assert warnings == []
