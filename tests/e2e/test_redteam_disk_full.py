"""A full disk under the sweep or run folder (issue 14, item 5): a job that cannot write is a
FAILED child run with the reason; when Hydra itself cannot write (``.hydra/``, a job folder)
the sweep stops with one line and the parent run is closed FAILED, never left RUNNING (or
removed, when no configuration had run).

The full filesystem is real: a tmpfs with a few inodes, mounted in a private mount namespace
(``unshare -rm``) that ends with the process, so the kernel answers ENOSPC.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow


def _inputs(tmp_path: Path) -> list[str]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nReturns are accepted within 30 days.\n",
                                 encoding="utf-8")
    (tmp_path / "golden.jsonl").write_text(
        json.dumps({"qid": "q1", "question": "how long for returns",
                    "evidence": [{"path": "a.md", "quote": "within 30 days"}]}) + "\n",
        encoding="utf-8")
    return [f"corpus.path={corpus}", f"golden.path={tmp_path / 'golden.jsonl'}",
            "corpus.name=t", "golden.name=t", "retrieval=bm25", "retrieval.diagnose=false",
            f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}", f"cache.dir={tmp_path}/cache"]


def _on_full_fs(mount: Path, inodes: int, args: list[str]) -> subprocess.CompletedProcess[str]:
    """``python -m sweep ARGS`` with ``mount`` a tmpfs that holds ``inodes`` inodes (its root
    counts as one): the next file or folder created there fails with ENOSPC."""
    mount.mkdir()
    res = subprocess.run(
        ["unshare", "-rm", "sh", "-c",
         f'mount -t tmpfs -o size=4m,nr_inodes={inodes} tmpfs "$0" || exit 99; exec "$@"',
         str(mount), sys.executable, "-m", "sweep", *args],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
        timeout=600)
    if res.returncode == 99 or res.stderr.startswith("unshare:"):
        pytest.fail(f"this test needs `unshare -rm` and a tmpfs mount: {res.stderr[:300]}",
                    pytrace=False)
    return res


def _runs(tmp_path: Path) -> tuple[list, list]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("chunk-sweep-t").experiment_id])
    return ([r for r in runs if r.data.tags.get("chunk_sweep.role") == "sweep"],
            [r for r in runs if r.data.tags.get("chunk_sweep.role") == "config"])


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]
    return stderr.strip().splitlines()[-1]


def test_a_job_that_cannot_write_is_a_failed_run_and_the_sweep_stops_in_a_line(
        tmp_path: Path) -> None:
    full = tmp_path / "full"
    # 8 inodes: the root, multirun.yaml, 0/, 0/__main__.log, 0/.hydra/ and its 3 files; job 0
    # runs, its report cannot be written; Hydra cannot create job 1's folder.
    res = _on_full_fs(full, 8, ["-m", "chunk.size=128,256", *_inputs(tmp_path),
                                f"hydra.sweep.dir={full}"])
    assert res.returncode == 1
    last = _one_line(res.stderr)
    assert last.startswith(f"error: cannot write {full}/1: No space left on device")
    parents, children = _runs(tmp_path)
    assert len(parents) == 1 and parents[0].info.status == "FAILED"
    assert parents[0].info.run_id in last and "closed FAILED" in last
    # its one configuration failed: named so, and nothing claims to resume (issue 45)
    assert "nothing to resume" in last and "resumes the rest" not in res.stderr
    assert parents[0].info.run_name.startswith("FAILED, nothing finished: sweep ")
    assert parents[0].data.tags["error"].startswith(f"cannot write {full}/1: No space left")
    assert len(children) == 1
    child = children[0]
    assert child.info.status == "FAILED"
    assert child.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
    assert child.data.tags["error"].startswith(f"cannot write {full}/0: No space left on device")
    assert child.data.params["chunk.size"] == "128"


def test_hydra_cannot_save_the_job_config_parent_closed_failed(tmp_path: Path) -> None:
    full = tmp_path / "full"
    # 5 inodes: the root, multirun.yaml, 0/, 0/__main__.log, 0/.hydra/: Hydra's _save_config
    # of config.yaml fails before any job runs.
    res = _on_full_fs(full, 5, ["-m", "chunk.size=128,256", *_inputs(tmp_path),
                                f"hydra.sweep.dir={full}"])
    assert res.returncode == 1
    last = _one_line(res.stderr)
    assert last.startswith(f"error: cannot write {full}/0/.hydra/config.yaml: No space left")
    # nothing ran: no parent run is left, and nothing claims to resume (issue 45)
    assert "removed from MLflow" in last and "resumes" not in res.stderr
    parents, children = _runs(tmp_path)
    assert parents == [] and children == []


def test_a_single_run_that_cannot_write_is_a_failed_run(tmp_path: Path) -> None:
    full = tmp_path / "full"
    # 6 inodes: the root, __main__.log, .hydra/ and its 3 files; the report cannot be written.
    res = _on_full_fs(full, 6, [*_inputs(tmp_path), f"hydra.run.dir={full}"])
    assert res.returncode == 1
    assert _one_line(res.stderr) == (
        f"error: cannot write {full}: No space left on device (free space on that "
        "filesystem, or set hydra.sweep.dir / hydra.run.dir elsewhere)")
    parents, children = _runs(tmp_path)
    assert parents == [] and [c.info.status for c in children] == ["FAILED"]
    assert children[0].data.tags["error"].startswith(f"cannot write {full}: No space left")
