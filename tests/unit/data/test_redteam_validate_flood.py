"""`sweep validate` does not flood: only real units make a number comparable, and the output
is capped per item with a count of the rest; `--all` prints everything (issue 14, item 4)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli
from sweep.data.corpus import Document
from sweep.data.golden import Problem
from sweep.evaluation.validate import cap_problems, number_mentions


def _doc(text: str) -> Document:
    return Document(doc_id="d", title="d", text=text, sections=(), source="d.md")


def test_only_units_count() -> None:
    text = ("Part 00050 fits the bracket. Refunds within 30 days, a fee of 15%, $15 shipping, "
            "2 business days, 5 kg, 3 GHz, 10 minutes. Room 12 door 3 in March 2024 gone 7.")
    phrases = [m.phrase for m in number_mentions(_doc(text))]
    assert phrases == ["30 days", "15%", "$15", "2 business days", "5 kg", "3 ghz",
                       "10 minutes"]


def test_cap_problems_per_item_and_in_total() -> None:
    probs = [Problem("g", line, "evidence[0]", f"m{i}", "warning")
             for line in (1, 2) for i in range(8)]
    shown, notes = cap_problems(probs, per_item=3)
    assert [(p.line, p.message) for p in shown] == [(1, "m0"), (1, "m1"), (1, "m2"),
                                                    (2, "m0"), (2, "m1"), (2, "m2")]
    assert notes == ["g:1: ... and 5 more problems for this item (--all shows every one)",
                     "g:2: ... and 5 more problems for this item (--all shows every one)"]
    shown, notes = cap_problems(probs, per_item=10, total=4)
    assert len(shown) == 4 and notes == ["... and 12 more problems (--all shows every one)"]
    assert cap_problems(probs, per_item=0) == (probs, [])  # 0 = no cap (--all)


def _workspace(tmp: Path, sentence: str, n: int) -> tuple[Path, Path]:
    corpus = tmp / "corpus"
    corpus.mkdir()
    for i in range(n):
        (corpus / f"part{i:05d}.md").write_text(f"# Part {i}\n\n{sentence.format(i=i)}\n",
                                                encoding="utf-8")
    golden = tmp / "golden.jsonl"
    quote = sentence.format(i=0)
    golden.write_text(json.dumps({"qid": "q1", "question": "what about part zero",
                                  "evidence": [{"path": "part00000.md", "quote": quote}]})
                      + "\n", encoding="utf-8")
    return corpus, golden


def test_cli_no_flood_on_words_after_numbers(tmp_path: Path) -> None:
    corpus, golden = _workspace(
        tmp_path, "Part {i:05d} fits the standard mounting bracket of the kestrel hub.", 40)
    res = run_cli("-m", "sweep.cli", "validate", f"corpus.path={corpus}",
                  f"golden.path={golden}", f"cache.dir={tmp_path}/cache", timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ""  # 'fits' is no unit: nothing to compare


def test_cli_caps_real_conflicts_and_all_shows_them(tmp_path: Path) -> None:
    corpus, golden = _workspace(
        tmp_path, "Part {i} ships within {i} days of ordering from the main kestrel "
        "warehouse.", 30)
    args = ("-m", "sweep.cli", "validate", f"corpus.path={corpus}", f"golden.path={golden}",
            f"cache.dir={tmp_path}/cache")
    res = run_cli(*args, timeout=300)
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 6, res.stdout  # 5 shown + one count
    assert lines[-1].endswith("... and 24 more problems for this item (--all shows every one)")
    assert "29 warnings" in res.stderr  # the summary counts every one
    full = run_cli(*args, "--all", timeout=300)
    assert len(full.stdout.strip().splitlines()) == 29
