"""sweep.outputs.quant: the quantisation tax of a configuration run off torch fp32 against the
same configuration at torch fp32 in the same sweep, with hand-computed values."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from sweep.outputs.quant import Run, add_to_reports, overlap_at_k, references, taxes
from sweep.outputs.report import (
    comparison_markdown,
    comparison_rows,
    write_per_question,
    write_report,
)


def test_overlap_at_k_is_the_mean_share_of_the_reference_top_k_kept() -> None:
    ref = {"q1": ["a", "b", "c"], "q2": ["d", "e"], "q4": []}
    other = {"q1": ["b", "x", "a"], "q2": ["e", "d"], "q3": ["z"]}
    # k=2: q1 keeps b of {a, b} (1/2), q2 keeps both (1); q3 has no reference, q4 no top k
    assert overlap_at_k(ref, other, 2) == pytest.approx(0.75)
    # k=3: q1 keeps a, b of {a, b, c} (2/3); q2's reference has two ids, both kept (1)
    assert overlap_at_k(ref, other, 3) == pytest.approx((2 / 3 + 1) / 2)
    assert overlap_at_k(ref, ref, 1) == 1.0
    assert overlap_at_k(ref, {"q9": ["a"]}, 2) is None


def _flat(size: int, backend: str | None, precision: str | None, **extra: Any) -> dict:
    flat: dict[str, Any] = {"chunk.size": size, "chunk.boundary": "fixed", "eval.k": [1, 2],
                            "embedding.name": "minilm", "embedding.batch_size": 32,
                            "index.kind": "exact", "index.ef_search": 8,
                            "tracking.uri": "sqlite:///x.db", **extra}
    if backend is not None:
        flat["embedding.backend"] = backend
    if precision is not None:
        flat["embedding.precision"] = precision
    return flat


def _run(flat: dict, recall: float, mrr: float, golden: str = "g") -> Run:
    return Run(flat, {"recall_at_5": recall, "mrr": mrr}, {"corpus": "c", "golden": golden})


def test_each_configuration_off_the_reference_finds_the_same_one_at_it() -> None:
    runs = [
        _run(_flat(128, "torch", "fp32"), 0.8, 0.6),                      # 0: reference
        _run(_flat(128, "onnx", "int8"), 0.7, 0.5),                        # 1 -> 0
        _run(_flat(256, "onnx", "int8"), 0.9, 0.7),                        # 2: no reference
        _run(_flat(128, "openvino", "bf16", **{"index.ef_search": 64,     # 3 -> 0: ef_search is
                                                "embedding.batch_size": 8}), 0.8, 0.6),  # n/a
        _run(_flat(128, None, None), 0.8, 0.6),                            # 4: from before
        _run(_flat(128, "onnx", "int8"), 0.7, 0.5, golden="g2"),           # 5: other golden set
        _run(_flat(128, "onnx", "int8", **{"chunk.overlap": 32}), 0.7, 0.5),  # 6: other chunks
    ]
    assert references(runs) == {1: 0, 3: 0}
    # a run recorded before the axis ran torch fp32: it is a reference too
    assert references(runs[1:5])[0] == 3


def test_the_tax_is_the_reference_minus_this_one_and_the_overlaps_per_k() -> None:
    ref = _run(_flat(128, "torch", "fp32"), 0.8, 0.625)
    ref.retrieved = {"q1": ["a", "b"], "q2": ["c", "d"]}
    int8 = _run(_flat(128, "onnx", "int8"), 0.7, 0.5)
    int8.retrieved = {"q1": ["b", "a"], "q2": ["x", "c"]}
    found = taxes([ref, int8], ["recall_at_5", "mrr", "ndcg_at_5"])
    assert found == {1: {
        "quant_overlap_at_1": pytest.approx(0.0),  # a vs b, c vs x
        "quant_overlap_at_2": pytest.approx(0.75),  # q1 both, q2 one of two
        "quant_tax_recall_at_5": pytest.approx(0.1),
        "quant_tax_mrr": pytest.approx(0.125)}}  # ndcg_at_5: neither reports it
    # MLflow params are strings: eval.k too
    params = {k: str(v) for k, v in _flat(128, "onnx", "int8").items()}
    params["eval.k"] = "[1, 2]"
    ref_params = {k: str(v) for k, v in _flat(128, "torch", "fp32").items()}
    ref_params["eval.k"] = "[1, 2]"
    runs = [Run(ref_params, ref.metrics, ref.inputs, ref.retrieved),
            Run(params, int8.metrics, int8.inputs, int8.retrieved)]
    assert taxes(runs, ["mrr"])[1]["quant_overlap_at_2"] == pytest.approx(0.75)


def _job(folder: Path, backend: str, precision: str, recall: float,
         retrieved: dict[str, str], headline: str = "recall_at_5") -> tuple[Path, dict]:
    folder.mkdir(parents=True)
    report = {"status": "FINISHED", "config_hash": f"{backend}-{precision}",
              "config": {"chunk": {"size": 128}, "eval": {"k": [1, 2]},
                         "embedding": {"name": "minilm", "family": "sentence_transformers",
                                       "backend": backend,
                                       "precision": precision}},
              "headline": {"metric": headline, "value": recall},
              "metrics": {"recall_at_5": recall, "mrr": recall / 2, "ndcg_at_5": recall},
              "fingerprints": {"corpus": "c", "golden": "g", "model": backend + precision}}
    write_report(folder, report)
    write_per_question(folder, [{"qid": q, "status": "scored", "retrieved_ids": ids}
                                for q, ids in retrieved.items()])
    return folder, report


def test_the_end_of_sweep_table_shows_the_tax_of_each_configuration(tmp_path) -> None:
    items = [_job(tmp_path / "0", "torch", "fp32", 0.75, {"q1": "a b", "q2": "c d"}),
             _job(tmp_path / "1", "onnx", "int8", 0.5, {"q1": "a x", "q2": "d c"}),
             _job(tmp_path / "2", "openvino", "fp32", 0.75, {"q1": "a b", "q2": "c d"})]
    assert add_to_reports(items) == 2
    axes, rows = comparison_rows([r for _, r in items])
    assert axes == ["embedding.backend", "embedding.precision"]
    by_pair = {(r["embedding.backend"], r["embedding.precision"]): r for r in rows}
    assert by_pair[("onnx", "int8")]["quant_tax_recall_at_5"] == pytest.approx(0.25)
    assert by_pair[("onnx", "int8")]["quant_tax_mrr"] == pytest.approx(0.125)
    assert by_pair[("openvino", "fp32")]["quant_tax_recall_at_5"] == 0.0
    assert by_pair[("torch", "fp32")]["quant_tax_recall_at_5"] is None
    assert "| 3 | onnx | int8 | 0.500 |" in comparison_markdown(axes, rows)
    # the job's own report.json is not rewritten: the tax is a property of the sweep
    assert "quant_tax_mrr" not in (tmp_path / "1" / "report.json").read_text()


def test_another_headline_gets_its_own_tax_column(tmp_path) -> None:
    items = [_job(tmp_path / "0", "torch", "fp32", 0.75, {"q1": "a b"}, "ndcg_at_5"),
             _job(tmp_path / "1", "onnx", "int8", 0.5, {"q1": "a b"}, "ndcg_at_5")]
    add_to_reports(items)
    axes, rows = comparison_rows([r for _, r in items])
    assert rows[1]["quant_tax_ndcg_at_5"] == pytest.approx(0.25)
    assert "quant_tax_ndcg_at_5" in comparison_markdown(axes, rows).splitlines()[0]


def test_a_sweep_without_a_reference_reads_no_ranking(tmp_path) -> None:
    items = [_job(tmp_path / "0", "onnx", "int8", 0.5, {"q1": "a b"}),
             _job(tmp_path / "1", "onnx", "fp32", 0.75, {"q1": "a b"})]
    for folder, _ in items:
        (folder / "per_question.csv").unlink()  # nothing to pair with: nothing is read
    before = copy.deepcopy([r for _, r in items])
    assert add_to_reports(items) == 0
    assert [r for _, r in items] == before
