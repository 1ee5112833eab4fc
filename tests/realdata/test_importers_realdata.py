"""The importers on the real public data sets in ../shared/data: the counts the README states,
every written folder loading and resolving cleanly, moved offsets recomputed from the raw file."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers import check_written
from sweep.data.importers import run_import

COUNTS = ("documents", "questions_read", "questions_written", "spans_read", "spans_at_offset",
          "spans_moved", "spans_not_placed", "spans_duplicate", "spans_written")


def real_import(fmt: str, src: Path, out: Path) -> dict[str, Any]:
    report = run_import(fmt, src, out)
    resolved = check_written(out)
    assert len(resolved) == report["counts"]["questions_written"]
    return report


def moved_by_hand(path: Path) -> Counter[tuple[str, int]]:
    """(qid, shift) of every answer not at its stated offset, straight from the raw SQuAD-layout
    file: the shift to the nearest occurrence of the answer text in its own context (the
    earlier one on a tie), found with a regex rather than the importer's search."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: Counter[tuple[str, int]] = Counter()
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    text, stated = answer["text"], answer["answer_start"]
                    if context[stated:stated + len(text)] == text:
                        continue
                    starts = [m.start() for m in re.finditer(f"(?={re.escape(text)})", context)]
                    nearest = min(starts, key=lambda start: (abs(start - stated), start))
                    out[(str(qa["id"]), nearest - stated)] += 1
    return out


@pytest.mark.realdata
def test_real_covid_qa(shared_data: Path, tmp_path: Path) -> None:
    report = real_import("squad", shared_data / "covid_qa" / "200423_covidQA.json", tmp_path)
    c = report["counts"]
    # README: 98 papers, 1,380 questions, all texts verbatim, 234 not at the stated offset.
    assert tuple(c[k] for k in COUNTS) == (98, 1380, 1380, 1380, 1146, 234, 0, 0, 1380)
    moved = Counter((m["qid"], m["shift"]) for m in report["moved"])
    assert moved == moved_by_hand(shared_data / "covid_qa" / "200423_covidQA.json")
    assert report["not_placed"] == []


@pytest.mark.realdata
def test_real_squad_dev(shared_data: Path, tmp_path: Path) -> None:
    report = real_import("squad", shared_data / "squad_v1.1_dev" / "dev-v1.1.json", tmp_path)
    c = report["counts"]
    # README: 48 articles, 10,570 questions, all answers exact; up to 3 (really 6) per question.
    assert tuple(c[k] for k in COUNTS) == (48, 10570, 10570, 34726, 34726, 0, 0, 16510, 18216)
    assert report["not_placed"] == []


@pytest.mark.realdata
def test_real_scifact(shared_data: Path, tmp_path: Path) -> None:
    report = real_import("beir", shared_data / "scifact", tmp_path)
    c = report["counts"]
    # README: 5,183 abstracts, 300 test queries, 339 qrels, evidence for 188 claims.
    assert tuple(c[k] for k in COUNTS) == (5183, 1109, 300, 366, 366, 0, 0, 0, 366)
    assert (c["queries_without_qrels"], c["qrels_read"], c["qrels_positive"],
            c["qrels_unknown_doc"], c["qrels_unknown_query"], c["questions_with_evidence"],
            c["evidence_outside_split"]) == (809, 339, 339, 0, 0, 188, 0)
    assert report["evidence_auto_detected"] is True
    assert report["not_placed"] == []


@pytest.mark.realdata
def test_real_chroma(shared_data: Path, tmp_path: Path) -> None:
    report = real_import("chroma", shared_data / "chroma_chunking_eval", tmp_path)
    c = report["counts"]
    # README: five corpora, 472 questions, 790 excerpts, all exact.
    assert tuple(c[k] for k in COUNTS) == (5, 472, 472, 790, 790, 0, 0, 0, 790)
    assert report["not_placed"] == [] and report["moved"] == []
