"""The tutorials' quick commands run, as written, on the bundled demo.

A shell block that follows the comment ``<!-- quick -->`` on a page under docs/tutorials/ is a
quick one: its commands need no server and no shared data. Each is run in a fresh folder that
is the project root (so MLflow, the cache, Hydra's folders and any export land there, never in
the clone) and must exit 0; the test then checks what the page says the commands produce.
`tests/cli/test_docs_commands.py` checks that every documented command parses; this one runs
the quick ones.
"""

from __future__ import annotations

import csv
import re
import shlex
from pathlib import Path

import pytest

from helpers import ROOT, run_cli

TUTORIALS = ROOT / "docs" / "tutorials"
_QUICK = re.compile(r"<!-- quick -->\s*\n```(?:bash|sh)\n(.*?)```", re.S)


def _quick_blocks() -> list[tuple[str, list[str]]]:
    blocks = []
    for page in sorted(TUTORIALS.glob("*.md")):
        for match in _QUICK.finditer(page.read_text(encoding="utf-8")):
            lines = [ln.strip() for ln in match.group(1).splitlines()]
            blocks.append((page.name, [ln for ln in lines if ln and not ln.startswith("#")]))
    return blocks


BLOCKS = _quick_blocks()


def _argv(line: str) -> list[str]:
    """``sweep X ...`` -> ``-m sweep.cli X ...``; ``python -m sweep ...`` -> ``-m sweep ...``."""
    words = shlex.split(line, comments=True)
    if words[0] == "sweep":
        return ["-m", "sweep.cli", *words[1:]]
    assert words[:3] == ["python", "-m", "sweep"], f"not a sweep command: {line}"
    return ["-m", "sweep", *words[3:]]


def test_the_tutorials_have_quick_blocks() -> None:
    pages = {page for page, _ in BLOCKS}
    assert {"index.md", "served-model.md"} <= pages, pages
    assert all(lines for _, lines in BLOCKS)


@pytest.mark.parametrize(("page", "lines"), BLOCKS, ids=[p for p, _ in BLOCKS])
def test_a_quick_block_runs(page: str, lines: list[str], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    # an in-process test earlier in the session may have called mlflow.set_tracking_uri,
    # which exports MLFLOW_TRACKING_URI: the page's commands must see the user's default store
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    env = {"CHUNK_SWEEP_PROJECT_ROOT": str(tmp_path), "CHUNK_SWEEP_CACHE_DIR":
           str(tmp_path / "cache"), "PYTHONPATH": str(ROOT / "src")}
    outputs = []
    for line in lines:
        done = run_cli(*_argv(line), cwd=tmp_path, env=env)
        assert done.returncode == 0, f"{page}: `{line}` exited {done.returncode}:\n" \
                                     f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        outputs.append(done.stdout + done.stderr)
    text = "\n".join(outputs)
    if page == "index.md":
        # two configurations of the demo, ranked; `sweep compare` reads them back from MLflow
        tables = sorted(tmp_path.glob("multirun/*/*/comparison.csv"))
        assert len(tables) == 1, tables
        with tables[0].open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        assert sorted(r["chunk.size"] for r in rows) == ["128", "256"]
        assert all(0.0 <= float(r["recall_at_5"]) <= 1.0 for r in rows)
        assert "60 items checked against 34 documents; 0 errors" in text
        assert (tmp_path / "mlflow.db").is_file()
    if page == "served-model.md":
        # the estimate chunks the demo without a model or a server: nothing is cached yet
        assert re.search(r"2 configurations, \d+ texts not in the cache", text), text
