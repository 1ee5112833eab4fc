"""benchmarks/chroma_tokentext_check.py: LangChain-style windows, Chroma's placement and
Precision_Ω, on inputs worked by hand."""

from __future__ import annotations

import sys

import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from chroma_tokentext_check import chroma_place, id_windows, load_chroma, omega_stats


def test_windows_step_size_minus_overlap_and_stop_at_the_one_reaching_the_end() -> None:
    assert id_windows(10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert id_windows(10, 5, 0) == [(0, 5), (5, 10)]
    # 11 ids, 5 a window, stepping 3: the window from 6 reaches the end, so none starts at 9.
    assert id_windows(11, 5, 2) == [(0, 5), (3, 8), (6, 11)]
    assert id_windows(3, 5, 0) == [(0, 3)]
    assert id_windows(0, 5, 0) == []


def test_placement_drops_a_full_stop_takes_the_first_copy_then_tolerates_whitespace() -> None:
    text = "One two. One two. Three\n\nfour"
    assert chroma_place(text, "One two.") == (0, 7)
    # Not in the text as it is: the fallback matches case-insensitively and lets any
    # whitespace run stand for another, from the first word's start to the last word's end.
    assert chroma_place(text, "three four") == (18, 29)
    assert chroma_place(text, "\ufffdthree") is None
    assert chroma_place(text, "   ") is None


def test_precision_omega_counts_touching_chunks_and_evidence_no_chunk_holds() -> None:
    # Question 1: excerpt [5, 9); chunks [0, 7) and [7, 14) share characters with it, [14, 20)
    # does not; union with the excerpt [0, 14): 4 / 14. Question 2: excerpt [14, 16) is held
    # by [14, 20), and [7, 14) touches it at 14 (Chroma's closed test), so the union is
    # [7, 20): 2 / 13. Question 3 is on another document with no chunk: 0.
    spans = [("a", 0, 7), ("a", 7, 14), ("a", 14, 20)]
    questions = [[("a", 5, 9)], [("a", 14, 16)], [("b", 0, 3)]]
    values = [4 / 14, 2 / 13, 0.0]
    mean = sum(values) / 3
    std = (sum((v - mean) ** 2 for v in values) / 3) ** 0.5
    assert omega_stats(spans, questions) == pytest.approx((100 * mean, 100 * std))


def test_load_reads_excerpt_offsets_per_question(tmp_path) -> None:
    (tmp_path / "corpora").mkdir()
    (tmp_path / "corpora" / "notes.md").write_text("héllo world", encoding="utf-8")
    (tmp_path / "questions_df.csv").write_text(
        'question,references,corpus_id\n'
        'Q?,"[{""content"": ""world"", ""start_index"": 6, ""end_index"": 11}]",notes\n',
        encoding="utf-8")
    texts, questions = load_chroma(tmp_path)
    assert texts == {"notes": "héllo world"}
    assert questions == [[("notes", 6, 11)]]
