"""The columns a job of this process wrote to per_question.csv, remembered for the sweep's end
(sweep.outputs.written): read back exactly as pandas reads the file, and only while the file
is the one written."""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from sweep.decide import decision
from sweep.outputs import report as rp
from sweep.outputs import written


@pytest.fixture(autouse=True)
def _empty_memo() -> Iterator[None]:
    written.forget()
    yield
    written.forget()


def _rows(n: int = 300, seed: int = 0) -> list[dict]:
    """Rows like an evaluation's: fractions of several denominators (reciprocal ranks,
    recall over 1-7 passages), ranks as ints, empty cells, orphans, a duplicate qid, and qids
    a spreadsheet would run as formulas."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        rank = int(rng.integers(1, 40))
        need = int(rng.integers(1, 8))
        rows.append({
            "qid": ["=HYPERLINK(1)", "'quoted", "-7", "+3", "@me"][i] if i < 5 else f"q{i}",
            "question": f"question {i}?",
            "status": "orphan" if i % 17 == 3 else "scored",
            "first_relevant_rank": rank if i % 5 else None,
            "mrr": 1.0 / rank,
            "recall_at_5": int(rng.integers(0, need + 1)) / need,
            "doc_mrr": float(rng.random()) if i % 7 else math.nan,
            "evidence_recall_at_budget": [math.inf, -0.0, 5e-324, 1e-5, 2.0**52][i % 5],
            "context_tokens_at_5": int(rng.integers(0, 5000)),
        })
    rows.append(dict(rows[10], mrr=0.123))  # a second row of one qid: the first one counts
    return rows


METRICS = ["mrr", "recall_at_5", "doc_mrr", "evidence_recall_at_budget",
           "first_relevant_rank", "context_tokens_at_5"]


def _bits(scores: dict[str, float] | None) -> dict[str, bytes] | None:
    return None if scores is None else {q: struct.pack("<d", v) for q, v in scores.items()}


def _from_file(folder: Path, metric: str) -> tuple:
    """What pandas reads from the file (the memo emptied first)."""
    kept = dict(written._MEMO)
    written.forget()
    try:
        frame = decision.read_questions(folder, [metric])
        assert not isinstance(frame, written.Written)
        return _bits(decision.scores_of(frame, metric)), decision.statuses_of(frame)
    finally:
        written._MEMO.update(kept)


def test_pandas_missing_values_are_the_memos() -> None:
    from pandas._libs.parsers import STR_NA_VALUES

    assert frozenset(STR_NA_VALUES) == written.PANDAS_NA


@pytest.mark.parametrize("metric", METRICS)
def test_remembered_columns_read_as_pandas_reads_the_file(tmp_path: Path, metric: str) -> None:
    rows = _rows()
    path = rp.write_per_question(tmp_path, rows)
    assert written.remember(path, rows, [metric])
    frame = decision.read_questions(tmp_path, [metric])
    assert isinstance(frame, written.Written)
    scores = decision.scores_of(frame, metric)
    # bit for bit (-0.0, inf, the smallest subnormal), in the same order
    assert _bits(scores) == _from_file(tmp_path, metric)[0]
    assert list(scores) == list(_from_file(tmp_path, metric)[0])
    assert decision.statuses_of(frame) == _from_file(tmp_path, metric)[1]
    assert decision.read_scores(tmp_path, metric) == scores
    if metric == "mrr":  # hand-checked: the first row of a qid, orphans left out
        assert scores["q10"] == rows[10]["mrr"] != 0.123 and "q3" not in scores
    if metric == "doc_mrr":  # a document-level metric keeps orphans, drops empty values
        assert "q20" in scores and "q7" not in scores


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    rows = _rows(50)
    path = rp.write_per_question(tmp_path, rows)
    assert written.remember(path, rows, ["mrr"])
    # rewritten (a new file by rename): what it holds now, not what was remembered
    other = [dict(r, mrr=0.5) for r in rows]
    rp.write_per_question(tmp_path, other)
    got = decision.read_questions(tmp_path, ["mrr"])
    assert not isinstance(got, written.Written)
    assert set(decision.scores_of(got, "mrr").values()) == {0.5}
    # edited in place, same inode: its size and time differ
    path = rp.write_per_question(tmp_path, rows)
    assert written.remember(path, rows, ["mrr"])
    text = path.read_text(encoding="utf-8").replace(",scored,", ",orphan,", 1)
    with path.open("r+", encoding="utf-8") as f:
        f.write(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    got = decision.read_questions(tmp_path, ["mrr"])
    assert not isinstance(got, written.Written)
    assert decision.statuses_of(got)["=HYPERLINK(1)"] == "orphan"
    # removed: nothing remembered is given for it
    path.unlink()
    assert written.recall(path, ["mrr"]) is None and decision.read_questions(tmp_path, ["mrr"]) is None


def test_a_column_not_remembered_is_read_from_the_file(tmp_path: Path) -> None:
    rows = _rows(40)
    path = rp.write_per_question(tmp_path, rows)
    assert written.remember(path, rows, ["mrr"])
    assert written.recall(path, ["mrr"]) is not None
    assert written.recall(path, ["mrr", "recall_at_5"]) is None
    got = decision.read_questions(tmp_path, ["recall_at_5"])
    assert not isinstance(got, written.Written) and "recall_at_5" in got.columns


@pytest.mark.parametrize(("change", "column"), [
    ({"qid": "NA"}, "mrr"),  # pandas reads NA as a missing qid
    ({"qid": "nan"}, "mrr"),
    ({"status": None}, "mrr"),  # an empty status reads as NaN
    ({"qid": 7}, "mrr"),  # not a text
    ({"qid": "a\nb"}, "mrr"),
    ({"mrr": "0.5"}, "mrr"),  # a text where a number is: the file decides
    ({"mrr": True}, "mrr"),
    ({"mrr": np.float64(0.5)}, "mrr"),
    ({"mrr": 2**60}, "mrr"),
    ({}, "no_such_metric"),  # no row has it: the file may lack the column
    ({}, "status"),
])
def test_a_value_that_might_not_read_back_as_itself_is_not_remembered(
        tmp_path: Path, change: dict, column: str) -> None:
    rows = _rows(20)
    rows[3].update(change)
    path = rp.write_per_question(tmp_path, rows)
    assert not written.remember(path, rows, [column])
    assert written.recall(path, [column]) is None


def test_qids_with_a_formula_trigger_or_quote_are_remembered(tmp_path: Path) -> None:
    rows = _rows(12)
    path = rp.write_per_question(tmp_path, rows)
    assert written.remember(path, rows, ["mrr"])
    kept = written.recall(path, ["mrr"])
    assert kept is not None and kept.qids[:5] == ["=HYPERLINK(1)", "'quoted", "-7", "+3", "@me"]


def test_the_memo_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(written, "MAX_ROWS", 30)
    rows = _rows(20)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = rp.write_per_question(tmp_path / "a", rows)
    assert written.remember(first, rows, ["mrr"])
    second = rp.write_per_question(tmp_path / "b", rows)
    assert not written.remember(second, rows, ["mrr"])  # 42 rows > 30: read from its file
    assert written.recall(second, ["mrr"]) is None


def _sweep(root: Path, remember: bool) -> list[Path]:
    """Six configurations with evaluation-like scores (fractions, orphans, a lost question)."""
    folders = []
    for n in range(6):
        rows = _rows(200, seed=n)
        if n == 4:
            rows[50]["status"] = "orphan"  # lost by this one only
        folder = root / str(n)
        folder.mkdir(parents=True)
        value = float(np.mean([r["mrr"] for r in rows if r["status"] == "scored"]))
        rep = {"status": "FINISHED", "config_hash": f"h{n}",
               "config": {"chunk": {"size": 64 * (n + 1), "boundary": "fixed"},
                          "eval": {"prompt_k": 5}},
               "headline": {"metric": "mrr", "value": value},
               "metrics": {"mrr": value, "context_tokens_at_5": 100.0 * n,
                           "latency_end_to_end_p95_ms": 5.0}}
        rp.write_report(folder, rep)
        path = rp.write_per_question(folder, rows)
        if remember:
            assert written.remember(path, rows, ["mrr"])
        folders.append(folder)
    return folders


def _decided(root: Path) -> str:
    found = rp.read_reports(root)
    axes, rows = rp.comparison_rows([r for _, r in found], folders=[f for f, _ in found])
    out = decision.finished_sweep(axes, rows, {str(f): r for f, r in found})
    assert out is not None
    out.pop("lost")
    return json.dumps([out, rows], default=repr, sort_keys=True)


def test_a_sweeps_decision_is_the_same_from_the_memo(tmp_path: Path) -> None:
    folders = _sweep(tmp_path / "memo", remember=True)
    _sweep(tmp_path / "file", remember=False)
    assert all(isinstance(decision.read_questions(f, ["mrr"]), written.Written) for f in folders)
    from_memo = _decided(tmp_path / "memo").replace(str(tmp_path / "memo"), "X")
    from_file = _decided(tmp_path / "file").replace(str(tmp_path / "file"), "X")
    assert '"verdict": "best"' in from_file and "lost" in from_file
    assert from_memo == from_file
