"""The end-of-sweep table shows the axes this sweep swept, and only those (issue 30, found by
trying it): a job reused from another sweep brought in that sweep's index.ef_search, and a
2-axis sweep over a served and a local model showed every key the two embedding options set
differently (family, name, max_texts_per_request, ...) as "swept", and a `best:` line full of
them. Real CLI sweeps on the demo; the served model is a stdlib fake endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from embedding_fault_server import FaultServer
from helpers import DEMO, run_cli

pytestmark = pytest.mark.slow


def _header(stdout: str) -> list[str]:
    """The printed table's column names (rich draws its header row between ┃)."""
    line = next(ln for ln in stdout.splitlines() if ln.startswith("┃"))
    return [c.strip() for c in line.strip("┃").split("┃")]


def _common(tmp_path: Path) -> list[str]:
    return [f"corpus.path={DEMO / 'corpus'}", f"golden.path={DEMO / 'golden.jsonl'}",
            f"cache.dir={tmp_path}/cache", "sweep.audit=false"]


def test_a_served_and_a_local_model_are_one_embedding_column(tmp_path: Path) -> None:
    with FaultServer(dim=384) as srv:
        res = run_cli("-m", "sweep", "-m", "embedding=minilm,served_minilm",
                      "chunk.size=128,254", f"embedding.base_url={srv.base_url}",
                      "retrieval=dense", "tracking=off", *_common(tmp_path),
                      f"hydra.sweep.dir={tmp_path}/sweep", cwd=tmp_path, timeout=2400)
    assert res.returncode == 0, res.stderr[-3000:]
    header = _header(res.stdout)
    assert header[:3] == ["#", "chunk.size", "embedding"], header
    assert not [c for c in header if c.startswith("embedding.")], header
    best = next(ln for ln in res.stdout.splitlines() if ln.startswith("best: "))
    head = best.split(" (", 1)[0]
    assert head.split(", ")[0].startswith("best: chunk.size=")
    assert head.split(", ")[1] in ("embedding=minilm", "embedding=served_minilm"), best
    assert len(head.split(", ")) == 2, best
    table = (tmp_path / "sweep" / "comparison.csv").read_text(encoding="utf-8")
    assert table.splitlines()[0].split(",")[:2] == ["chunk.size", "embedding"]
    reports = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/report.json")]
    assert sorted(r["choices"]["embedding"] for r in reports) == \
        ["minilm", "minilm", "served_minilm", "served_minilm"]


def test_a_job_reused_from_another_sweep_brings_no_column(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    first = run_cli("-m", "sweep", "-m", "index=exact", "index.ef_search=8", "chunk.size=128",
                    "retrieval=dense", f"tracking.uri={uri}", *_common(tmp_path),
                    f"hydra.sweep.dir={tmp_path}/one", cwd=tmp_path, timeout=2400)
    assert first.returncode == 0, first.stderr[-3000:]
    # exact search reads no ef_search: chunk.size=128 is the first sweep's configuration,
    # reused with its report (ef_search=8 in it) while this sweep's other job has 64
    res = run_cli("-m", "sweep", "-m", "index=exact", "chunk.size=128,254", "retrieval=dense",
                  f"tracking.uri={uri}", *_common(tmp_path), f"hydra.sweep.dir={tmp_path}/two",
                  cwd=tmp_path, timeout=2400)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "already FINISHED" in res.stdout + res.stderr
    reports = [json.loads(p.read_text()) for p in (tmp_path / "two").glob("*/report.json")]
    assert sorted(r["config"]["index"]["ef_search"] for r in reports) == [8, 64]  # the cause
    header = _header(res.stdout)
    assert header[:2] == ["#", "chunk.size"] and "index.ef_search" not in header, header
    best = next(ln for ln in res.stdout.splitlines() if ln.startswith("best: "))
    assert best.split(" (", 1)[0] in ("best: chunk.size=128", "best: chunk.size=254"), best
