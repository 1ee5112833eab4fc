"""`sweep label`: a local page to label golden questions quickly and safely.

Type a question, compare what BM25 and dense search retrieve, read documents in full,
select the evidence with the mouse and save one line to the golden file. See
docs/guide/labelling.md and server.py for the security model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


def cmd_label(argv: Sequence[str]) -> int:
    # Imported when used: the CLI stays quick to start for the other commands.
    from sweep.label.server import cmd_label as run

    return run(argv)
