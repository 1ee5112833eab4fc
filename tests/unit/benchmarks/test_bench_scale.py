"""benchmarks/bench.py --scale: the replicated corpus keeps every evidence span on its quote,
and the growth exponent is log(time ratio) / log(size ratio)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from bench import growth, replicate


def _corpus(folder: Path) -> None:
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "7.txt").write_text("Masks reduce spread. Hands matter too.\n",
                                             encoding="utf-8")
    (folder / "corpus" / "9.txt").write_text("Vaccines train immunity.\n", encoding="utf-8")
    rows = [{"qid": "a", "question": "what reduces spread?", "relevant_doc_ids": ["7"],
             "evidence": [{"doc_id": "7", "start": 0, "end": 20,
                           "quote": "Masks reduce spread."}]},
            {"qid": "b", "question": "what trains immunity?", "relevant_doc_ids": ["9"],
             "evidence": [{"doc_id": "9", "start": 9, "end": 23, "quote": "train immunity"}]}]
    (folder / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                         encoding="utf-8")


def test_each_copy_is_new_text_with_its_evidence_in_place(tmp_path: Path) -> None:
    _corpus(tmp_path / "src")
    assert replicate(tmp_path / "src", tmp_path / "x3", 3) == (6, 6)
    files = {f.stem: f.read_text(encoding="utf-8")
             for f in (tmp_path / "x3" / "corpus").iterdir()}
    assert sorted(files) == ["7", "7-r1", "7-r2", "9", "9-r1", "9-r2"]
    assert len(set(files.values())) == 6  # no copy repeats another's text
    assert files["7"] == "Masks reduce spread. Hands matter too.\n"  # copy 0 is the original
    rows = [json.loads(line) for line in
            (tmp_path / "x3" / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["qid"] for r in rows] == ["a", "b", "a-r1", "b-r1", "a-r2", "b-r2"]
    for r in rows:
        (e,) = r["evidence"]
        assert r["relevant_doc_ids"] == [e["doc_id"]]
        assert files[e["doc_id"]][e["start"]:e["end"]] == e["quote"]


def test_growth_exponent_by_hand() -> None:
    a = {"factor": 1.0, "linear": 2.0, "square": 3.0, "flat": 5.0, "none": 0.0}
    b = {"factor": 16.0, "linear": 32.0, "square": 768.0, "flat": 5.0, "none": 1.0}
    assert growth(a, b, "linear") == pytest.approx(1.0)
    assert growth(a, b, "square") == pytest.approx(2.0)
    assert growth(a, b, "flat") == pytest.approx(0.0)
    assert growth(a, b, "none") is None  # nothing at the smallest size: no ratio
