"""The end of a sweep as data in and data out (issue 42): `finish_sweep` on job folders made
by hand, without Hydra or MLflow. The table, the verdicts, the power line, the parent run's
metrics and note, the totals and the exit line are read off the outcome; the expected values
are worked out from the scores written."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from sweep.application.sweep import SweepSpec, finish_sweep
from sweep.decide.power import power_summary
from sweep.outputs import report as rp

N = 20


def _job(folder: Path, size: int, found: list[int], *, status: str = "FINISHED",
         texts: int | None = None, node: str = "n1", needs: dict | None = None) -> None:
    """One configuration's folder: questions q00..q19, ``found`` the ones it finds at 5."""
    folder.mkdir(parents=True)
    scores = [1.0 if i in found else 0.0 for i in range(N)]
    value = sum(scores) / N
    rep: dict = {"status": status, "config_hash": f"size{size}",
                 "config": {"chunk": {"boundary": "recursive", "size": size},
                            "eval": {"prompt_k": 5}}}
    if status == "FINISHED":
        rep.update({"headline": {"metric": "recall_at_5", "value": value},
                    "metrics": {"recall_at_5": value, "context_tokens_at_5": float(size)}})
        with (folder / rp.PER_QUESTION).open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["qid", "question", "status", "recall_at_5"])
            for i, s in enumerate(scores):
                w.writerow([f"q{i:02d}", f"question {i}", "scored", s])
    else:
        rep["error"] = f"size {size} broke"
    if texts is not None:
        rep.update({"texts_encoded": texts, "node": node})
    if needs is not None:
        rep["by_needs"] = needs
    (folder / rp.REPORT).write_text(json.dumps(rep), encoding="utf-8")


def _grid(root: Path) -> None:
    # 128 finds 0..9 (0.5), 256 finds 0..11 (0.6), 512 finds 0..3 (0.2)
    _job(root / "0", 128, list(range(10)), texts=100, node="a")
    _job(root / "1", 256, list(range(12)), texts=40, node="b")
    _job(root / "2", 512, list(range(4)), texts=60, node="a",
         needs={"1": {"n": 3, "recall_at_5": 1.0}, "2": {"n": 1, "recall_at_5": 0.0}})


def test_the_outcome_holds_the_table_verdicts_power_and_parent_run(tmp_path: Path) -> None:
    _grid(tmp_path)
    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path))
    assert out.axes == ["chunk.size"]
    assert [r["chunk.size"] for r in out.rows] == [256, 128, 512]  # best headline first
    assert [r["headline"] for r in out.rows] == pytest.approx([0.6, 0.5, 0.2])
    assert out.rows[0]["verdict"] == "best"
    # 256 vs 512: 8 questions only 256 finds, none the other way: worse after correction
    assert out.rows[2]["verdict"].startswith("worse (p_holm=")
    assert out.decision is not None and out.decision["metric"] == "recall_at_5"
    # the power line is best vs runner-up: 2 discordant questions of 20, all one way
    diff = [1.0 if i in (10, 11) else 0.0 for i in range(N)]
    expected = power_summary(np.array(diff), detect=0.02)
    assert out.decision["power"]["mde"] == pytest.approx(expected["mde"])
    # written into the sweep folder, nothing else (no audit asked for)
    assert sorted(p.name for p in out.artifacts) == sorted(
        p.name for p in tmp_path.iterdir() if p.is_file())
    assert (tmp_path / "comparison.csv").is_file()
    # texts encoded: per node, summed; no plan, so no unique count
    assert out.encoded == {"per_node": {"a": 160, "b": 40}, "total": 200, "unique": None,
                           "shared": None}
    assert out.totals_lines == ["texts encoded: 200 in total (a 160, b 40)"]
    # only the 512 report splits by passages needed, and it is not the best
    assert out.best_needs is None
    assert out.lines == list(out.decision["lines"])
    parent = out.parent
    assert parent.status == "FINISHED"
    assert parent.metrics["n_configs"] == 3 and parent.metrics["n_failed"] == 0
    assert parent.metrics["best_recall_at_5"] == pytest.approx(0.6)
    assert parent.metrics["total_texts_encoded"] == 200
    assert parent.metrics["n_worse"] == sum(
        1 for r in out.rows if str(r.get("verdict", "")).startswith("worse"))
    assert parent.metrics["power_mde"] == pytest.approx(expected["mde"])
    assert parent.tags["best_config"] == "chunk.size=256"
    assert parent.tags["correction"] == out.decision["correction"]
    assert parent.note.startswith("**chunk-sweep**: 3 configurations, best recall_at_5 first")
    assert "| rank |" in parent.note
    assert out.error([]) is None


def test_a_failed_configuration_and_unlogged_runs_end_the_sweep_with_one_line(
        tmp_path: Path) -> None:
    _job(tmp_path / "0", 128, list(range(10)))
    _job(tmp_path / "1", 256, [], status="FAILED")
    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path))
    assert [r["status"] for r in out.rows] == ["FINISHED", "FAILED"]
    assert out.parent.status == "FAILED" and out.parent.metrics["n_failed"] == 1
    assert out.decision is None  # one finished configuration: no pair to compare
    assert out.error([]) == "1 of 2 configurations failed; first: size 256 broke"
    ok = tmp_path / "ok"
    _job(ok / "0", 128, [1])
    done = finish_sweep(SweepSpec(ok), rp.read_reports(ok))
    assert done.error(["x: store down"]) == (
        "1 of 1 configurations were not logged to MLflow (their reports are in the sweep "
        "folder); first: x: store down")


def test_a_sweep_without_reports_says_where_it_looked(tmp_path: Path) -> None:
    out = finish_sweep(SweepSpec(tmp_path), [])
    assert out.rows == [] and out.parent.metrics == {"n_configs": 0, "n_failed": 0}
    assert out.error([]) == (f"no job report under {tmp_path} (the jobs wrote elsewhere or "
                             "never ran; use an absolute hydra.sweep.dir on a shared "
                             "filesystem)")


def test_the_best_configuration_s_split_by_passages_needed_is_said(tmp_path: Path) -> None:
    needs = {"1": {"n": 3, "recall_at_5": 1.0}, "2": {"n": 2, "recall_at_5": 0.5}}
    _job(tmp_path / "0", 128, list(range(10)), needs=needs)
    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path))
    assert out.best_needs == ("recall_at_5 by passages needed: 1 1.000 (n=3) · 2 0.500 (n=2) "
                              "· 3+ - (n=0)")
    assert out.lines[0] == f"best configuration, {out.best_needs}"


def test_on_decided_gets_the_final_table_before_the_files_are_written(tmp_path: Path) -> None:
    """The Hydra callback begins the plots from ``on_decided``: the rows it gets are the
    table's, in order and with their verdicts, and nothing is written yet (the worker draws
    while the table and the audit are)."""
    _grid(tmp_path)
    seen: dict = {}

    def decided(axes: list, rows: list, decision: dict | None) -> None:
        seen.update(axes=list(axes), rows=[dict(r) for r in rows], decision=decision,
                    written=(tmp_path / "comparison.csv").exists())

    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path), on_decided=decided)
    assert seen["written"] is False and (tmp_path / "comparison.csv").is_file()
    assert seen["axes"] == out.axes and seen["rows"] == out.rows
    assert seen["rows"][0]["verdict"] == "best" and "verdict" in seen["rows"][1]
    assert seen["decision"] is out.decision and out.decision is not None


def test_on_ranked_gets_the_rows_in_their_final_order_before_the_statistics(
        tmp_path: Path) -> None:
    """The Hydra callback begins the headline plot from ``on_ranked``: the rows are those of the
    final table (order, headlines) but no verdict is set yet, it comes before ``on_decided``,
    once; and the job spec of the audit is asked for only after both."""
    _grid(tmp_path)
    calls: list = []

    def ranked(axes: list, rows: list) -> None:
        calls.append(("ranked", list(axes), [dict(r) for r in rows]))

    def decided(axes: list, rows: list, decision: dict | None) -> None:
        calls.append(("decided",))

    def audit_job() -> None:
        calls.append(("audit",))

    out = finish_sweep(SweepSpec(tmp_path, audit_job), rp.read_reports(tmp_path),
                       on_decided=decided, on_ranked=ranked)
    assert [c[0] for c in calls] == ["ranked", "decided", "audit"]
    _, axes, rows = calls[0]
    assert axes == out.axes
    assert [(r["chunk.size"], r["headline"]) for r in rows] == [
        (r["chunk.size"], r["headline"]) for r in out.rows] == [(256, 0.6), (128, 0.5),
                                                                (512, 0.2)]
    assert all(r.get("verdict") is None for r in rows)
    assert out.rows[0]["verdict"] == "best"


def test_on_ranked_is_called_once_without_statistics(tmp_path: Path) -> None:
    """One finished configuration: no statistics, the rows are final all the same."""
    _job(tmp_path / "0", 128, list(range(10)))
    _job(tmp_path / "1", 256, [], status="FAILED")
    seen: list = []
    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path),
                       on_ranked=lambda axes, rows: seen.append([r["status"] for r in rows]))
    assert out.decision is None and seen == [["FINISHED", "FAILED"]]
