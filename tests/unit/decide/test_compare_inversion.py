"""`sweep compare` says why a worse row ranks above a tied one (issue 45): on how many
questions each differs from the best. A real SQLite store and per_question.csv artifacts."""

from __future__ import annotations

import json

from sweep.cli.compare import cmd_compare
from sweep.outputs import tracking


def _log(uri: str, parent: str, tmp_path, size: int, scores: list[int]) -> str:
    config = {"chunk": {"size": size}, "eval": {"prompt_k": 5, "headline": "recall_at_5"}}
    folder = tmp_path / str(size)
    folder.mkdir()
    rows = ["qid,status,recall_at_5"] + [f"q{i:02d},scored,{s}" for i, s in enumerate(scores)]
    (folder / "per_question.csv").write_text("\n".join(rows) + "\n")
    value = sum(scores) / len(scores)
    report = {"status": "FINISHED", "config": config, "config_hash": f"h{size}",
              "headline": {"metric": "recall_at_5", "value": value},
              "metrics": {"recall_at_5": value, "context_tokens_at_5": float(size)}}
    (folder / "report.json").write_text(json.dumps(report))
    return tracking.log_job(uri, "exp", run_name=str(size), plain_config=config, report=report,
                            artifacts=[folder / "per_question.csv", folder / "report.json"],
                            parent_run_id=parent)


def test_compare_explains_a_worse_row_above_a_tied_one(tmp_path, capsys) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "exp", run_name="sweep", params={},
                                      tags={"sweep_dir": str(tmp_path)})
    best = [1] * 30 + [0] * 10                                   # 0.750
    consistent = [0] * 6 + [1] * 24 + [0] * 10                   # 0.600: 6 lower, 0 higher
    mixed = [0] * 12 + [1] * 18 + [1] * 5 + [0] * 5              # 0.575: 12 lower, 5 higher
    for size, scores in ((128, best), (192, consistent), (256, mixed)):
        _log(uri, parent, tmp_path, size, scores)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    assert cmd_compare(["--tracking-uri", uri, "--no-plot"]) == 0
    out = capsys.readouterr().out
    rows = [ln.split() for ln in out.splitlines() if ln.strip()[:1].isdigit()]
    assert [(r[0], r[1]) for r in rows][:3] == [("1", "128"), ("2", "192"), ("3", "256")]
    verdicts = [" ".join(r) for r in rows]
    assert " worse" in verdicts[1] and " tied" in verdicts[2], out
    assert ("a worse row above a tied one: the paired test weighs the questions on which a "
            "configuration scores differently from the best, not the gap in means: #2 (worse) "
            "differs on 6 of 40 questions (6 worse, 0 better); #3 (tied) differs on 17 of 40 "
            "questions (12 worse, 5 better)") in out
