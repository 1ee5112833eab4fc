"""`sweep baseline check` answers from its memo while every input is unchanged, and runs again
when one changes (sweep.decide.memo). BM25 on a copy of the demo: no model to load."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

from helpers import DEMO, run_cli

# Runs the real command; at its end names the pipeline's modules this process imported.
IMPORTS = textwrap.dedent("""
    import atexit, json, sys
    watched = ("numpy", "hydra", "omegaconf", "bm25s", "sweep.pipeline", "sweep.config.schema")
    atexit.register(lambda: print("IMPORTED " + json.dumps(
        sorted(m for m in watched if m in sys.modules))))
    sys.argv = ["sweep", *sys.argv[1:]]
    from sweep.cli.main import main
    main()
""")


def _check(tmp_path: Path, *extra: str) -> tuple[int, list[str], list[str]]:
    res = run_cli("-c", IMPORTS, "baseline", "check", "--baseline", str(tmp_path / "b.json"),
                  *extra, cwd=tmp_path, env={"CHUNK_SWEEP_CACHE_DIR": str(tmp_path / "cache")})
    lines = res.stdout.splitlines()
    assert lines and lines[-1].startswith("IMPORTED "), res.stderr[-2000:]
    return res.returncode, lines[:-1], json.loads(lines[-1].removeprefix("IMPORTED "))


def test_the_gate_reuses_a_run_until_an_input_changes(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO / "corpus", corpus)
    env = {"CHUNK_SWEEP_CACHE_DIR": str(tmp_path / "cache")}
    made = run_cli("-m", "sweep.cli", "baseline", "update", "--baseline", str(tmp_path / "b.json"),
                   "retrieval=bm25", f"corpus.path={corpus}", cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    assert len(list((tmp_path / "cache" / "gate").glob("*.json"))) == 1  # update wrote the memo

    code, out, imported = _check(tmp_path)
    assert code == 0 and out[0].startswith("note: reused the run of "), out
    assert imported == []  # the answer came from the memo: no pipeline, no numpy, no Hydra
    # --rerun runs it (on the warm cache): the same verdict and figures, without the note
    code_r, out_r, imported_r = _check(tmp_path, "--rerun")
    assert code_r == 0 and out_r == out[1:]
    assert "numpy" in imported_r and "sweep.pipeline" in imported_r

    # One more document: the corpus's digest changes, so the gate runs again, then replaces
    # the memo (one per key: the inputs are checked, not keyed) with one the next check reads.
    extra = corpus / "zz-new.md"
    extra.write_text("# A new page\n\nNothing any question asks about.\n", encoding="utf-8")
    code2, out2, imported2 = _check(tmp_path)
    assert not out2[0].startswith("note: reused"), out2
    assert "sweep.pipeline" in imported2
    code3, out3, imported3 = _check(tmp_path)
    assert out3[0].startswith("note: reused") and imported3 == [] and out3[1:] == out2
    assert code3 == code2
    assert len(list((tmp_path / "cache" / "gate").glob("*.json"))) == 1

    # --json says where the numbers came from
    res = run_cli("-m", "sweep.cli", "baseline", "check", "--baseline", str(tmp_path / "b.json"),
                  "--json", cwd=tmp_path, env=env)
    doc = json.loads(res.stdout)
    assert doc["ok"] is True and doc["reused"].startswith("reused the run of ")

    # `sweep cache clear` removes the memos (so the next check runs)
    cleared = run_cli("-m", "sweep.cli", "cache", "clear", cwd=tmp_path, env=env)
    assert "removed 1 gate memo from" in cleared.stdout, cleared.stdout
    assert list((tmp_path / "cache" / "gate").glob("*.json")) == []


def test_a_failing_gate_fails_from_its_memo_too(tmp_path: Path) -> None:
    """The memo holds the run, not the verdict: a baseline raised after it was written fails
    the check that reuses it."""
    env = {"CHUNK_SWEEP_CACHE_DIR": str(tmp_path / "cache")}
    made = run_cli("-m", "sweep.cli", "baseline", "update", "--baseline", str(tmp_path / "b.json"),
                   "retrieval=bm25", cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    doc = json.loads((tmp_path / "b.json").read_text())
    doc["metrics"]["mrr"] = min(1.0, doc["metrics"]["mrr"] + 0.2)
    (tmp_path / "b.json").write_text(json.dumps(doc))
    code, out, imported = _check(tmp_path)
    assert code == 1 and out[0].startswith("note: reused") and imported == []
    assert any(line.startswith("mrr ") and "FAIL" in line for line in out), out
