"""The golden set's audit remembered in the cache folder (issue 46): a second audit of the
same corpus, golden set, reference chunking and settings reads the findings back (the same
report, not computed again); a change to any of them computes them again; a memo that is
damaged or under another key is never read; no cache folder, no memo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sweep.application.audit as app_audit
from sweep.application.audit import MEMO_FOLDER, run_audit
from sweep.config.compose import compose
from sweep.config.specs import build_job_spec
from sweep.evaluation.audit import AuditSpec
from sweep.pipeline.memo import clear_memo

RETURNS = ("# Returns\n\nYou can return items within 30 days of delivery.\n\n"
           "## Fees\n\nA restocking fee of 15% applies to opened items. You can return items "
           "within 30 days of delivery.\n")
SHIPPING = "# Shipping\n\nOrders ship within 2 business days.\n\n## Abroad\n\nNot yet.\n"
ITEMS = [
    {"qid": "q1", "question": "How long can I return items?",
     "evidence": [{"doc_id": "returns", "quote": "You can return items within 30 days"}]},
    {"qid": "q2", "question": "how long can i return items",
     "evidence": [{"doc_id": "returns", "quote": "A restocking fee of 15%"}]},
]


@pytest.fixture
def ws(tmp_path: Path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "returns.md").write_text(RETURNS, encoding="utf-8")
    (corpus / "shipping.md").write_text(SHIPPING, encoding="utf-8")
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS),
                                           encoding="utf-8")
    clear_memo()
    yield tmp_path
    clear_memo()


def _job(ws: Path, *more: str, golden: str = "golden.jsonl"):
    return build_job_spec(compose([f"corpus.path={ws / 'corpus'}",
                                   f"golden.path={ws / golden}", "tracking=off",
                                   f"cache.dir={ws / 'cache'}", *more]))


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the findings were computed (not read back)."""
    calls: list[int] = []
    real = app_audit.audit

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(app_audit, "audit", counting)
    return calls


def _memos(ws: Path) -> list[Path]:
    return sorted((ws / "cache" / MEMO_FOLDER).glob("*.json"))


def test_a_second_audit_reads_the_same_findings_back(ws: Path, computed: list[int]) -> None:
    first = run_audit(_job(ws), embed=False)
    assert len(computed) == 1 and len(_memos(ws)) == 1
    # the findings themselves: q1's passage is in two places, q1 and q2 are one question
    assert first["items"][0]["evidence_elsewhere"][0]["occurrences"] == 2
    assert first["set"]["near_duplicates"]["n_text"] == 1
    again = run_audit(_job(ws), embed=False)
    assert len(computed) == 1  # read back, not computed
    assert again == first
    assert json.dumps(again) == json.dumps(first)  # same types, same order: same audit.json


def test_what_changes_the_findings_computes_them_again(ws: Path, computed: list[int]) -> None:
    base = run_audit(_job(ws), embed=False)
    # the settings of the audit
    wider = run_audit(_job(ws), embed=False, spec=AuditSpec(max_places=1))
    assert len(computed) == 2 and len(_memos(ws)) == 2
    assert wider["items"][0]["evidence_elsewhere"] == base["items"][0]["evidence_elsewhere"]
    # another golden set (another question)
    items = [dict(ITEMS[0]), {**ITEMS[1], "question": "What does opening an item cost?"}]
    (ws / "golden2.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items),
                                      encoding="utf-8")
    other = run_audit(_job(ws, golden="golden2.jsonl"), embed=False)
    assert len(computed) == 3 and other["set"]["near_duplicates"]["n_text"] == 0
    # another reference chunking (a sidecar naming it): other chunks, other splits
    (ws / "golden2.reference.yaml").write_text(
        "chunk:\n  boundary: recursive\n  size: 4\n  overlap: 0\n  tokenizer: regex\n",
        encoding="utf-8")
    clear_memo()
    small = run_audit(_job(ws, golden="golden2.jsonl"), embed=False)
    assert len(computed) == 4
    assert small["inputs"]["reference_chunking"]["size"] == 4
    assert small["set"]["n_split"] > other["set"]["n_split"]
    # another package source: the code that computes the findings changed
    monkey = pytest.MonkeyPatch()
    monkey.setattr(app_audit, "content_digest", lambda path: "edited")
    try:
        assert run_audit(_job(ws), embed=False) == base
    finally:
        monkey.undo()
    assert len(computed) == 5
    n = len(computed)
    run_audit(_job(ws), embed=False)  # and the first inputs again: still remembered
    assert len(computed) == n


def test_a_damaged_or_foreign_memo_is_not_read(ws: Path, computed: list[int]) -> None:
    first = run_audit(_job(ws), embed=False)
    (memo,) = _memos(ws)
    memo.write_text("{not json", encoding="utf-8")
    assert run_audit(_job(ws), embed=False) == first and len(computed) == 2
    # a memo whose findings were written under another key (copied over this one)
    data = json.loads(memo.read_text(encoding="utf-8"))
    data["key"] = "0" * 64
    data["audit"]["set"]["n_items"] = 99
    memo.write_text(json.dumps(data), encoding="utf-8")
    assert run_audit(_job(ws), embed=False)["set"]["n_items"] == 2 and len(computed) == 3
    # a memo without findings in the right shape
    memo.write_text(json.dumps({"key": json.loads(memo.read_text())["key"], "audit": []}),
                    encoding="utf-8")
    assert run_audit(_job(ws), embed=False) == first and len(computed) == 4


def test_credentials_in_the_text_reach_neither_the_memo_nor_the_findings(
        ws: Path, computed: list[int]) -> None:
    url = "https://admin:hunter2@kb.example.com/returns"
    items = [{**ITEMS[0], "question": f"How long can I return items (asked at {url})?"},
             ITEMS[1]]
    (ws / "golden.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items),
                                     encoding="utf-8")
    first = run_audit(_job(ws), embed=False)
    (memo,) = _memos(ws)
    assert "kb.example.com" in memo.read_text(encoding="utf-8")  # the question is there
    assert "hunter2" not in memo.read_text(encoding="utf-8")
    assert "hunter2" not in json.dumps(first)
    assert run_audit(_job(ws), embed=False) == first and len(computed) == 1


def test_no_cache_folder_no_memo(ws: Path, computed: list[int]) -> None:
    first = run_audit(_job(ws, "cache.enabled=false"), embed=False)
    second = run_audit(_job(ws, "cache.enabled=false"), embed=False)
    assert first == second and len(computed) == 2
    assert not (ws / "cache" / MEMO_FOLDER).exists()


def test_sweep_cache_counts_and_clears_the_audits(ws: Path, capsys: pytest.CaptureFixture
                                                  ) -> None:
    from sweep.cli.cache import cmd_cache

    run_audit(_job(ws), embed=False)
    run_audit(_job(ws), embed=False, spec=AuditSpec(dup_threshold=0.5))
    folder = ws / "cache" / MEMO_FOLDER
    assert cmd_cache(["info", f"cache.dir={ws / 'cache'}"]) == 0
    assert f"{folder}: 2 golden set audits" in capsys.readouterr().out
    assert cmd_cache(["clear", f"cache.dir={ws / 'cache'}"]) == 0
    assert f"removed 2 golden set audits from {folder}" in capsys.readouterr().out
    assert not folder.exists()
