"""What a warm run pays for (issue 21), asserted on structure, never on time: a multirun
composes each job's configuration once, and the CI gate on a warm cache imports neither torch,
sentence-transformers, MLflow nor numba (nor, answering from its memo, the pipeline)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from helpers import run_cli

# Counts Hydra's compositions by their overrides, then runs the real entry point.
COUNT_COMPOSITIONS = textwrap.dedent("""
    import atexit, json, sys
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    calls = []
    original = ConfigLoaderImpl.load_configuration

    def counted(self, config_name, overrides, run_mode, from_shell=True,
                validate_sweep_overrides=True):
        calls.append(list(overrides))
        return original(self, config_name, overrides, run_mode, from_shell,
                        validate_sweep_overrides)

    ConfigLoaderImpl.load_configuration = counted
    atexit.register(lambda: print("COMPOSED " + json.dumps(calls)))
    sys.argv = ["sweep", *sys.argv[1:]]
    from sweep.__main__ import main
    main()
""")


def test_a_multirun_composes_one_job_of_a_value_sweep(tmp_path: Path) -> None:
    res = run_cli("-c", COUNT_COMPOSITIONS, "-m", "chunk.size=128,256", "retrieval=bm25",
                  "tracking.enabled=false", f"cache.dir={tmp_path}/cache",
                  f"hydra.sweep.dir={tmp_path}/sweep", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("COMPOSED "))
    calls = json.loads(line.removeprefix("COMPOSED "))
    # Hydra's sweeper composes each job to check the batch, its launcher again to run it; here
    # the first job is composed once and the second, which differs only in a value, is made
    # from it (tests/unit/config/test_derive_job.py).
    assert sum("chunk.size=128" in c for c in calls) == 1, calls
    assert sum("chunk.size=256" in c for c in calls) == 0, calls
    reports = {json.loads(p.read_text())["config"]["chunk"]["size"]
               for p in (tmp_path / "sweep").glob("*/report.json")}
    assert reports == {128, 256}
    import yaml

    for job in (tmp_path / "sweep").glob("[0-9]*"):
        size = json.loads((job / "report.json").read_text())["config"]["chunk"]["size"]
        overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text())
        assert f"chunk.size={size}" in overrides
        assert yaml.safe_load((job / ".hydra" / "config.yaml").read_text())["chunk"]["size"] \
            == size


# Runs the real command, then names the heavy modules the process imported.
HEAVY_MODULES = textwrap.dedent("""
    import atexit, json, sys
    heavy = ("torch", "sentence_transformers", "transformers", "mlflow", "matplotlib",
             "pandas", "numba")
    atexit.register(lambda: print("IMPORTED " + json.dumps(
        sorted(m for m in heavy if m in sys.modules))))
    sys.argv = ["sweep", *sys.argv[1:]]
    from sweep.cli.main import main
    main()
""")


def test_the_gate_on_a_warm_cache_imports_no_model_and_no_mlflow(tmp_path: Path) -> None:
    gate = ["baseline", "check", f"cache.dir={tmp_path}/cache"]
    cold = run_cli("-c", HEAVY_MODULES, *gate, cwd=tmp_path)
    assert cold.returncode == 0, cold.stderr[-2000:]
    # Cold, the default configuration's dense retrieval has to load the model.
    assert "torch" in cold.stdout.splitlines()[-1]
    # --rerun: the configuration runs (the memo is not read), on the warm cache
    warm = run_cli("-c", HEAVY_MODULES, *gate, "--rerun", cwd=tmp_path)
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert warm.stdout.splitlines()[-1] == "IMPORTED []"
    # The same verdict and figures as the cold run.
    assert warm.stdout.splitlines()[:-1] == cold.stdout.splitlines()[:-1]
    # and from the memo (tests/cli/test_gate_memo.py): the same below its note
    memo = run_cli("-c", HEAVY_MODULES, *gate, cwd=tmp_path)
    lines = memo.stdout.splitlines()
    assert lines[0].startswith("note: reused the run of ") and lines[1:] == warm.stdout.splitlines()


def test_cache_info_and_clear_cover_token_starts_and_bm25(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers import DEMO
    from sweep.chunking.cache import get_starts_cache
    from sweep.chunking.chunkers import corpus_token_starts
    from sweep.chunking.tokenizers import load_chunk_tokenizer
    from sweep.data.corpus import load_corpus
    from sweep.retrieval.bm25 import BM25Index

    docs = load_corpus(DEMO / "corpus")
    corpus_token_starts(docs, load_chunk_tokenizer("minilm"), get_starts_cache(tmp_path))
    for n in (3, 4):
        BM25Index([d.text for d in docs][:n], backend="bm25s", cache_dir=tmp_path)
    from sweep.embedding.backends import ensure_export

    def exporter(source: str, backend: str, precision: str, into: Path) -> str:
        (into / "model.onnx").write_bytes(b"x" * 2_000_000)
        return "model.onnx"

    ensure_export(str(DEMO / "corpus"), "onnx", "int8", tmp_path / "exports", exporter)
    from sweep.common import files
    from sweep.embedding.models import resolve_model_path

    # as a new process: an earlier test's digest in memory would spare the disk memo
    monkeypatch.setattr(files, "_FILE_DIGESTS", {})
    files.folder_signature(resolve_model_path("minilm"), tmp_path / files.DIGESTS_FOLDER)
    info = run_cli("-m", "sweep.cli", "cache", "info", f"cache.dir={tmp_path}")
    assert info.returncode == 0, info.stderr
    assert f"token starts of {len(docs)} documents" in info.stdout
    assert "2 BM25 indexes" in info.stdout
    assert "1 exported model (embedding.backend/precision), 2.0 MB" in info.stdout
    assert "1 model file digest (" in info.stdout and "0 vector packs" in info.stdout
    cleared = run_cli("-m", "sweep.cli", "cache", "clear", f"cache.dir={tmp_path}")
    assert f"removed the token starts of {len(docs)} documents" in cleared.stdout
    assert "removed 2 BM25 indexes" in cleared.stdout
    assert "removed 1 exported model from" in cleared.stdout
    assert "removed 1 model file digest from" in cleared.stdout
    again = run_cli("-m", "sweep.cli", "cache", "info", f"cache.dir={tmp_path}")
    assert "token starts of 0 documents" in again.stdout and "0 BM25 indexes" in again.stdout
    assert "0 exported models" in again.stdout and "0 model file digests" in again.stdout


# Runs the real sweep; at its end says whether this process imported MLflow.
SWEEP_PROCESS = textwrap.dedent("""
    import atexit, gc, json, os, sys
    atexit.register(lambda: print("SWEEP " + json.dumps(
        {"pid": os.getpid(), "mlflow": sorted(m for m in sys.modules
                                              if m.split(".")[0] == "mlflow")[:3],
         "matplotlib": "matplotlib" in sys.modules,
         "gc": list(gc.get_threshold())})))
    sys.argv = ["sweep", *sys.argv[1:]]
    from sweep.__main__ import main
    main()
""")


def test_a_sweep_leaves_mlflow_to_its_worker_process(tmp_path: Path) -> None:
    """MLflow's import and the store's opening (and the closing plot's matplotlib) overlap the
    sweep's own work in a worker process; the runs still name the sweep's process as their writer (stale-run detection asks
    whether that one is alive). ``CHUNK_SWEEP_TRACKING_INPROC=1`` does it all in-process."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["-c", SWEEP_PROCESS, "-m", "chunk.size=128,256", "retrieval=bm25",
            "retrieval.diagnose=false", "sweep.force=true", f"tracking.uri={uri}",
            f"cache.dir={tmp_path}/cache"]
    seen = {}
    for mode, env in (("worker", {}), ("inproc", {"CHUNK_SWEEP_TRACKING_INPROC": "1"})):
        res = run_cli(*args, f"hydra.sweep.dir={tmp_path}/{mode}", cwd=tmp_path, env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        line = next(ln for ln in res.stdout.splitlines() if ln.startswith("SWEEP "))
        seen[mode] = json.loads(line.removeprefix("SWEEP "))
    assert seen["worker"]["mlflow"] == []
    # the closing plot is drawn by the worker too; without it, here
    assert seen["worker"]["matplotlib"] is False and seen["inproc"]["matplotlib"] is True
    for mode in ("worker", "inproc"):
        png = tmp_path / mode / "comparison.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", mode
    # and collects garbage cycles less often than CPython's default (700, 10, 10)
    from sweep.common.memory import SWEEP_GC_THRESHOLDS

    assert seen["worker"]["gc"] == list(SWEEP_GC_THRESHOLDS) != [700, 10, 10]
    assert seen["inproc"]["mlflow"] != []  # the check sees an import when there is one

    from helpers import mlflow_runs

    _, runs = mlflow_runs(uri)
    for mode in ("worker", "inproc"):
        pid = str(seen[mode]["pid"])
        mine = [r for r in runs if r.data.tags.get("chunk_sweep.pid") == pid]
        parents = [r for r in mine if r.data.tags["chunk_sweep.role"] == "sweep"]
        children = [r for r in mine if r.data.tags["chunk_sweep.role"] == "config"]
        assert len(parents) == 1 and len(children) == 2, (mode, len(mine))
        assert {r.info.status for r in mine} == {"FINISHED"}
        assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
        assert sorted(r.data.params["chunk.size"] for r in children) == ["128", "256"]


def test_a_sweeps_end_reads_its_jobs_scores_without_pandas(tmp_path: Path) -> None:
    """The statistics at a sweep's end take the per-question scores its jobs wrote in this
    process from what they remembered (sweep.outputs.written), not from the files through
    pandas, which nothing else of such a sweep imports; the verdicts are those the files give."""
    args = ["-c", HEAVY_MODULES.replace("sweep.cli.main", "sweep.__main__"), "-m",
            "chunk.size=128,256", "retrieval=bm25", "retrieval.diagnose=false",
            "sweep.audit=false", "tracking.enabled=false", f"cache.dir={tmp_path}/cache",
            f"hydra.sweep.dir={tmp_path}/sweep"]
    res = run_cli(*args, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    # (matplotlib draws the plots here: no MLflow worker without tracking)
    assert res.stdout.splitlines()[-1] == 'IMPORTED ["matplotlib"]'
    assert "verdicts: paired bootstrap" in res.stdout
    table = (tmp_path / "sweep" / "comparison.csv").read_text()
    # the same table from the files (pandas), in a process that remembers nothing
    from sweep.application.sweep import SweepSpec, finish_sweep
    from sweep.outputs import report as rp
    from sweep.outputs import written

    written.forget()
    again = tmp_path / "again"
    import shutil

    shutil.copytree(tmp_path / "sweep", again)
    outcome = finish_sweep(SweepSpec(again), rp.read_reports(again))
    assert outcome.decision is not None
    assert (again / "comparison.csv").read_text() == table.replace(
        str(tmp_path / "sweep"), str(again))
    assert all(line in res.stdout for line in outcome.lines)
