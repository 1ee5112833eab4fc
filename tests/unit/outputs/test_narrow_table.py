"""The end-of-sweep table (issue 45): narrow by default with full column names, the rest in
comparison.csv; one latency statistic (p95), the retrieval-only latency when the query
embedding hides the differences; a worse row above a tied one explained in one line."""

from __future__ import annotations

import csv
from pathlib import Path

from sweep.decide.decision import decide_sweep, inversion_line
from sweep.decide.stats import Verdict
from sweep.outputs.report import (
    comparison_rows,
    narrow_metrics,
    print_comparison,
    write_comparison,
)

# Every metric a real report's table can show (names as the jobs report them).
WIDE = ["evidence_found_fraction", "recall_at_5", "mrr", "ndcg_at_5", "evidence_recall_at_5",
        "evidence_recall_at_budget", "context_tokens_at_5", "n_chunks", "n_orphans"]


def _report(size: int, value: float, e2e: float, retrieval: float, folder: Path) -> dict:
    metrics = {m: 0.5 for m in WIDE}
    metrics.update({"evidence_found_fraction": 1.0, "evidence_recall_at_budget": value,
                    "latency_end_to_end_p50_ms": e2e / 2, "latency_end_to_end_p95_ms": e2e,
                    "latency_retrieval_p95_ms": retrieval, "n_miss_truncated": 3})
    return {"config": {"chunk": {"size": size}, "eval": {"k": [1, 5]}}, "status": "FINISHED",
            "headline": {"metric": "evidence_recall_at_budget", "value": value},
            "metrics": metrics, "config_hash": f"h{size}"}


def _rows(tmp_path: Path, e2e: tuple[float, float], retrieval: tuple[float, float]):
    reports = [_report(128, 0.8, e2e[0], retrieval[0], tmp_path),
               _report(192, 0.7, e2e[1], retrieval[1], tmp_path)]
    folders = [tmp_path / "sweep" / "0", tmp_path / "sweep" / "1"]
    return comparison_rows(reports, folders=folders)


def test_the_printed_table_is_narrow_with_full_names_and_points_at_the_csv(
        tmp_path, capsys) -> None:
    # MiniLM-like: the query embedding is most of the end-to-end latency, the same in both
    axes, rows = _rows(tmp_path, (9.0, 9.1), (0.4, 1.6))
    # a verdict cell wider than its header (the demo grid's cut "evidence_recall_at_bu…")
    rows[0]["verdict"], rows[1]["verdict"] = "best", "tied (p_holm=1.000)"
    print_comparison(axes, rows)
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "chunk.size" in line)
    cells = [c.strip() for c in header.strip("┃│| ").replace("┃", "│").split("│")]
    assert cells == ["#", "chunk.size", "evidence_recall_at_budget", "verdict", "recall_at_5",
                     "mrr",
                     "context_tokens_at_5", "latency_end_to_end_p95_ms",
                     "latency_retrieval_p95_ms"], cells
    assert "…" not in out  # no header cut
    assert "p50" not in out and "ndcg_at_5" not in header and "misses" not in header
    more = next(line for line in out.splitlines() if "more columns" in line)
    assert more.startswith("6 more columns (evidence_found_fraction, ndcg_at_5, "
                           "evidence_recall_at_5, n_chunks, n_orphans, misses) in ")
    assert more.endswith(f"in {tmp_path / 'sweep'}/comparison.csv and comparison.md, also on "
                         "the sweep's parent run in MLflow")
    # the full table: every column, and p95 (one latency statistic) rather than p50
    csv_path, md_path = write_comparison(tmp_path, axes, rows)
    with csv_path.open() as f:
        columns = next(csv.reader(f))
    assert {*WIDE, "latency_end_to_end_p95_ms", "latency_retrieval_p95_ms", "misses"} <= set(
        columns)
    assert not any("p50" in c for c in columns)
    assert "latency_end_to_end_p95_ms" in md_path.read_text()


def test_retrieval_latency_only_when_the_embedding_hides_it(tmp_path) -> None:
    _, rows = _rows(tmp_path, (9.0, 9.1), (4.6, 6.0))  # retrieval is most of it: e2e differs
    assert narrow_metrics(rows, "evidence_recall_at_budget") == [
        "recall_at_5", "mrr", "context_tokens_at_5", "latency_end_to_end_p95_ms"]
    _, rows = _rows(tmp_path, (9.0, 9.1), (4.5, 6.0))  # half of the first row's: shown
    assert narrow_metrics(rows, "evidence_recall_at_budget")[-1] == "latency_retrieval_p95_ms"


def test_lost_evidence_columns_appear_only_when_something_was_lost(tmp_path) -> None:
    _, rows = _rows(tmp_path, (9.0, 9.1), (4.6, 6.0))
    rows[1]["evidence_found_fraction"] = 0.95
    rows[1]["lost_in_parsing"], rows[0]["lost_in_parsing"] = 2, 0
    assert narrow_metrics(rows, "recall_at_5")[:3] == [
        "lost_in_parsing", "evidence_found_fraction", "mrr"]


def _scores(changes: dict[int, float], base: float = 0.5, n: int = 40) -> dict[str, float]:
    return {f"q{i:02d}": changes.get(i, base) for i in range(n)}


def test_a_worse_row_above_a_tied_one_is_explained_by_the_questions_that_differ() -> None:
    # #2: 10 questions each 0.1 lower (mean 0.475): consistent, worse. #3: 6 questions 0.5
    # lower and 3 0.5 higher (mean 0.4625, lower than #2's): both ways, tied.
    best = _scores({})
    consistent = _scores({i: 0.4 for i in range(10)})
    mixed = _scores({**{i: 0.0 for i in range(6)}, **{i: 1.0 for i in range(6, 9)}})
    means = [sum(s.values()) / 40 for s in (best, consistent, mixed)]
    assert means == [0.5, 0.475, 0.4625]
    rows = [{"chunk.size": size, "mrr": m} for size, m in zip((128, 192, 256), means,
                                                              strict=True)]
    out = decide_sweep(rows, ["chunk.size"], "mrr", [best, consistent, mixed], n=2000)
    assert [v.tied for v in out["verdicts"]] == [False, True]
    assert out["lines"][1] == (
        "a worse row above a tied one: the paired test weighs the questions on which a "
        "configuration scores differently from the best, not the gap in means: #2 (worse) "
        "differs on 10 of 40 questions (10 worse, 0 better); #3 (tied) differs on 9 of 40 "
        "questions (6 worse, 3 better)")


def test_no_inversion_no_line_and_direction_follows_the_metric() -> None:
    worse, tied = Verdict(40, tied=False), Verdict(40, tied=True)
    best, other = _scores({}), _scores({0: 0.0, 1: 1.0, 2: 1.0})
    assert inversion_line([best, other, other], [tied, worse]) is None  # tied above worse
    assert inversion_line([best, other, other], [worse, worse]) is None
    # a lower-is-better metric: a higher score is the worse one
    line = inversion_line([best, other, other], [worse, tied], lower_better=True)
    assert line is not None and line.endswith(
        "#2 (worse) differs on 3 of 40 questions (2 worse, 1 better); #3 (tied) differs on 3 "
        "of 40 questions (2 worse, 1 better)")


def test_the_quantisation_tax_joins_the_narrow_table_when_a_row_was_run_off_fp32(
        tmp_path) -> None:
    _, rows = _rows(tmp_path, (9.0, 9.1), (4.6, 6.0))
    plain = narrow_metrics(rows, "recall_at_5")
    assert not any(m.startswith("quant_") for m in plain)
    rows[1].update(quant_overlap_at_10=0.9, quant_tax_recall_at_5=0.025, quant_tax_mrr=0.01)
    assert narrow_metrics(rows, "recall_at_5") == [
        *plain, "quant_overlap_at_10", "quant_tax_recall_at_5", "quant_tax_mrr"]
