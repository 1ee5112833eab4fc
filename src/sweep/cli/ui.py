"""``sweep ui``: the MLflow UI on the store, and the link to the latest sweep's runs table.

    sweep ui [--port 5000] [--experiment NAME] [--tracking-uri URI]

MLflow's own landing page is its GenAI overview (traces); the printed link opens the runs
table of the latest sweep's experiment in model-training mode (`tracking.ui_link`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from sweep.common.errors import SweepError
from sweep.decide.table import default_uri
from sweep.outputs import tracking


def cmd_ui(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep ui", description="Open the MLflow UI.")
    parser.add_argument("--port", type=int, default=tracking.UI_PORT)
    parser.add_argument("--experiment", help="MLflow experiment (default: the latest sweep's)")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store (default: $MLFLOW_TRACKING_URI, else ./mlflow.db)")
    args = parser.parse_args(argv)
    uri = args.tracking_uri or default_uri()
    try:
        sweep = tracking.find_sweep(uri, args.experiment)
        link = tracking.ui_link(uri, sweep["experiment_id"], args.port)
        print(f"MLflow runs of the latest sweep ({sweep['experiment']}): {link}", flush=True)
    except SweepError as exc:
        print(f"no sweep to link to yet ({exc}); the UI: http://127.0.0.1:{args.port}",
              flush=True)
    if tracking.sqlite_path(uri) is None:
        return 0  # a tracking server is its own UI
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri,
               "--host", "127.0.0.1", "--port", str(args.port)]
    os.execv(sys.executable, command)
    return 0  # not reached
