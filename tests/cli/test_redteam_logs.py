"""A run's non-TTY output holds the tool's own lines: no third-party DEBUG lines, no progress
bars; `hydra.verbose=true` brings the DEBUG lines back (issue 14, item 19)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli


def _workspace(tmp: Path) -> list[str]:
    corpus = tmp / "corpus"
    corpus.mkdir()
    for i in range(40):  # more chunks than one embedding batch, so a bar would be drawn
        (corpus / f"doc{i}.md").write_text(
            f"# Doc {i}\n\nThe kestrel hub number {i} pairs over zigbee.\n\n"
            f"Section two of doc {i} talks about batteries.\n", encoding="utf-8")
    golden = tmp / "golden.jsonl"
    golden.write_text(json.dumps({"qid": "q1", "question": "which hub pairs over zigbee",
                                  "evidence": [{"path": "doc3.md",
                                                "quote": "The kestrel hub number 3"}]}) + "\n",
                      encoding="utf-8")
    return [f"corpus.path={corpus}", f"golden.path={golden}", "corpus.name=t", "golden.name=t",
            "retrieval=hybrid", "chunk.size=32", "embedding.batch_size=4",
            "tracking.enabled=false", f"cache.dir={tmp}/cache", f"hydra.run.dir={tmp}/run"]


def test_no_debug_lines_or_progress_bars_off_a_tty(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", *_workspace(tmp_path), timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, res.stderr
    assert "recall_at_5=" in res.stdout
    assert "[DEBUG]" not in out
    assert "Batches" not in out and "it/s]" not in out


def test_hydra_verbose_shows_third_party_debug(tmp_path: Path) -> None:
    res = run_cli("-m", "sweep", *_workspace(tmp_path), "hydra.verbose=true", timeout=600)
    assert res.returncode == 0, res.stderr
    assert "[bm25s][DEBUG]" in res.stdout + res.stderr
