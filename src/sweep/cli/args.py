"""Options several commands share."""

from __future__ import annotations

import argparse


def selection_args(parser: argparse.ArgumentParser) -> None:
    """Which sweep of which MLflow store (compare, export, rerun)."""
    parser.add_argument("--experiment", help="MLflow experiment (default: the one used last)")
    parser.add_argument("--sweep", default="latest",
                        help="latest (default) or the parent run id of a sweep")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store (default: sqlite:///<cwd>/mlflow.db)")
