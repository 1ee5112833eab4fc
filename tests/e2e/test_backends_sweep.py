"""The quantisation tax end to end (slow): one sweep holding MiniLM at torch fp32 and at ONNX
int8, its end-of-sweep table and `sweep compare` with the tax columns, then the coarse-to-fine
path (`sweep rerun --top 1 embedding.precision=fp32`) on it."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli


def test_a_sweep_over_two_precisions_reports_the_tax_and_reruns_at_fp32(tmp_path: Path
                                                                         ) -> None:
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    common = [f"tracking.uri={uri}", f"cache.dir={tmp_path}/cache", "eval.latency_sample=0"]
    res = run_cli("-m", "sweep", "-m", "chunk.size=128", "chunk.boundary=heading,fixed",
                  "embedding=minilm,minilm_onnx_int8", f"hydra.sweep.dir={tmp_path}/sweep",
                  *common, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    # the end-of-sweep table: the two int8 configurations have the tax columns (the printed
    # header cuts long names such as quant_tax_recall_at_5 and, since the verdict column came
    # in, quant_overlap_at_10: comparison.csv has them whole)
    assert "quant_tax_mrr" in res.stdout and "quant_overlap_at_" in res.stdout
    header = (tmp_path / "sweep" / "comparison.csv").read_text().splitlines()[0].split(",")
    assert {"quant_tax_recall_at_5", "quant_tax_mrr", "quant_overlap_at_10"} <= set(header)
    reports = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/report.json")]
    precisions = sorted(r["config"]["embedding"]["precision"] for r in reports)
    assert precisions == ["fp32", "fp32", "int8", "int8"]
    # the export is made once, under cache.dir, and the vectors of each pair are kept apart
    assert len([p for p in (tmp_path / "cache" / "exports").iterdir() if p.is_dir()]) == 1
    assert len({r["fingerprints"]["model"] for r in reports}) == 2

    res = run_cli("-m", "sweep.cli", "compare", "--tracking-uri", uri, "--json", "--no-plot",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    table = json.loads(res.stdout)
    assert {"embedding.backend", "embedding.precision"} <= set(table["swept"])
    rows = {(r["embedding.precision"], r["chunk.boundary"]): r for r in table["rows"]}
    for boundary in ("heading", "fixed"):
        ref, int8 = rows[("fp32", boundary)], rows[("int8", boundary)]
        # the reference's headline minus this one's, as the table computes it
        metric = table["metric"]
        assert abs(int8[f"quant_tax_{metric}"] - (ref[metric] - int8[metric])) < 1e-9
        assert 0.0 <= int8["quant_overlap_at_10"] <= 1.0
        assert ref.get("quant_overlap_at_10") is None

    res = run_cli("-m", "sweep.cli", "rerun", "--top", "1", "--tracking-uri", uri,
                  "embedding.precision=fp32", "embedding.backend=torch",
                  "eval.latency_sample=0", f"cache.dir={tmp_path}/cache",
                  f"hydra.sweep.dir={tmp_path}/fine", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ranking before -> after" in res.stdout
