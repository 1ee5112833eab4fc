"""The answer half where a sweep is read (issue 43): the end-of-sweep lines and the parent
run's metrics and note (`finish_sweep` on job folders made by hand), `sweep compare`'s answer
lines (`table_answers` over per-question frames), and the misses page's diagnosis per
question. Expected values are worked out from the verdicts written."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from sweep.application.sweep import SweepSpec, finish_sweep
from sweep.cli.compare import table_answers
from sweep.decide.answers import answer_lines, answer_run
from sweep.outputs import report as rp
from sweep.outputs.misses_html import add_answers, render_page

N = 10


def _rows(found: list[int], live: list[int], oracle: list[int]) -> list[dict]:
    """q0..q9: retrieval found ``found``; answered right live ``live``, oracle ``oracle``;
    q9 is answered but ungraded (no verdict on either side)."""
    out = []
    for i in range(N):
        row = {"qid": f"q{i}", "question": f"question {i}", "status": "scored",
               "recall_at_5": 1.0 if i in found else 0.0}
        if i < 9:
            lv, ov = i in live, i in oracle
            d = "ok" if lv else ("oracle_fail" if not ov else
                                 "generation_bug" if i in found else "retrieval_bug")
            row.update(diagnosis=d, live_correct=lv, oracle_correct=ov,
                       answer_accuracy_live=float(lv), answer_accuracy_oracle=float(ov),
                       retrieval_tax=float(ov) - float(lv))
        else:
            row.update(diagnosis="ungraded", live_correct=None, oracle_correct=None)
        out.append(row)
    return out


def _job(folder: Path, size: int, rows: list[dict]) -> None:
    folder.mkdir(parents=True)
    value = sum(r["recall_at_5"] for r in rows) / N
    graded = [r for r in rows if "answer_accuracy_live" in r]
    live = sum(r["answer_accuracy_live"] for r in graded) / len(graded)
    oracle = sum(r["answer_accuracy_oracle"] for r in graded) / len(graded)
    rep = {"status": "FINISHED", "config_hash": f"size{size}",
           "config": {"chunk": {"size": size}, "eval": {"prompt_k": 5}},
           "headline": {"metric": "recall_at_5", "value": value},
           "metrics": {"recall_at_5": value, "answer_accuracy_live": live,
                       "answer_accuracy_oracle": oracle, "retrieval_tax": oracle - live}}
    cols = ["qid", "question", "status", "recall_at_5", "diagnosis", "live_correct",
            "oracle_correct", "answer_accuracy_live", "answer_accuracy_oracle", "retrieval_tax"]
    with (folder / rp.PER_QUESTION).open("w", newline="") as fh:
        w = csv.DictWriter(fh, cols)
        w.writeheader()
        w.writerows(rows)
    (folder / rp.REPORT).write_text(json.dumps(rep), encoding="utf-8")


# 128: finds 0..7 (0.8), answers 0..5 right live, 0..7 oracle
# 256: finds 0..5 (0.6), answers 0..6 right live (one answered right without the evidence),
#      0..7 oracle
A = _rows(list(range(8)), list(range(6)), list(range(8)))
B = _rows(list(range(6)), list(range(7)), list(range(8)))


def test_the_end_of_sweep_lines_and_the_parent_run_carry_the_answers(tmp_path: Path) -> None:
    _job(tmp_path / "0", 128, A)
    _job(tmp_path / "1", 256, B)
    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path))
    assert [r.name for r in out.answers] == ["size=128", "size=256"]  # best retrieval first
    a, b = out.answers
    assert a.accuracy("live") == pytest.approx(6 / 9) and a.accuracy("oracle") == 8 / 9
    assert dict(a.diagnosis) == {"ok": 6, "retrieval_bug": 0, "generation_bug": 2,
                                 "oracle_fail": 1, "ungraded": 1}
    # 256 misses 6, 7 in retrieval: 6 answered right anyway, 7 a retrieval bug
    assert dict(b.diagnosis) == {"ok": 7, "retrieval_bug": 1, "generation_bug": 0,
                                 "oracle_fail": 1, "ungraded": 1}
    lines = out.lines
    assert lines[-len(answer_lines(out.answers)):] == answer_lines(out.answers)
    assert any(line.startswith("  size=128: live 66.7% · oracle 88.9% · tax +0.222 (n=9)")
               for line in lines)
    assert lines[-1].startswith("conclusion: the retrieval win does NOT clearly show")
    m = out.parent.metrics
    assert m["answers_n_configs"] == 2
    assert m["answers_winner_accuracy_live"] == pytest.approx(6 / 9)
    assert m["answers_winner_retrieval_tax"] == pytest.approx(2 / 9)
    assert m["answers_winner_n_generation_bug"] == 2
    assert m["answers_winner_holds"] == 0.0
    # retrieval orders 128 before 256, answers the other way: the one pair disagrees
    assert m["answers_rank_agreement"] == 0.0
    assert "size=256: live 77.8%" in out.parent.note


def test_a_sweep_without_the_answer_half_says_nothing_of_answers(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k in ("qid", "question", "status", "recall_at_5")}
            for r in A]
    folder = tmp_path / "0"
    folder.mkdir()
    with (folder / rp.PER_QUESTION).open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (folder / rp.REPORT).write_text(json.dumps({
        "status": "FINISHED", "config_hash": "x", "config": {"chunk": {"size": 1}},
        "headline": {"metric": "recall_at_5", "value": 0.8},
        "metrics": {"recall_at_5": 0.8}}), encoding="utf-8")
    out = finish_sweep(SweepSpec(tmp_path), rp.read_reports(tmp_path))
    assert out.answers == [] and not any(k.startswith("answers_") for k in out.parent.metrics)
    assert answer_run("x", 0.8, rows) is None


def test_compare_reads_the_answers_off_the_per_question_frames() -> None:
    # as load_table leaves them: pandas frames, empty cells NaN, booleans as read from CSV
    frames = {"r1": pd.DataFrame(A), "r2": pd.DataFrame(B), "r3": None}
    t = SimpleNamespace(rows=[{"run_id": "r1", "chunk.size": 128, "recall_at_5": 0.8},
                              {"run_id": "r2", "chunk.size": 256, "recall_at_5": 0.6},
                              {"run_id": "r3", "chunk.size": 512, "recall_at_5": 0.1}],
                        per_question=frames, swept=["chunk.size"], metric="recall_at_5")
    runs = table_answers(t)  # type: ignore[arg-type]
    assert [(r.name, len(r.live), r.retrieval) for r in runs] == [("size=128", 9, 0.8),
                                                                  ("size=256", 9, 0.6)]
    assert runs[1].diagnosis["retrieval_bug"] == 1


def test_the_misses_page_shows_each_answered_questions_diagnosis() -> None:
    views = [{"qid": f"q{i}", "question": f"question <{i}>", "status": "scored",
              "cause": "" if i < 8 else "never_retrieved", "detail": "", "hits": [],
              "passages": [], "first_relevant_rank": 1, "dense_rank": 1, "bm25_rank": 1}
             for i in range(N)]
    rows = [{**r, "live_answer": f"live <b>{r['qid']}</b>", "oracle_answer": "o",
             "evidence_in_live": True} for r in A]
    rows[9]["diagnosis"] = ""  # not answered (generation.limit): no answer on its view
    add_answers(views, rows)
    assert [v["qid"] for v in views if "answer" in v] == [f"q{i}" for i in range(9)]
    assert views[6]["answer"]["diagnosis"] == "generation_bug"
    page = render_page(views, "t", {})
    assert "<h2>Answers (9 questions answered live and oracle)</h2>" in page
    assert "<tr><td>generation_bug</td><td>2</td>" in page
    assert "<tr><td>q8</td><td>oracle_fail</td><td>wrong</td><td>wrong</td>" \
           "<td>never_retrieved</td><td>question &lt;8&gt;</td></tr>" in page
    # a missed question's block says its answers, escaped
    assert "live wrong: “live &lt;b&gt;q8&lt;/b&gt;”" in page
    assert "<b>q8</b>" not in page.replace("<summary><b>q8</b>", "")
    assert "<h2>Answers" not in render_page([{**v, "answer": None} for v in views], "t", {})
