"""Where the package and the project it runs from live on disk."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
# The clone's root (conf/, experiments/, evals/) for an editable install from src/.
PROJECT_ROOT = PACKAGE_DIR.parent.parent
