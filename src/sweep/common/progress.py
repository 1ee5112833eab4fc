"""Progress bars only where someone watches them: a terminal, not a CI log or a Slurm file,
where each redraw becomes another line."""

from __future__ import annotations

import os
import sys


def show_progress(requested: bool = True) -> bool:
    """``requested`` and stderr is a terminal; ``CHUNK_SWEEP_PROGRESS=0|1`` forces it."""
    if not requested:
        return False
    forced = os.environ.get("CHUNK_SWEEP_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())
