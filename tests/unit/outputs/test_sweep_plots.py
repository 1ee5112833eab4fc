"""The sweep's closing plots as `sweep.outputs.sweep_run` asks for them (here without an MLflow
worker: drawn in this process): comparison.png from the cells it sends is the figure the whole
rows give, byte for byte."""

from __future__ import annotations

from pathlib import Path

from sweep.outputs import report as rp
from sweep.outputs import tracking_worker
from sweep.outputs.sweep_run import begin_axes_plot, begin_comparison_plot, plotted


def _rows() -> list[dict]:
    rows = []
    for boundary in ("heading", "recursive"):
        for size, value in ((128, 0.5), (256, 0.625), (512, 0.25)):
            rows.append({"chunk.boundary": boundary, "chunk.size": size, "status": "FINISHED",
                         "headline_metric": "recall_at_5",
                         "headline": value + (0.125 if boundary == "heading" else 0.0),
                         "verdict": None, "misses": "below_k 3", "sources": {"a": 1},
                         "folder": f"/nowhere/{boundary}{size}"})
    rows.append({"chunk.boundary": "heading", "chunk.size": 1024, "status": "FAILED",
                 "headline_metric": None, "headline": None, "error": "broke"})
    return rows


def test_the_comparison_plot_from_the_cells_it_sends_is_the_whole_rows_figure(
        tmp_path: Path) -> None:
    assert tracking_worker.worker_pid() is None
    axes = ["chunk.boundary", "chunk.size"]
    whole = rp.plot_sweep(axes, _rows(), tmp_path / "whole" / "comparison.png")
    drawings = [begin_comparison_plot(axes, _rows(), tmp_path)]
    assert plotted(drawings) == [tmp_path / "comparison.png"]
    assert whole is not None
    assert (tmp_path / "comparison.png").read_bytes() == whole.read_bytes()


def test_the_axes_plot_is_drawn_where_asked(tmp_path: Path) -> None:
    data = {"metric": "recall_at_5", "fronts": [],
            "axes": [{"axis": "chunk.size", "best": "256",
                      "values": [{"value": "256", "mean": 0.6, "diff": 0.0, "lo": None,
                                  "hi": None, "within_noise": None},
                                 {"value": "128", "mean": 0.5, "diff": -0.1, "lo": -0.2,
                                  "hi": 0.0, "within_noise": True}]}]}
    assert plotted([begin_axes_plot(data, tmp_path)]) == [tmp_path / "axes.png"]
    assert (tmp_path / "axes.png").read_bytes() == rp.plot_axes(
        data, tmp_path / "again.png").read_bytes()  # type: ignore[union-attr]
