"""Where the package and the project it runs from live on disk."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
# The clone's root (conf/, experiments/, evals/) for an editable install from src/.
PROJECT_ROOT = PACKAGE_DIR.parent.parent


def conf_path() -> Path:
    """Where the ``conf/`` folder should be (``$CHUNK_SWEEP_CONF_DIR`` overrides it), whether
    or not it is there (``sweep.config.schema.conf_dir`` checks)."""
    return Path(os.environ.get("CHUNK_SWEEP_CONF_DIR") or PROJECT_ROOT / "conf").resolve()
