"""Every name a benchmark imports from the package exists.

The benchmarks import most of what they use inside functions, after minutes of sweeps, so a
renamed helper (``_quiet_transformers`` became ``sweep.common.hf.quiet_transformers``) broke
`make bench` only at its last step and lost the sweeps before it. This reads each script's
``from sweep... import ...`` statements, wherever they sit, and resolves them."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from helpers import ROOT

SCRIPTS = sorted((ROOT / "benchmarks").glob("*.py"))


def sweep_imports(path: Path) -> list[tuple[str, str, int]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "sweep":
            out += [(node.module, alias.name, node.lineno) for alias in node.names]
    return out


def test_the_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    script = tmp_path / "b.py"
    script.write_text("def f():\n    from sweep.common.hf import quiet_transformers\n")
    assert sweep_imports(script) == [("sweep.common.hf", "quiet_transformers", 2)]


def provides(module: ModuleType, name: str) -> bool:
    """`from module import name` works: an attribute, or a submodule of a package."""
    if hasattr(module, name):
        return True
    return hasattr(module, "__path__") and \
        importlib.util.find_spec(f"{module.__name__}.{name}") is not None


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_each_name_a_benchmark_imports_from_sweep_exists(script: Path) -> None:
    missing = [f"{script.name}:{line}: {module}.{name}"
               for module, name, line in sweep_imports(script)
               if not provides(importlib.import_module(module), name)]
    assert not missing, missing
