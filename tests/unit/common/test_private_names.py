"""No module of the package imports another module's private names.

import-linter sees modules, not names, and ruff's PLC2701 exempts imports inside one's own
package, so this walks the source: an ``_name`` imported across modules is an interface
nobody declared (it was how rerank reached embedding's transformers switch, and label.checks
validate's number pattern).
"""

from __future__ import annotations

import ast
from pathlib import Path

import sweep

PACKAGE = Path(sweep.__file__).parent


def private_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            found += [f"{node.module}.{a.name}" for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if any(p.startswith("_") and not p.startswith("__")
                             for p in a.name.split("."))]
    return found


def test_the_check_catches_a_private_name() -> None:
    assert private_imports("from sweep.data.validate import _NUMBER, NumberIndex\n") == [
        "sweep.data.validate._NUMBER"]
    assert private_imports("import sweep._private.mod\n") == ["sweep._private.mod"]
    assert private_imports("from __future__ import annotations\nfrom x import __version__\n"
                           "import sweep.__main__\n") == []


def test_no_module_imports_a_private_name() -> None:
    offenders = {str(f.relative_to(PACKAGE)): names for f in sorted(PACKAGE.rglob("*.py"))
                 if (names := private_imports(f.read_text(encoding="utf-8")))}
    assert offenders == {}
