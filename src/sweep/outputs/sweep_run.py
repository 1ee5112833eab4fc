"""A sweep's MLflow parent run and plots, as the sweep callback (`sweep.cli.hydra_sweep`) asks
the MLflow worker (`tracking_worker`) for them: sent, not waited for, so the jobs start while
the worker imports MLflow and matplotlib."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep.outputs import tracking, tracking_worker

log = logging.getLogger("sweep")


def begin_sweep_run(uri: str, experiment: str, sweep_dir: str, overrides: Sequence[str]
                    ) -> tuple[tracking_worker.Promise, tracking_worker.Promise]:
    """The promises of the parent run ((experiment_id, run_id)) and of the configuration runs
    closed as stale. Nothing needs the parent before the first job's run is logged
    (`sweep.cli.sweep_session.sweep_parent`)."""
    parent = tracking_worker.begin(
        tracking.start_parent, uri, experiment,
        run_name=f"sweep {Path(sweep_dir).parent.name} {Path(sweep_dir).name}",
        params={"overrides": " ".join(overrides)[:6000]},
        tags={"sweep_dir": str(Path(sweep_dir).resolve())},
    )
    # Sweeps of this experiment killed before their end (SIGKILL), and their configuration
    # runs: all at once here, instead of one configuration per job (a job of another
    # experiment, e.g. of a swept corpus.name, still asks for its own).
    tracking_worker.submit(tracking.close_stale, uri, experiment, "sweep",
                           on_error=lambda exc: log.warning("%s", exc))
    stale = tracking_worker.begin(tracking.close_stale, uri, experiment, "config")
    if tracking_worker.worker_pid() is not None:
        # matplotlib for the closing plots, while the first jobs run: the worker's own import
        # waits for half a second without a call, which a warm sweep's jobs no longer leave it,
        # and then the sweep's end waited for the import (~0.5 s)
        tracking_worker.submit(tracking.preload_plot, on_error=lambda exc: None)
    return parent, stale


def begin_comparison_plot(axes: Sequence[str], rows: Sequence[dict[str, Any]], sweep_dir: Path
                          ) -> tracking_worker.Promise:
    """comparison.png (the headline per configuration), drawn by the MLflow worker where there
    is one (it imported matplotlib while the jobs ran), else here. Begun as soon as the rows'
    order and headlines are final: the worker draws while this process computes the
    statistics. Only the cells the plot reads are sent (the rows carry their misses and
    sources too)."""
    keys = ("status", "headline", "headline_metric", *axes)
    cells = [{k: r[k] for k in keys if k in r} for r in rows]
    return tracking_worker.begin(tracking.plot_sweep, axes, cells, sweep_dir / "comparison.png")


def begin_axes_plot(axes_data: Any, sweep_dir: Path) -> tracking_worker.Promise:
    """axes.png (``axes_data``: `sweep.decide.decision.plot_data`), drawn as
    `begin_comparison_plot`."""
    return tracking_worker.begin(tracking.plot_axes, axes_data, sweep_dir / "axes.png")


def plotted(drawings: Sequence[tracking_worker.Promise]) -> list[Path]:
    """The files the drawings wrote (an OSError of the worker raised here)."""
    out = []
    for drawing in drawings:
        drawn = drawing.result()
        if drawn[0] == "oserror":
            raise OSError(*drawn[1:])
        if drawn[1] is not None:
            out.append(drawn[1])
    return out
