"""`sweep rerun --top N embedding.precision=fp32` after an int8 sweep: what the re-run prints
about the configurations it moved across precisions (hand-made rows, no sweep)."""

from __future__ import annotations

import pytest

from sweep.cli.rerun import _report_precision_change


def _row(backend: str | None, precision: str | None, value: float) -> dict:
    params = {"chunk.size": "128"}
    if backend:
        params |= {"embedding.backend": backend, "embedding.precision": precision}
    return {"params": params, "recall_at_5": value}


def test_the_move_of_the_metric_across_precisions_is_printed(
        capsys: pytest.CaptureFixture[str]) -> None:
    chosen = [_row("onnx", "int8", 0.80), _row("onnx", "int8", 0.70), _row("onnx", "int8", 0.6)]
    new = {"a": _row("onnx", "fp32", 0.82), "b": _row("onnx", "fp32", 0.69)}
    _report_precision_change(chosen, ["a", "b", "c"], new, "recall_at_5")
    out = capsys.readouterr().out
    # (0.02 - 0.01) / 2 = +0.005; c was not re-run
    assert out == ("embedding onnx/int8 -> onnx/fp32: recall_at_5 moved by +0.0050 on average "
                   "over 2 configurations (largest +0.0200; positive: the re-run scored "
                   "higher)\n")


def test_nothing_is_printed_when_the_precision_did_not_change(
        capsys: pytest.CaptureFixture[str]) -> None:
    # a run from before the axis ran torch fp32, like an explicit one
    _report_precision_change([_row(None, None, 0.8)], ["a"],
                             {"a": _row("torch", "fp32", 0.7)}, "recall_at_5")
    assert capsys.readouterr().out == ""
