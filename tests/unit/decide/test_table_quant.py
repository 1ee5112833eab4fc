"""`sweep compare`'s quantisation tax columns, from MLflow-shaped rows (params are strings)."""

from __future__ import annotations

import pandas as pd
import pytest

from sweep.decide.runs import SweepTable, add_quant_tax


def _rec(run_id: str, backend: str, precision: str, recall: float, mrr: float) -> dict:
    params = {"chunk.size": "128", "eval.k": "[1, 2]", "embedding.family": "sentence_transformers",
              "embedding.backend": backend, "embedding.precision": precision}
    return {"run_id": run_id, "params": params, "inputs": {"corpus": "c", "golden": "g"},
            "recall_at_5": recall, "mrr": mrr}


def test_compare_adds_the_tax_columns_of_configurations_with_a_reference() -> None:
    rows = [_rec("r0", "torch", "fp32", 0.8, 0.5), _rec("r1", "onnx", "int8", 0.6, 0.25)]
    frames = {"r0": pd.DataFrame({"qid": ["1", "2"], "retrieved_ids": ["a b", "c d"]}),
              "r1": pd.DataFrame({"qid": ["1", "2"], "retrieved_ids": ["b a", float("nan")]})}
    t = SweepTable({}, "recall_at_5", ["embedding.backend", "embedding.precision"],
                   ["recall_at_5"], rows, frames)
    add_quant_tax(t)
    # (quant_overlap_at_10 joins them with an eval.k that has 10, as the ANN tax's does)
    assert t.shown == ["recall_at_5", "quant_tax_recall_at_5", "quant_tax_mrr"]
    assert rows[1]["quant_tax_recall_at_5"] == pytest.approx(0.2)
    assert rows[1]["quant_tax_mrr"] == pytest.approx(0.25)
    # question 2 returned nothing readable in r1: only question 1 is paired (a, b both kept)
    assert rows[1]["quant_overlap_at_1"] == 0.0 and rows[1]["quant_overlap_at_2"] == 1.0
    assert "quant_tax_mrr" not in rows[0]
