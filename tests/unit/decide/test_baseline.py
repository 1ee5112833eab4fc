"""The CI gate's logic: evals/baseline.json's shape and the comparison with hand-made numbers.

The gate itself with the real model (default config passes, a worse one fails) is slow:
tests/e2e/test_baseline_gate.py.
"""

from __future__ import annotations

import json

import pytest

from sweep.application import gate
from sweep.cli import baseline as baseline_cmd
from sweep.common.errors import SweepError
from sweep.decide import baseline as bl


def test_baseline_file_shape():
    data = json.loads(bl.BASELINE_PATH.read_text())
    assert set(bl.GATED) <= set(data["metrics"])
    assert data["n_questions"] >= data["n_scored"] > 0
    assert len(data["per_question"]) == data["n_questions"]
    assert data["config"]["chunk"]["size"] == 254  # the project's default configuration
    assert "/work/" not in json.dumps(data["config"])  # portable paths


# --- pure logic, hand-made numbers ---------------------------------------------------------

BASE = {"recall_at_5": 0.80, "mrr": 0.60, "evidence_recall_at_5": 0.70}


def test_tolerance_is_an_absolute_drop():
    got = {"recall_at_5": 0.75, "mrr": 0.549, "evidence_recall_at_5": 0.90}
    findings = {f.metric: f for f in bl.compare_metrics(got, BASE, list(BASE), 0.05)}
    assert findings["recall_at_5"].ok  # exactly at the tolerance: passes
    assert not findings["mrr"].ok and findings["mrr"].drop == pytest.approx(0.051)
    assert findings["evidence_recall_at_5"].ok  # improvements always pass
    assert all(f.ok for f in bl.compare_metrics(got, BASE, ["recall_at_5"], 0.05))
    assert not bl.compare_metrics(got, BASE, ["recall_at_5"], 0.0)[0].ok


def test_compare_metrics_errors():
    with pytest.raises(SweepError, match="not in the baseline"):
        bl.compare_metrics(BASE, BASE, ["ndcg_at_5"], 0.05)
    with pytest.raises(SweepError, match="was not computed"):
        bl.compare_metrics({}, BASE, ["mrr"], 0.05)
    with pytest.raises(SweepError, match="must be >= 0"):
        bl.compare_metrics(BASE, BASE, ["mrr"], -0.1)


def test_tolerance_warning_below_2_5_over_n():
    assert bl.tolerance_warning(0.05, 50) is None  # 2.5/50 = 0.05
    warning = bl.tolerance_warning(0.02, 50)
    assert warning and "2.5/n = 0.050" in warning and "n = 50" in warning
    assert bl.tolerance_warning(0.01, 0) is None


def test_refuses_to_lower_a_metric():
    new = {"recall_at_5": 0.80, "mrr": 0.59, "evidence_recall_at_5": 0.75}
    assert bl.lowered(BASE, new, list(BASE)) == [("mrr", 0.60, 0.59)]
    assert bl.lowered(BASE, BASE, list(BASE)) == []


def test_flips_found_to_not_found():
    before = {"q1": 1, "q2": 5, "q3": 6, "q4": None, "q5": 2, "gone": 1}
    after = {"q1": 1, "q2": 6, "q3": 2, "q4": None, "q5": None, "new": 1}
    lost, gained = bl.flipped(before, after, k=5)
    assert lost == ["q2", "q5"]
    assert gained == ["q3"]


def test_config_differences():
    base = {"chunk": {"size": 256, "boundary": "recursive"}, "eval": {"latency_sample": 100}}
    now = {"chunk": {"size": 32, "boundary": "recursive"}, "eval": {"latency_sample": 0}}
    assert bl.config_differences(base, now) == ["chunk.size=32 (baseline 256)"]


# --- the commands with a stubbed run (no model) ---------------------------------------------


def _fake_run(metrics, ranks):
    return {"metrics": {**metrics, "n_questions": len(ranks), "n_scored": len(ranks)},
            "n_questions": len(ranks), "n_scored": len(ranks), "prompt_k": 5,
            "config": {"chunk": {"size": 256}}, "config_hash": "h",
            "fingerprints": {"golden": "g"}, "per_question": ranks}


def test_update_then_check_with_stubbed_runs(tmp_path, monkeypatch, capsys):
    # A cache of its own: no memo of a real run of the default configuration (the session's
    # cache may hold one) answers for the stub.
    monkeypatch.setenv("CHUNK_SWEEP_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "baseline.json"
    ranks = {f"q{i}": 1 for i in range(40)}
    monkeypatch.setattr(gate, "evaluate_config", lambda overrides: _fake_run(BASE, ranks))
    assert baseline_cmd.cmd_baseline(["update", "--baseline", str(path)]) == 0
    assert json.loads(path.read_text())["metrics"] == BASE

    worse = {**BASE, "recall_at_5": 0.70}
    worse_ranks = {**ranks, "q3": 9, "q7": None}
    monkeypatch.setattr(gate, "evaluate_config", lambda overrides: _fake_run(worse, worse_ranks))
    capsys.readouterr()
    assert baseline_cmd.cmd_baseline(["check", "--baseline", str(path), "--tolerance", "0.05"]) == 1
    captured = capsys.readouterr()
    assert "recall_at_5" in captured.out and "FAIL (down 0.1000)" in captured.out
    assert "0.7000" in captured.out and "0.8000" in captured.out
    assert "not now: q3, q7" in captured.out
    assert "tolerance 0.05 is below 2.5/n" in captured.err  # 2.5/40 = 0.0625

    # The ratchet: update refuses to lower recall_at_5, names it, keeps the file.
    assert baseline_cmd.cmd_baseline(["update", "--baseline", str(path)]) == 1
    assert "refusing to lower recall_at_5" in capsys.readouterr().err
    assert json.loads(path.read_text())["metrics"]["recall_at_5"] == 0.80
    assert baseline_cmd.cmd_baseline(["update", "--baseline", str(path), "--allow-regression"]) == 0
    assert json.loads(path.read_text())["metrics"]["recall_at_5"] == 0.70


def test_check_without_baseline_is_one_line_error(tmp_path):
    with pytest.raises(SweepError, match="no baseline at"):
        baseline_cmd.cmd_baseline(["check", "--baseline", str(tmp_path / "none.json")])




def test_update_says_what_it_measures_and_gates_an_exported_winner(tmp_path, monkeypatch,
                                                                    capsys):
    """Issue 45: `update` measured the default configuration without saying so; the winner
    `sweep export` wrote is gated with --from-export (the override experiment=winners/NAME,
    which `check` composes again)."""
    from sweep.decide import export

    monkeypatch.setenv("CHUNK_SWEEP_CACHE_DIR", str(tmp_path / "cache"))
    winners = tmp_path / "experiments" / "winners"
    winners.mkdir(parents=True)
    monkeypatch.setattr(export, "WINNERS_DIR", winners)
    (winners / "heading-128.yaml").write_text(export.winner_yaml({"chunk": {"size": 128}},
                                                                 ["test"]))
    seen = []

    def run(overrides):
        seen.append(list(overrides))
        return _fake_run(BASE, {"q1": 1})

    monkeypatch.setattr(gate, "evaluate_config", run)
    path = tmp_path / "baseline.json"
    assert baseline_cmd.cmd_baseline(["update", "--baseline", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("measuring: the project's default configuration (no overrides)\n")
    assert baseline_cmd.cmd_baseline(["update", "--baseline", str(path), "--from-export",
                                      str(winners / "heading-128.yaml"),
                                      "eval.prompt_k=3"]) == 0
    out = capsys.readouterr().out
    assert seen[-1] == ["experiment=winners/heading-128", "eval.prompt_k=3"]
    assert out.startswith("measuring: the default configuration with "
                          "experiment=winners/heading-128 eval.prompt_k=3\n")
    assert "(config_hash h; the default configuration with experiment=winners/heading-128" in out
    assert json.loads(path.read_text())["overrides"] == seen[-1]
    capsys.readouterr()
    assert baseline_cmd.cmd_baseline(["check", "--baseline", str(path)]) == 0
    assert seen[-1] == ["experiment=winners/heading-128", "eval.prompt_k=3"]
    assert ("checked: the default configuration with experiment=winners/heading-128 "
            "eval.prompt_k=3") in capsys.readouterr().out

    elsewhere = tmp_path / "w.yaml"
    elsewhere.write_text((winners / "heading-128.yaml").read_text())
    with pytest.raises(SweepError, match=r"--from-export .*w.yaml: not under"):
        baseline_cmd.cmd_baseline(["update", "--baseline", str(path), "--from-export",
                                   str(elsewhere)])
    (winners / "plain.yaml").write_text("chunk:\n  size: 64\n")
    with pytest.raises(SweepError, match=r"plain.yaml:1: not an exported winner"):
        baseline_cmd.cmd_baseline(["update", "--baseline", str(path), "--from-export",
                                   str(winners / "plain.yaml")])
    with pytest.raises(SweepError, match="no such file"):
        baseline_cmd.cmd_baseline(["update", "--baseline", str(path), "--from-export",
                                   str(winners / "none.yaml")])
