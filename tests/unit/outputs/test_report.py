"""sweep.outputs.report: the files a job leaves, read back in job order, and the comparison
table's rows (axes = the keys that differ, best headline first, failed jobs last)."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from sweep.outputs.report import (
    PER_QUESTION_COLUMNS,
    comparison_markdown,
    comparison_rows,
    differing_keys,
    format_value,
    read_reports,
    result_metrics,
    write_per_question,
    write_report,
)


def _report(size: int, boundary: str, headline: float | None, status: str = "FINISHED") -> dict:
    return {"config": {"chunk": {"size": size, "boundary": boundary}, "eval": {"k": [1, 5]}},
            "status": status, "headline": {"metric": "recall_at_5", "value": headline},
            "metrics": {"recall_at_5": headline, "mrr": 0.5}}


def test_write_report_stores_non_finite_numbers_as_null(tmp_path: Path) -> None:
    path = write_report(tmp_path, {"metrics": {"a": math.nan, "b": [math.inf, 1.5]}, "n": 3})
    # Strict JSON: json.loads hands NaN/Infinity tokens to parse_constant, which refuses them.
    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(path.read_text(), parse_constant=refuse)
    assert data == {"metrics": {"a": None, "b": [None, 1.5]}, "n": 3}


def test_read_reports_in_job_number_order_skipping_unreadable(tmp_path: Path) -> None:
    for name in ("10", "2", "notes", "1"):
        write_report(tmp_path / name, {"job": name})
    (tmp_path / "3").mkdir()
    (tmp_path / "3" / "report.json").write_text("{ half a report")
    assert [r["job"] for _, r in read_reports(tmp_path)] == ["1", "2", "10", "notes"]


def test_result_metrics_drop_machine_and_cache_measurements() -> None:
    metrics = {"recall_at_5": 0.7, "latency_end_to_end_p50_ms": 3.0, "time_embed_s": 1.0,
               "index_s": 0.2, "n_texts_encoded": 40, "n_chunks": 12}
    assert result_metrics(metrics) == {"recall_at_5": 0.7, "n_chunks": 12}


def test_differing_keys_compare_values_including_lists_and_missing() -> None:
    rows = [{"a": 1, "b": [1, 2], "c": "x"}, {"a": 1, "b": [1, 3], "c": "x", "d": None},
            {"a": 1, "b": [1, 2], "c": "x"}]
    # "d" is missing in two rows and None in one: the same value (None) everywhere.
    assert differing_keys(rows) == ["b"]


def test_comparison_rows_best_first_and_failed_last() -> None:
    reports = [_report(128, "fixed", 0.6), _report(256, "fixed", None, status="FAILED"),
               _report(512, "fixed", 0.8), _report(128, "heading", 0.7)]
    axes, rows = comparison_rows(reports)
    # The failed job does not decide the axes; eval.k is the same everywhere.
    assert axes == ["chunk.boundary", "chunk.size"]
    assert [(r["chunk.size"], r["chunk.boundary"], r["status"]) for r in rows] == [
        (512, "fixed", "FINISHED"), (128, "heading", "FINISHED"), (128, "fixed", "FINISHED"),
        (256, "fixed", "FAILED")]
    assert rows[0]["headline"] == 0.8 and rows[0]["mrr"] == 0.5 and rows[0]["ndcg_at_5"] is None


def test_format_value() -> None:
    assert [format_value(v) for v in (None, math.nan, 0.12345, 123.6, 7, "x")] == [
        "-", "-", "0.123", "124", "7", "x"]
    # a tiny non-zero figure (a served model's dollars) keeps two significant digits
    assert [format_value(v) for v in (0.00033484, -0.0001, 0.0, 0.0005)] == [
        "0.00033", "-0.0001", "0.000", "0.001"]


def test_comparison_markdown_keeps_whole_rows_within_the_limit() -> None:
    reports = [_report(100 + i, "fixed" if i % 2 else "heading", i / 100) for i in range(40)]
    axes, rows = comparison_rows(reports)
    full = comparison_markdown(axes, rows)
    lines = full.splitlines()
    assert lines[0].startswith("| rank | chunk.boundary | chunk.size | headline |")
    assert len(lines) == 2 + 40 and lines[2].startswith("| 1 | fixed | 139 | 0.390 |")
    short = comparison_markdown(axes, rows, max_chars=1000)
    assert len(short) <= 1000
    kept = [x for x in short.splitlines() if x.startswith("|")]
    assert kept == lines[: len(kept)] and 2 < len(kept) < 42  # whole rows, best first
    assert short.splitlines()[-1] == f"... {42 - len(kept)} more rows in comparison.md"


def test_a_key_missing_from_older_rows_is_not_an_axis() -> None:
    from sweep.outputs.report import differing_keys

    old = {"chunk.size": 128, "chunk.boundary": "fixed"}
    new = {"chunk.size": 256, "chunk.boundary": "fixed", "corpus.max_file_mb": 100}
    newer = {"chunk.size": 512, "chunk.boundary": "fixed", "corpus.max_file_mb": 50}
    assert differing_keys([old, new]) == ["chunk.size"]
    assert differing_keys([old, new, newer]) == ["chunk.size", "corpus.max_file_mb"]


def _index_report(kind: str, ef: int, headline: float, chash: str) -> dict:
    return {"config": {"chunk": {"size": 256}, "index": {"kind": kind, "ef_search": ef}},
            "config_hash": chash, "status": "FINISHED",
            "headline": {"metric": "recall_at_5", "value": headline},
            "metrics": {"recall_at_5": headline}}


def test_jobs_of_one_configuration_are_one_row_and_unread_settings_are_na() -> None:
    # `index=exact,hnsw index.ef_search=8,64`: exact search reads no ef_search, so its two
    # jobs share a config_hash (the second was resumed from the first and carries its report).
    reports = [_index_report("exact", 8, 0.75, "e"), _index_report("exact", 8, 0.75, "e"),
               _index_report("hnsw", 8, 0.70, "h8"), _index_report("hnsw", 64, 0.75, "h64")]
    axes, rows = comparison_rows(reports)
    assert axes == ["index.ef_search", "index.kind"]
    assert [(r["index.kind"], r["index.ef_search"], r["n_jobs"]) for r in rows] == [
        ("exact", "n/a", 2), ("hnsw", 64, 1), ("hnsw", 8, 1)]
    assert "| 1 | n/a | exact | 0.750 |" in comparison_markdown(axes, rows)


def test_failed_jobs_are_never_merged() -> None:
    failed = {"config": {"index": {"kind": "exact", "ef_search": 8}}, "config_hash": "e",
              "status": "FAILED", "error": "boom"}
    reports = [_index_report("exact", 8, 0.75, "e"), failed, _index_report("hnsw", 8, 0.7, "h")]
    _, rows = comparison_rows(reports)
    assert [r["status"] for r in rows] == ["FINISHED", "FINISHED", "FAILED"]


def test_per_question_csv_is_what_dictwriter_writes(tmp_path: Path) -> None:
    """Key columns first, then every other key sorted; None and missing cells empty; text
    with commas, quotes and newlines quoted: byte for byte what csv.DictWriter gives."""
    rows = [{"qid": "q1", "question": 'a "quoted", two-line\nquestion', "mrr": 0.1 + 0.2,
             "zeta": 3, "first_relevant_rank": None, "alpha": True},
            {"qid": "q2", "question": "plain", "status": "orphan", "beta": "x,y"}]
    path = write_per_question(tmp_path, rows)
    columns = [*PER_QUESTION_COLUMNS, "alpha", "beta", "zeta"]
    expected = io.StringIO()
    writer = csv.DictWriter(expected, fieldnames=columns, restval="")
    writer.writeheader()
    writer.writerows({k: v for k, v in r.items() if v is not None} for r in rows)
    assert path.read_bytes() == expected.getvalue().encode()
    back = list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    assert back[0]["question"] == rows[0]["question"] and back[0]["mrr"] == "0.30000000000000004"
    assert back[0]["first_relevant_rank"] == "" and back[1]["zeta"] == ""


def _emb_report(option: str, size: int, batch: int, headline: float) -> dict:
    local = option == "minilm"
    embedding = {"name": "minilm" if local else "served_minilm",
                 "family": "sentence_transformers" if local else "openai",
                 "base_url": "" if local else "http://127.0.0.1:7997/v1",
                 "max_texts_per_request": batch}
    return {"config": {"chunk": {"size": size}, "embedding": embedding},
            "choices": {"embedding": option, "chunk": "default"},
            "config_hash": f"{option}{size}{batch}", "status": "FINISHED",
            "headline": {"metric": "recall_at_5", "value": headline},
            "metrics": {"recall_at_5": headline}}


def test_a_swept_config_group_is_one_column_not_one_per_key_its_options_set() -> None:
    # `embedding=minilm,served_minilm chunk.size=128,256`: two axes, though the two options
    # differ on name, family and base_url (issue 30: 7 "swept" columns, a long best: line)
    reports = [_emb_report(o, s, 64, 0.5 + i / 10)
               for i, (o, s) in enumerate([("minilm", 128), ("served_minilm", 128),
                                           ("minilm", 256), ("served_minilm", 256)])]
    axes, rows = comparison_rows(reports)
    assert axes == ["chunk.size", "embedding"]
    assert [(r["chunk.size"], r["embedding"]) for r in rows] == [
        (256, "served_minilm"), (256, "minilm"), (128, "served_minilm"), (128, "minilm")]
    assert "embedding.family" not in rows[0]
    assert comparison_markdown(axes, rows).startswith("| rank | chunk.size | embedding | headline")


def test_a_key_swept_inside_a_swept_group_stays_a_column() -> None:
    reports = [_emb_report(o, 128, b, 0.5 + i / 10)
               for i, (o, b) in enumerate([("minilm", 16), ("served_minilm", 16),
                                           ("minilm", 64), ("served_minilm", 64)])]
    axes, _ = comparison_rows(reports)
    assert axes == ["embedding", "embedding.max_texts_per_request"]


def test_reports_without_choices_keep_every_differing_key() -> None:
    reports = [_emb_report("minilm", 128, 64, 0.5), _emb_report("served_minilm", 128, 64, 0.6)]
    for rep in reports:
        del rep["choices"]
    axes, _ = comparison_rows(reports)
    assert axes == ["embedding.base_url", "embedding.family", "embedding.name"]


def test_an_experiment_option_is_no_axis_its_keys_are() -> None:
    # `sweep rerun --top 2`: one experiment file per configuration; the sizes differ, the
    # experiment names only say so again
    reports = [_emb_report("minilm", s, 64, h) for s, h in ((128, 0.6), (256, 0.5))]
    for n, rep in enumerate(reports, 1):
        rep["choices"]["experiment"] = f"rerun/r0{n}-size-{rep['config']['chunk']['size']}"
    axes, rows = comparison_rows(reports)
    assert axes == ["chunk.size"]
    assert [r["chunk.size"] for r in rows] == [128, 256] and "experiment" not in rows[0]


def test_a_configuration_whose_model_saw_cut_chunks_is_marked(capsys, tmp_path: Path) -> None:
    from sweep.outputs.report import print_comparison, write_comparison

    cut, whole = _report(512, "fixed", 0.8), _report(128, "fixed", 0.7)
    cut["metrics"]["truncated_fraction"] = 0.9135
    whole["metrics"]["truncated_fraction"] = 0.0
    axes, rows = comparison_rows([whole, cut])
    md = comparison_markdown(axes, rows)
    assert md.startswith("| rank | chunk.size | headline | model saw |")
    assert "| 1 | 512 | 0.800 | cut 91% |" in md and "| 2 | 128 | 0.700 | whole |" in md
    print_comparison(axes, rows)
    out = capsys.readouterr().out
    best = next(line for line in out.splitlines() if line.startswith("best:"))
    assert best.endswith("ahead of the runner-up; model saw cut 91%)")
    assert "read only the first max_seq_length tokens of 91% of this configuration's" in out
    csv_path, _ = write_comparison(tmp_path, axes, rows)
    header, first = csv_path.read_text().splitlines()[:2]
    assert "truncated_fraction" in header.split(",") and "0.9135" in first.split(",")


def test_no_cut_no_marker(capsys) -> None:
    # a sweep whose model read every chunk whole keeps the table it always had
    a, b = _report(128, "fixed", 0.8), _report(256, "fixed", 0.7)
    a["metrics"]["truncated_fraction"] = 0.0
    axes, rows = comparison_rows([a, b])
    assert "model saw" not in comparison_markdown(axes, rows)
    from sweep.outputs.report import print_comparison

    print_comparison(axes, rows)
    out = capsys.readouterr().out
    assert "model saw" not in out and "cut" not in out
