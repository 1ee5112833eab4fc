"""`sweep audit` and `sweep validate --audit` in a subprocess, on a two-document workspace;
and a golden `needs` that `sweep validate` refuses in one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

RETURNS = ("# Returns\n\nYou can return items within 30 days of delivery.\n\n"
           "## Fees\n\nA restocking fee of 15% applies to opened items.\n")
SHIPPING = "# Shipping\n\nOrders ship within 2 business days.\n\n## Abroad\n\nNot yet.\n"
ITEMS = [
    {"qid": "q1", "question": "How long can I return items?",
     "evidence": [{"doc_id": "returns", "quote": "You can return items within 30 days"}]},
    {"qid": "q2", "question": "how long can i return items",
     "evidence": [{"doc_id": "returns", "quote": "within 30 days of delivery"},
                  {"doc_id": "returns", "quote": "A restocking fee of 15%"}], "needs": "any"},
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "returns.md").write_text(RETURNS, encoding="utf-8")
    (corpus / "shipping.md").write_text(SHIPPING, encoding="utf-8")
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS),
                                           encoding="utf-8")
    return tmp_path


def _args(ws: Path) -> list[str]:
    return [f"corpus.path={ws / 'corpus'}", f"golden.path={ws / 'golden.jsonl'}",
            "tracking=off", f"cache.dir={ws / 'cache'}"]


def test_audit_json(ws: Path) -> None:
    res = run_cli("-m", "sweep.cli", "audit", "--json", "--no-embedding", *_args(ws), cwd=ws)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    s = report["set"]
    assert s["n_items"] == 2 and s["near_duplicates"]["n_text"] == 1
    assert s["passages_needed"] == {"1": 2, "2": 0, "3plus": 0} and s["n_needs_any"] == 1
    assert s["coverage"]["untouched_documents"] == ["shipping"]
    assert report["inputs"]["near_duplicates"]["model"] is None
    assert report["inputs"]["reference_chunking"]["from"] == "ChunkSpec defaults (no sidecar)"
    assert "Traceback" not in res.stderr
    # No mlflow.db where it runs: nothing to size the set from, and the line says why.
    assert s["power"]["mde"] is None and s["power"]["n_needed"] is None
    assert s["power"]["line"].startswith("power: not estimated (no sweep to size it from (")


def test_validate_audit_text_and_html(ws: Path) -> None:
    page = ws / "audit.html"
    res = run_cli("-m", "sweep.cli", "validate", "--audit", "--no-embedding", "--html",
                  str(page), *_args(ws), cwd=ws)
    assert res.returncode == 0, res.stderr
    assert "near-duplicate questions (normalised text only (no embedding)): 1 pairs" in res.stdout
    assert "coverage: 1/2 documents and 2/4 sections touched" in res.stdout
    assert "power: not estimated (no sweep to size it from (" in res.stdout
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_bad_threshold_is_one_line(ws: Path) -> None:
    res = run_cli("-m", "sweep.cli", "audit", "--threshold", "1.5", *_args(ws), cwd=ws)
    assert res.returncode == 1
    assert res.stderr.strip() == "error: --threshold: must be in (0, 1], got 1.5"


def test_validate_refuses_a_bad_needs(ws: Path) -> None:
    golden = ws / "golden.jsonl"
    golden.write_text(golden.read_text() + json.dumps(
        {"qid": "q3", "question": "x?", "relevant_doc_ids": ["returns"], "needs": "most"}) + "\n")
    res = run_cli("-m", "sweep.cli", "validate", *_args(ws), cwd=ws)
    assert res.returncode == 1
    assert f"{golden}:3: needs: must be one of all, any, got 'most'" in res.stdout
    assert "Traceback" not in res.stdout + res.stderr
