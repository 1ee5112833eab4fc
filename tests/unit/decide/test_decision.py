"""What a finished sweep can decide, from its folder: corrected verdicts, the power line, axis
effects and fronts (decide.decision), and the end-of-sweep summary that prints them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from sweep.decide import decision
from sweep.decide.power import power_summary
from sweep.outputs import report as rp

N = 60


def _job(folder: Path, boundary: str, size: int, scores: np.ndarray, tokens: float,
         write_pq: bool = True) -> dict:
    folder.mkdir(parents=True)
    value = float(scores.mean())
    rep = {"status": "FINISHED", "config_hash": f"{boundary}{size}",
           "config": {"chunk": {"boundary": boundary, "size": size}, "eval": {"prompt_k": 5}},
           "headline": {"metric": "recall_at_5", "value": value},
           "metrics": {"recall_at_5": value, "context_tokens_at_5": tokens,
                       "latency_end_to_end_p95_ms": 5.0}}
    (folder / "report.json").write_text(json.dumps(rep))
    if write_pq:
        with (folder / "per_question.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["qid", "question", "status", "recall_at_5"])
            for i, s in enumerate(scores):
                w.writerow([f"q{i:02d}", f"question {i}", "scored", s])
    return rep


def make_sweep(root: Path, *, drop_pq: str | None = None) -> dict[str, np.ndarray]:
    """A 2 x 2 grid: heading finds 12 more questions than fixed; size changes two."""
    rng = np.random.default_rng(0)
    base = (rng.random(N) < 0.5).astype(float)
    zeros = np.flatnonzero(base == 0)
    heading = base.copy()
    heading[zeros[:12]] = 1.0
    grid = {("fixed", 128): base, ("heading", 128): heading}
    fixed256 = base.copy()
    fixed256[zeros[-1]] = 1.0
    heading256 = heading.copy()
    heading256[zeros[12]] = 1.0
    grid[("fixed", 256)], grid[("heading", 256)] = fixed256, heading256
    for n, ((b, s), v) in enumerate(grid.items()):
        _job(root / str(n), b, s, v, tokens=float(s), write_pq=f"{b}{s}" != drop_pq)
    return {f"{b}{s}": v for (b, s), v in grid.items()}


def test_finished_sweep_from_folders(tmp_path):
    grid = make_sweep(tmp_path)
    found = rp.read_reports(tmp_path)
    axes, rows = rp.comparison_rows([r for _, r in found], folders=[f for f, _ in found])
    out = decision.finished_sweep(axes, rows, {str(f): r for f, r in found})
    assert out is not None and out["metric"] == "recall_at_5"
    # best heading/256 (one more than heading/128), then heading/128, fixed/256, fixed/128
    assert [(r["chunk.boundary"], r["chunk.size"]) for r in rows] == [
        ("heading", 256), ("heading", 128), ("fixed", 256), ("fixed", 128)]
    assert rows[0]["verdict"] == "best"
    assert rows[1]["verdict"].startswith("tied (p_holm=")
    assert rows[2]["verdict"].startswith("worse (p_holm=")
    # The power line is the best against the runner-up: one question differs of 60.
    expected = power_summary(grid["heading256"] - grid["heading128"], detect=0.02)
    assert out["power"]["mde"] == pytest.approx(expected["mde"])
    assert out["power"]["pair_text"] == ("best (boundary=heading, size=256) vs runner-up "
                                         "(boundary=heading, size=128)")
    effects = {e["axis"]: e for e in out["axes"]}
    fixed = next(v for v in effects["chunk.boundary"]["values"] if v["value"] == "fixed")
    assert fixed["diff"] == pytest.approx(-12 / 60) and not fixed["within_noise"]
    assert effects["chunk.boundary"]["best_in_cells"] == 2
    small = next(v for v in effects["chunk.size"]["values"] if v["value"] == 128)
    assert small["diff"] == pytest.approx(-1 / 60) and small["within_noise"]
    front = next(f for f in out["fronts"] if f["cost"] == "context_tokens_at_5")
    assert [out["rows"][p["index"]]["chunk.size"] for p in front["points"]] == [128, 256]
    assert any(line.startswith("power, from best") for line in out["lines"])


def test_a_job_without_per_question_scores_is_na(tmp_path):
    make_sweep(tmp_path, drop_pq="fixed128")
    found = rp.read_reports(tmp_path)
    axes, rows = rp.comparison_rows([r for _, r in found], folders=[f for f, _ in found])
    out = decision.finished_sweep(axes, rows, {str(f): r for f, r in found})
    assert rows[3]["verdict"] == "n/a" and out["verdicts"][2] is None
    assert rows[2]["verdict"].startswith("worse")
    one = [r for r in rows[:1]]
    assert decision.finished_sweep(axes, one, {}) is None


def test_power_line_of_two_identical_configurations():
    same = {"q1": 1.0, "q2": 0.0, "q3": 1.0}
    pw = decision.power_of([same, dict(same)], 0.02, ["a", "b"])
    assert pw["line"] == ("power, from best (a) vs runner-up (b): not estimated (the two "
                          "configurations score every question the same: no paired variation "
                          "to size the set from)")
    # The runner-up without scores: the next configuration, and the line says so.
    pw = decision.power_of([same, None, {"q1": 0.0, "q2": 0.0, "q3": 1.0}], None, ["a", "b", "c"])
    assert pw["pair"] == [0, 2] and "#3 (the runner-up has no per-question scores) (c)" in pw["line"]
    assert decision.power_of([None, same], 0.02, ["a", "b"]) is None
    # A runner-up that scores every question as the best does (on COVID-QA, without headings,
    # heading and recursive cut the same chunks) is the same configuration in effect: the
    # line is sized from the next one that differs, and names the skipped.
    other = {"q1": 0.0, "q2": 0.0, "q3": 1.0}
    pw = decision.power_of([same, dict(same), None, other], 0.02, ["a", "b", "c", "d"])
    assert pw["pair"] == [0, 3] and pw["n_discordant"] == 1 and pw["mde"] is not None
    assert "vs #4 (#2 score every question as the best does) (d):" in pw["line"]


def test_end_of_sweep_summary_prints_and_writes_it(tmp_path, capsys):
    from omegaconf import OmegaConf

    from sweep.cli.hydra_job import MlflowSweepCallback

    make_sweep(tmp_path / "multirun")
    cfg = OmegaConf.create({"hydra": {"sweep": {"dir": str(tmp_path / "multirun")}}})
    MlflowSweepCallback().on_multirun_end(cfg)
    out = capsys.readouterr().out
    assert "Holm-corrected over all 6 pairs of the 4 configurations" in out
    assert "power, from best (boundary=heading, size=256) vs runner-up" in out
    assert "this set (60 questions) can tell apart differences of" in out
    assert "  chunk.boundary: best heading (recall_at_5 " in out
    md = (tmp_path / "multirun" / "comparison.md").read_text()
    assert md.splitlines()[0].startswith("| rank | chunk.boundary | chunk.size | headline | "
                                         "verdict |")
    assert "| best |" in md and "worse (p_holm=" in md
    assert (tmp_path / "multirun" / "axes.png").stat().st_size > 1000
    with (tmp_path / "multirun" / "comparison.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert [r["verdict"].split(" ")[0] for r in table] == ["best", "tied", "worse", "worse"]
