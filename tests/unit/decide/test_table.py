"""sweep compare / export / flips: statistics and choices with hand-made numbers, the commands
on a small hand-built MLflow store (export -> re-run with the real model: tests/e2e/)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers import ROOT
from sweep.cli.export import cmd_export
from sweep.cli.flips import cmd_flips
from sweep.common.errors import SweepError
from sweep.config.identity import RESULT_SECTIONS
from sweep.config.naming import command_line_keys, config_name
from sweep.decide import export, present, runs, stats
from sweep.outputs import tracking

# --- paired bootstrap -----------------------------------------------------------------------


def test_bootstrap_identical_scores_are_tied():
    a = [1, 0, 1, 1, 0, 1]
    diff, lo, hi, p = stats.paired_bootstrap(a, a)
    assert (diff, lo, hi, p) == (0.0, 0.0, 0.0, 1.0)


def test_bootstrap_clear_difference_is_distinguishable():
    a = [1.0] * 40
    b = [1.0] * 10 + [0.0] * 30
    diff, lo, hi, p = stats.paired_bootstrap(a, b)
    assert diff == pytest.approx(0.75)
    assert 0 < lo <= diff <= hi <= 1
    assert p < 1e-3


def test_bootstrap_small_difference_is_not_distinguishable():
    # One question of 30 differs: the interval must include zero.
    a = [1.0] * 15 + [0.0] * 15
    b = list(a)
    b[0] = 0.0
    diff, lo, hi, p = stats.paired_bootstrap(a, b)
    assert diff == pytest.approx(1 / 30)
    assert lo <= 0 <= hi
    assert p > 0.05


def test_bootstrap_is_deterministic_and_seeded():
    a = [0.2, 0.9, 0.4, 1.0, 0.0, 0.7, 0.3]
    b = [0.1, 0.8, 0.6, 0.5, 0.0, 0.9, 0.1]
    assert stats.paired_bootstrap(a, b) == stats.paired_bootstrap(a, b)
    assert stats.paired_bootstrap(a, b, seed=1) != stats.paired_bootstrap(a, b, seed=0)
    # Antisymmetric: swapping the sides flips the difference and the interval.
    d1, lo1, hi1, p1 = stats.paired_bootstrap(a, b)
    d2, lo2, hi2, p2 = stats.paired_bootstrap(b, a)
    assert d2 == pytest.approx(-d1) and p2 == pytest.approx(p1)
    assert lo2 == pytest.approx(-hi1) and hi2 == pytest.approx(-lo1)


def test_bootstrap_p_matches_interval():
    # p < 0.05 exactly when the 95% interval excludes zero.
    import numpy as np

    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 2, 40).astype(float)
        b = np.where(rng.random(40) < 0.2, 1 - a, a)
        _, lo, hi, p = stats.paired_bootstrap(a, b, n=2000)
        assert (p < 0.05) == (lo > 0 or hi < 0)


def test_bootstrap_rejects_unpaired_input():
    with pytest.raises(ValueError):
        stats.paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError):
        stats.paired_bootstrap([], [])


def test_verdict_text():
    best = [1.0] * 40
    worse = [1.0] * 10 + [0.0] * 30
    v = stats.verdict_against_best(best, worse, "recall_at_5")
    assert not v.tied and v.text.startswith("worse, p") and "95% CI" in v.text
    v = stats.verdict_against_best(best, best, "recall_at_5")
    assert v.tied and v.text.startswith("tied with best")
    # Lower is better for prompt cost: more tokens than the best is worse.
    v = stats.verdict_against_best([100.0] * 20, [300.0] * 20, "context_tokens_at_5")
    assert not v.tied


def test_pairing_on_qid_keeps_questions_scored_in_both():
    a = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4"], "status": ["scored"] * 3 + ["orphan"],
                      "recall_at_5": [1, 0, 1, None]})
    b = pd.DataFrame({"qid": ["q4", "q3", "q2", "q5"], "status": ["scored"] * 4,
                      "recall_at_5": [1, 0, 1, 1]})
    qids, va, vb = stats.paired_scores(a, b, "recall_at_5")
    assert qids == ["q2", "q3"]
    assert va == [0.0, 1.0] and vb == [1.0, 0.0]


# --- choosing and writing the winner --------------------------------------------------------


def _row(run_id, value, tokens, latency, tied=True):
    return {"run_id": run_id, "recall_at_5": value, "context_tokens_at_5": tokens,
            "latency_end_to_end_p95_ms": latency, "tied": tied}


ARGS = ("recall_at_5", "context_tokens_at_5", "latency_end_to_end_p95_ms")


def test_rank_rows_orders_by_metric_then_cost():
    rows = [_row("a", 0.5, 100, 1), _row("b", 0.9, 900, 1), _row("c", 0.9, 300, 1),
            _row("d", None, 1, 1)]
    ranked = runs.rank_rows(rows, *ARGS)
    assert [r["run_id"] for r in ranked] == ["c", "b", "a", "d"]
    ranked = runs.rank_rows(rows, "context_tokens_at_5", "context_tokens_at_5",
                              "latency_end_to_end_p95_ms")
    assert ranked[0]["run_id"] == "d"


def test_swept_params_ignores_tracking():
    rows = [{"chunk.size": "128", "chunk.boundary": "fixed", "tracking.uri": "x"},
            {"chunk.size": "256", "chunk.boundary": "fixed", "tracking.uri": "y"}]
    assert runs.swept_params(rows) == ["chunk.size"]


CONFIG = {
    "corpus": {"name": "demo", "path": "/p/data/demo/corpus"},
    "golden": {"name": "demo", "path": "/p/data/demo/golden.jsonl"},
    "chunk": {"boundary": "heading", "size": 256, "overlap": 0, "header": "path",
              "tokenizer": "minilm"},
    "embedding": {"name": "minilm", "family": "sentence_transformers"},
    "retrieval": {"method": "dense", "depth": 100},
    "rerank": {"method": "none"},
    "index": {"kind": "exact", "ef_search": 64},
    "eval": {"k": [1, 3, 5, 10], "prompt_k": 5, "headline": "recall_at_5"},
    "tracking": {"enabled": True, "uri": "sqlite:////p/mlflow.db"},
}


def test_config_name():
    assert config_name(CONFIG) == "heading-256-ov0-path-minilm"
    other = {**CONFIG, "embedding": {"name": "sentence-transformers/all-mpnet-base-v2"},
             "retrieval": {"method": "hybrid"}, "rerank": {"method": "cross_encoder"}}
    assert config_name(other) == "heading-256-ov0-path-all-mpnet-base-v2-hybrid-rerank"
    approx = {**CONFIG, "index": {"kind": "ivf_pq"}}
    assert config_name(approx) == "heading-256-ov0-path-minilm-ivf-pq"
    int8 = {**CONFIG, "embedding": {"name": "minilm", "backend": "onnx", "precision": "int8"}}
    assert config_name(int8) == "heading-256-ov0-path-minilm-onnx-int8"
    reference = {**CONFIG, "embedding": {"name": "minilm", "backend": "torch",
                                         "precision": "fp32"}}
    assert config_name(reference) == "heading-256-ov0-path-minilm"
    # A swept setting the fixed parts leave out is named when it applies to the configuration
    hnsw = {**CONFIG, "index": {"kind": "hnsw", "ef_search": 64, "m": 16}}
    assert config_name(hnsw, ["chunk.size", "index.ef_search"]) == \
        "heading-256-ov0-path-minilm-hnsw-ef_search-64"
    # ... and not when it does not (ef_search with exact search), nor when it changes no
    # result (retrieval.diagnose) or is no setting of the configuration (tracking.uri).
    assert config_name(CONFIG, ["index.ef_search", "retrieval.diagnose", "tracking.uri"]) == \
        "heading-256-ov0-path-minilm"


def test_command_line_keys_are_the_settings_a_job_sets_one_by_one():
    overrides = ["chunk.size=128", "retrieval=bm25", "+index.ef_search=64", "hydra.verbose=true",
                 "embedding/extra=x", "~eval.k"]
    assert command_line_keys(overrides) == ["chunk.size", "index.ef_search"]


def test_winner_sections_drop_default_paths_and_tracking():
    defaults = {"corpus": CONFIG["corpus"], "golden": CONFIG["golden"]}
    sections = export.winner_sections(CONFIG, defaults)
    assert list(sections) == ["chunk", "embedding", "retrieval", "rerank", "index", "eval"]
    moved = {**CONFIG, "golden": {"name": "mine", "path": "/x/golden.jsonl"}}
    assert "golden" in export.winner_sections(moved, defaults)
    assert "corpus" not in export.winner_sections(moved, defaults)
    text = export.winner_yaml(sections, ["a header", "", "metrics: x"])
    assert text.splitlines()[0] == "# @package _global_"
    assert yaml.safe_load(text) == sections
    assert "hydra" not in text and "tracking" not in text


def test_flip_rows_binary_and_graded():
    a = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4"], "status": ["scored"] * 4,
                      "recall_at_5": [1, 0, 1, 0.5], "first_relevant_rank": [2, 9, 1, 4],
                      "question": ["one", "two", "three", "four"]})
    b = pd.DataFrame({"qid": ["q1", "q2", "q3", "q4"], "status": ["scored"] * 4,
                      "recall_at_5": [0, 1, 1, 1.0], "first_relevant_rank": [12, 3, 1, 1],
                      "question": ["one", "two", "three", "four"]})
    flips = {r["qid"]: r for r in export.flip_rows(a, b, "recall_at_5")}
    assert set(flips) == {"q1", "q2", "q4"}
    assert flips["q1"]["better"] == "a" and (flips["q1"]["rank_a"], flips["q1"]["rank_b"]) == (2, 12)
    assert flips["q2"]["better"] == "b"
    assert flips["q4"]["better"] == "b"


# --- the commands on a hand-built MLflow store (no model) ------------------------------------


def _job(folder: Path, size: int, boundary: str, scores: list[int], tokens: float,
         model: str = "minilm", fingerprints: dict | None = None) -> dict:
    config = json.loads(json.dumps(CONFIG))
    config["chunk"].update(size=size, boundary=boundary)
    config["embedding"]["name"] = model
    config["corpus"]["path"] = str(ROOT / "data" / "demo" / "corpus")
    config["golden"]["path"] = str(ROOT / "data" / "demo" / "golden.jsonl")
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with (folder / "per_question.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["qid", "question", "status", "first_relevant_rank", "recall_at_5", "mrr"])
        for i, s in enumerate(scores):
            w.writerow([f"q{i:02d}", f"question {i}", "scored", 1 if s else 20, s, float(s)])
    recall = sum(scores) / len(scores)
    suffix = "" if model == "minilm" else model
    report = {"status": "FINISHED", "config": config,
              "config_hash": f"h{size}{boundary}{suffix}",
              "fingerprints": fingerprints or {},
              "headline": {"metric": "recall_at_5", "value": recall},
              "metrics": {"recall_at_5": recall, "mrr": recall, "context_tokens_at_5": tokens,
                          "latency_end_to_end_p95_ms": 10.0, "n_questions": len(scores)}}
    (folder / "report.json").write_text(json.dumps(report))
    return report


@pytest.fixture(scope="module")
def fake_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "chunk-sweep-demo", run_name="sweep test",
                                      params={"overrides": "chunk.size=128,256"},
                                      tags={"sweep_dir": str(root / "multirun")})
    jobs = {
        # 40 questions: a and b differ on one question (tied); c is far worse.
        "a": (256, "heading", [1] * 30 + [0] * 10, 1200.0),
        "b": (128, "heading", [1] * 29 + [0] * 11, 600.0),
        "c": (128, "fixed", [1] * 10 + [0] * 30, 500.0),
    }
    ids = {}
    for name, (size, boundary, scores, tokens) in jobs.items():
        folder = root / "multirun" / name
        report = _job(folder, size, boundary, scores, tokens)
        ids[name] = tracking.log_job(
            uri, "chunk-sweep-demo", run_name=name, plain_config=report["config"],
            report=report, artifacts=[folder / f for f in
                                      ("report.json", "per_question.csv", "config.yaml")],
            parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    return {"uri": uri, "root": root, "parent": parent, "ids": ids}


def test_compare_table_from_mlflow(fake_store, tmp_path):
    t = runs.load_table(fake_store["uri"], None, "latest", None, tmp_path, n=2000)
    assert t.parent["run_id"] == fake_store["parent"]
    assert t.metric == "recall_at_5"  # the headline in report.json
    assert t.swept == ["chunk.boundary", "chunk.size"]
    ids = fake_store["ids"]
    assert [r["run_id"] for r in t.rows] == [ids["a"], ids["b"], ids["c"]]
    assert t.rows[1]["tied"] and t.rows[1]["verdict"].startswith("tied with best")
    assert not t.rows[2]["tied"] and t.rows[2]["verdict"].startswith("worse, p")
    assert t.rows[2]["n_pairs"] == 40
    # One name for a configuration (issue 42): the table's is `config_name`'s, which `sweep
    # export` names the winner's file by (test_export_and_flips_commands: a's file).
    assert [r["name"] for r in t.rows] == ["heading-256-ov0-path-minilm",
                                           "heading-128-ov0-path-minilm",
                                           "fixed-128-ov0-path-minilm"]
    assert present.table_json(t)["rows"][0]["name"] == "heading-256-ov0-path-minilm"
    plots = present.plot_table(t, tmp_path / "plots")
    assert all(p.is_file() and p.stat().st_size > 1000 for p in plots)


def test_compare_errors(fake_store, tmp_path):
    with pytest.raises(SweepError, match=r"unknown metric 'recal_at_5' \(available: .*mrr"):
        runs.load_table(fake_store["uri"], None, "latest", "recal_at_5", tmp_path)
    with pytest.raises(SweepError, match="no run with id"):
        runs.load_table(fake_store["uri"], None, "0" * 32, None, tmp_path)
    with pytest.raises(SweepError, match="no experiment named"):
        runs.load_table(fake_store["uri"], "nope", "latest", None, tmp_path)
    with pytest.raises(SweepError, match="no MLflow store"):
        runs.load_table(f"sqlite:///{tmp_path / 'none.db'}", None, "latest", None, tmp_path)


def test_export_and_flips_commands(fake_store, tmp_path, capsys):
    uri = fake_store["uri"]
    code = cmd_export(["--metric", "recall_at_5", "--tracking-uri", uri,
                      "--out-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    # a is the best; b is tied with it on 40 questions and reads half the tokens: offered,
    # not exported (one question differs: "not shown different" is not "shown equal").
    assert "decided by: best recall_at_5 (the top row of `sweep compare`" in out
    assert re.search(r"cheaper than the best: boundary=heading, size=128 reads 600 fewer "
                     r"context_tokens_at_5 \(600 vs 1200, 50% fewer\); may cost -0.025 "
                     r"recall_at_5 \(diff -0.025, 95% CI \[-0.075, \+0.000\], paired over 40 "
                     r"questions\); not shown within ±0.02 of the best", out)
    path = tmp_path / "heading-256-ov0-path-minilm.yaml"
    text = path.read_text()
    assert text.startswith("# @package _global_\n")
    assert fake_store["parent"] in text and "recall_at_5=0.750" in text
    body = yaml.safe_load(text)
    # CONFIG is a run recorded before the assembly section: its defaults, nothing to export
    assert body["chunk"]["size"] == 256 and set(body) == set(RESULT_SECTIONS) - {"assembly"}
    assert tracking.run_info(uri, fake_store["ids"]["a"])["tags"]["winner"] == "true"
    # Written outside experiments/: the gate needs it there first, and says so.
    assert f"gate it: copy it to {export.WINNERS_DIR}/, then sweep baseline update " \
        f"--from-export {export.WINNERS_DIR / path.name}" in out
    # Asked for the cheaper one: its difference (-0.025) is beyond 0.02 already; within 0.05
    # 40 questions cannot show it (half-width 0.0375 must shrink to 0.025: 40 x 1.5^2 = 90).
    for margin, why in (("0.02", "its difference alone is beyond ±0.02"),
                        ("0.05", "too few questions to show that; about 90 could")):
        code = cmd_export(["--prefer", "cheaper", "--margin", margin, "--tracking-uri", uri,
                           "--out-dir", str(tmp_path / "c")])
        out = capsys.readouterr().out
        assert code == 0 and f"(run {fake_store['ids']['a']}," in out
        assert f"--prefer cheaper: the cheaper configuration is not shown within ±{margin}" in out
        assert why in out and "kept the best" in out
    assert (tmp_path / "c" / "heading-256-ov0-path-minilm.yaml").is_file()

    code = cmd_flips([fake_store["ids"]["a"], fake_store["ids"]["c"],
                   "--tracking-uri", uri])
    out = capsys.readouterr().out
    assert code == 0
    assert "A right, B wrong (20)" in out and "B right, A wrong (0)" in out
    assert re.search(r"q10 .*first_relevant_rank A=1 B=20", out)
    with pytest.raises(SweepError, match="no run with id"):
        cmd_flips(["f" * 32, fake_store["ids"]["c"], "--tracking-uri", uri])


# --- export -> re-run reproduces the metrics (real model, real sweep) ----------------------


def test_winners_folder_is_on_the_search_path(tmp_path: Path) -> None:
    # `experiment=winners/NAME` resolves through conf/experiment -> experiments/, where
    # `sweep export` writes by default.
    from sweep.config.compose import compose
    from sweep.config.schema import conf_dir

    assert (conf_dir() / "experiment" / "winners").resolve() == export.WINNERS_DIR.resolve()
    # An exported winner composes as an experiment. It is written to a folder of its own on
    # the search path, not into the repository's experiments/winners/.
    folder = tmp_path / "search" / "experiment" / "winners"
    folder.mkdir(parents=True)
    (folder / "w.yaml").write_text(export.winner_yaml(
        {"chunk": {"size": 192, "boundary": "heading"}}, ["test"]))
    cfg = compose(["experiment=winners/w", f"hydra.searchpath=[file://{tmp_path / 'search'}]"])
    assert cfg.chunk.size == 192 and cfg.chunk.boundary.value == "heading"


def test_compare_shows_a_resumed_configuration_once_with_unread_settings_na(tmp_path):
    # `index=exact,hnsw index.ef_search=8,64`: the second exact job is the first one's
    # configuration (exact search reads no ef_search); it is resumed, and the sweep names
    # that run in a `resumed.<hash>` tag as well as holding it as a child.
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "chunk-sweep-demo", run_name="sweep idx",
                                      params={"overrides": "index=exact,hnsw"},
                                      tags={"sweep_dir": str(tmp_path / "multirun")})
    ids = {}
    for name, kind, ef, scores in [("exact", "exact", 8, [1] * 30 + [0] * 10),
                                   ("hnsw8", "hnsw", 8, [1] * 20 + [0] * 20),
                                   ("hnsw64", "hnsw", 64, [1] * 30 + [0] * 10)]:
        folder = tmp_path / "multirun" / name
        report = _job(folder, 256, "heading", scores, 1000.0)
        report["config"]["index"] = {"kind": kind, "ef_search": ef}
        report["config_hash"] = f"hash-{name}"
        (folder / "report.json").write_text(json.dumps(report))
        ids[name] = tracking.log_job(
            uri, "chunk-sweep-demo", run_name=name, plain_config=report["config"],
            report=report, artifacts=[folder / f for f in ("report.json", "per_question.csv")],
            parent_run_id=parent)
    tracking.tag_run(uri, parent, "resumed.hash-exact", ids["exact"])
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    t = runs.load_table(uri, None, "latest", None, tmp_path / "t", n=500)
    assert sorted(r["run_id"] for r in t.rows) == sorted(ids.values())
    assert t.swept == ["index.ef_search", "index.kind"]
    by_id = {r["run_id"]: r for r in t.rows}
    assert by_id[ids["exact"]]["index.ef_search"] == "n/a"
    assert by_id[ids["hnsw8"]]["index.ef_search"] == 8


# --- one order everywhere, and export's defaults (issue 30) ----------------------------------

def _tie_store(tmp_path: Path) -> tuple[str, dict[str, str], list[dict]]:
    """Four configurations with one recall: two also share their tokens (latency decides),
    and two share tokens and latency too (only the config hash can order them)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "chunk-sweep-demo", run_name="sweep ties",
                                      params={"overrides": "index.ef_search=8,16,32,64"},
                                      tags={"sweep_dir": str(tmp_path / "multirun")})
    ids, reports = {}, []
    for ef, tokens, latency in [(8, 900.0, 12.0), (16, 900.0, 9.0), (32, 700.0, 20.0),
                                (64, 700.0, 20.0)]:
        folder = tmp_path / "multirun" / str(ef)
        report = _job(folder, 256, "heading", [1] * 30 + [0] * 10, tokens)
        report["config"]["index"] = {"kind": "hnsw", "ef_search": ef}
        report["config_hash"] = f"hash-{100 - ef:03d}"  # 64 sorts first, 8 last
        report["metrics"]["latency_end_to_end_p95_ms"] = latency
        (folder / "report.json").write_text(json.dumps(report))
        reports.append(report)
        ids[ef] = tracking.log_job(
            uri, "chunk-sweep-demo", run_name=f"ef{ef}", plain_config=report["config"],
            report=report, artifacts=[folder / f for f in
                                      ("report.json", "per_question.csv", "config.yaml")],
            parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    return uri, ids, reports


def test_the_end_of_sweep_table_and_compare_break_ties_the_same_way(tmp_path):
    """Failed before: the end-of-sweep table kept job order on a tied headline (ef_search=8
    first), `sweep compare` ordered by tokens, latency and run id (another order)."""
    from sweep.outputs.report import comparison_rows

    uri, ids, reports = _tie_store(tmp_path)
    axes, rows = comparison_rows(reports)
    assert axes == ["index.ef_search"]
    # by hand: tokens 700 before 900; among the 700s the hash (64's sorts first); among the
    # 900s latency 9 (ef 16) before 12 (ef 8)
    assert [r["index.ef_search"] for r in rows] == [64, 32, 16, 8]
    t = runs.load_table(uri, None, "latest", None, tmp_path / "t", n=200)
    assert [r["run_id"] for r in t.rows] == [ids[64], ids[32], ids[16], ids[8]]


def test_export_defaults_to_the_headline_and_top_takes_the_first_row(tmp_path, capsys):
    """Failed before: without --metric, export exited 2; there was no way to take the top."""
    uri, ids, _ = _tie_store(tmp_path)
    assert cmd_export(["--tracking-uri", uri, "--out-dir", str(tmp_path / "w"),
                       "--name", "default"]) == 0
    out = capsys.readouterr().out
    assert "recall_at_5=0.750" in out
    # The best, ties broken as the table breaks them (tokens, latency, then config hash).
    assert f"(run {ids[64]}," in out
    assert ("decided by: best recall_at_5 (the top row of `sweep compare`; ties by fewer "
            "context_tokens_at_5, then lower latency_end_to_end_p95_ms, then config hash)") in out
    # ef 64 is the cheapest already: nothing cheaper to offer.
    assert "cheaper than the best" not in out
    assert tracking.run_info(uri, ids[64])["tags"]["winner"] == "true"
    assert cmd_export(["--top", "--tracking-uri", uri, "--out-dir", str(tmp_path / "w"),
                       "--name", "top"]) == 0
    out = capsys.readouterr().out
    assert f"(run {ids[64]}," in out and "decided by: best recall_at_5 (the top row" in out
    assert yaml.safe_load((tmp_path / "w" / "top.yaml").read_text())["index"]["ef_search"] == 64


def test_a_key_no_configuration_reads_differently_is_not_an_axis() -> None:
    """Failed before: a job reused from another sweep (exact search, index.ef_search=8 there,
    64 here) made index.ef_search a column of a sweep that never swept it."""
    from sweep.outputs.report import comparison_rows

    reports = []
    for size, ef in [(128, 8), (256, 64)]:
        cfg = json.loads(json.dumps(CONFIG))
        cfg["chunk"]["size"] = size
        cfg["index"] = {"kind": "exact", "ef_search": ef}
        reports.append({"status": "FINISHED", "config": cfg, "config_hash": f"h{size}",
                        "headline": {"metric": "recall_at_5", "value": size / 1000},
                        "metrics": {"recall_at_5": size / 1000}})
    axes, rows = comparison_rows(reports)
    assert axes == ["chunk.size"]
    assert all("index.ef_search" not in r for r in rows)


def test_compare_prints_corrected_verdicts_power_and_axes(fake_store, tmp_path, capsys):
    import math

    from sweep.cli.compare import cmd_compare

    uri = fake_store["uri"]
    code = cmd_compare(["--tracking-uri", uri, "--axes", "--plot", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert ("verdicts: paired bootstrap vs the best on recall_at_5 (10,000 resamples, seed 0, "
            "5%), Holm-corrected over all 3 pairs of the 3 configurations, as the best is picked "
            "from the same data (the chance of any false 'worse' in the table is at most 5%)"
            ) in out
    # Holm over the 3 pairs: a-c and b-c are tiny, so a-b keeps its own p (x 1).
    assert re.search(r"worse, p_holm<1e-04 \(p<1e-04; diff -0.500", out)
    assert re.search(r"tied with best, p_holm=(0\.\d+) \(p=\1;", out)
    # best a vs runner-up b: 40 questions, one differs (b misses q29).
    k = 1.959963985 + 0.841621234
    mde = k * math.sqrt(1 / 40) / math.sqrt(40 + k * k)
    assert (f"power, from best (boundary=heading, size=256) vs runner-up (boundary=heading, "
            f"size=128): this set (40 questions) can tell apart differences of "
            f"{100 * mde:.1f} points or more") in out
    assert "[1 of 40 questions differ; few: a rough figure]" in out
    # Each axis over the combinations of the others that have all its values (one each here).
    assert ("chunk.boundary: best heading (recall_at_5 0.725, over 1 combination of the others; "
            "best in 1 of 1); fixed -0.475") in out
    assert "chunk.size: best 256 (recall_at_5 0.750" in out
    assert "Pareto front of recall_at_5 against context_tokens_at_5 (cheapest first):" in out
    assert (tmp_path / "axes.png").stat().st_size > 1000

    code = cmd_compare(["--tracking-uri", uri, "--json", "--no-plot", "--correction", "none",
                        "--detect", "0.015", "--axes"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["correction"] == "none" and data["n_tests"] == 3
    assert data["power"]["detect"] == 0.015 and data["power"]["kind"] == "discordant"
    assert data["power"]["n_needed"] == math.ceil(k * k * (1 / 40 - 0.015**2) / 0.015**2)
    assert data["rows"][2]["p_adj"] is None and data["rows"][2]["verdict"].startswith("worse, p<1e-04 (diff")
    assert {a["axis"] for a in data["axes"]} == {"chunk.boundary", "chunk.size"}
    assert data["agreement"] == []  # one embedding model: nothing to agree on
    assert "sweep rerun --top 3 embedding=OTHER" in out_axes_offer(uri, capsys)
    front = next(f for f in data["fronts"] if f["cost"] == "context_tokens_at_5")
    # c (500 tokens, 0.25) < b (600, 0.725) < a (1200, 0.75)
    assert [p["run_id"] for p in front["points"]] == [fake_store["ids"][x] for x in "cba"]
    with pytest.raises(SystemExit):
        cmd_compare(["--tracking-uri", uri, "--detect", "0"])


def out_axes_offer(uri: str, capsys) -> str:
    from sweep.cli.compare import cmd_compare

    cmd_compare(["--tracking-uri", uri, "--axes", "--no-plot"])
    return capsys.readouterr().out


def test_the_audit_sizes_the_set_from_the_latest_sweep_on_it(fake_store, tmp_path):
    """The audit's power line: best (a) vs runner-up (b) of the sweep, on its headline, only
    over the configurations that scored the audited golden set."""
    import math

    from sweep.decide.decision import audit_power, sweep_power

    uri = fake_store["uri"]
    got = sweep_power(uri, None, "latest", None, tmp_path, 0.02)
    k = 1.959963985 + 0.841621234
    # a and b differ on 1 of 40 questions: psi = 1/40 (as in `sweep compare`)
    assert got["mde"] == pytest.approx(k * math.sqrt(1 / 40) / math.sqrt(40 + k * k))
    assert got["n_needed"] == math.ceil(k * k * (1 / 40 - 0.02**2) / 0.02**2)
    assert got["sweep"] == fake_store["parent"] and got["metric"] == "recall_at_5"
    assert got["pair_run_ids"] == [fake_store["ids"]["a"], fake_store["ids"]["b"]]
    assert got["line"].startswith(
        f"power, on recall_at_5 from sweep {fake_store['parent']}, best (boundary=heading, "
        "size=256) vs runner-up (boundary=heading, size=128): this set (40 questions) can tell "
        f"apart differences of {100 * got['mde']:.1f} points or more")
    assert got["n_needed"] == 483 and "2.0 points needs ~480 questions" in got["line"]
    # The runs carry no golden fingerprint: none scored the set of "abc".
    other = sweep_power(uri, None, "latest", "abc", tmp_path, 0.02)
    assert other["mde"] is None and other["n_needed"] is None
    assert other["line"].startswith(f"power: not estimated (sweep {fake_store['parent']} has 0 "
                                    "finished configuration(s) scored on this golden set")
    none = sweep_power(f"sqlite:///{tmp_path / 'none.db'}", None, "latest", None, tmp_path)
    assert none["mde"] is None and none["line"].startswith("power: not estimated (no sweep to "
                                                           "size it from (")
    assert audit_power(None, "m", None, "why")["line"] == "power: not estimated (why)"


# --- several sweeps in one table (issue 47) --------------------------------------------------


def _sweep(uri: str, root: Path, name: str, model: str, jobs: dict, golden: str = "g" * 64,
           drop: str | None = None, batch: int = 32) -> tuple[str, dict[str, str]]:
    """One sweep of ``model`` over chunk.size, its runs tagged with input fingerprints
    (``drop``: a metric its runs do not log; ``batch``: the embedding batch size and, with
    the cache folder and the golden set's name, a setting that changes no result)."""
    _, parent = tracking.start_parent(uri, "chunk-sweep-demo", run_name=name,
                                      params={"overrides": "chunk.size=128,256"},
                                      tags={"sweep_dir": str(root / name)})
    ids = {}
    for job, (size, scores) in jobs.items():
        folder = root / name / job
        report = _job(folder, size, "heading", scores, 100.0 * size / 128, model,
                      {"corpus": "c" * 64, "golden": golden})
        report["metrics"].pop(drop, None)
        report["config"]["embedding"]["batch_size"] = batch
        report["config"]["cache"] = {"dir": f"/cache/{batch}"}
        report["config"]["golden"]["name"] = f"demo-{batch}"
        ids[job] = tracking.log_job(
            uri, "chunk-sweep-demo", run_name=job, plain_config=report["config"], report=report,
            artifacts=[folder / f for f in ("report.json", "per_question.csv", "config.yaml")],
            parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])
    return parent, ids


def test_two_one_model_sweeps_join_and_say_the_best_size_differs_by_model(tmp_path, capsys):
    from sweep.cli.compare import cmd_compare

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    # The same 40 questions. minilm: 256 (0.75) beats 128 (0.50); minilm_static: 128 (0.70)
    # beats 256 (0.375).
    a, ids_a = _sweep(uri, tmp_path, "a", "minilm", {"a256": (256, [1] * 30 + [0] * 10),
                                                     "a128": (128, [1] * 20 + [0] * 20)})
    b, ids_b = _sweep(uri, tmp_path, "b", "minilm_static",
                      {"b128": (128, [1] * 28 + [0] * 12), "b256": (256, [1] * 15 + [0] * 25)},
                      batch=64)
    t = runs.load_table(uri, None, [a, b], None, tmp_path / "t", n=2000)
    # Each sweep alone varies chunk.size; the model, fixed within each, differs between them;
    # the batch size, cache folder and golden set's name differ too but change no result.
    assert {"embedding.batch_size", "cache.dir", "golden.name"} <= set(
        runs.differing_keys([r["params"] for r in t.rows]))
    assert t.swept == ["chunk.size", "embedding.name"]
    assert runs.joined_axes(["cache.dir", "chunk.size", "embedding.batch_size"],
                            [[{"embedding.batch_size": "8"}, {"embedding.batch_size": "16"}],
                             [{"embedding.batch_size": "32"}]]) == ["chunk.size",
                                                                    "embedding.batch_size"]
    assert [r["run_id"] for r in t.rows] == [ids_a["a256"], ids_b["b128"], ids_a["a128"],
                                             ids_b["b256"]]
    assert [r["recall_at_5"] for r in t.rows] == [0.75, 0.7, 0.5, 0.375]
    assert [p["run_id"] for p in t.joined] == [a, b]
    # Every row tested against the best of both sweeps, paired over the 40 questions.
    assert [r["n_pairs"] for r in t.rows[1:]] == [40, 40, 40]
    assert t.rows[1]["diff"] == pytest.approx(-0.05) and t.rows[3]["diff"] == pytest.approx(-0.375)
    # One sweep alone is the table it always was.
    alone = runs.load_table(uri, None, a, None, tmp_path / "alone", n=2000)
    assert alone.swept == ["chunk.size"] and alone.joined == []
    assert [r["run_id"] for r in alone.rows] == [ids_a["a256"], ids_a["a128"]]

    code = cmd_compare(["--tracking-uri", uri, "--sweep", a, "--sweep", b, "--axes",
                        "--no-plot"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"sweeps {a} (experiment chunk-sweep-demo, ")
    assert f", {b} (experiment chunk-sweep-demo, " in out.splitlines()[0]
    assert ": 4 configurations; best recall_at_5 first" in out.splitlines()[0]
    assert "does each axis's best hold under every embedding model (recall_at_5" in out
    # minilm's best 256 against its 128: -0.25; minilm_static's 128 against its 256: -0.325.
    assert re.search(r"  chunk\.size: the best differs by model: minilm 256 \(128 -0\.250 "
                     r"\[-\d\.\d{3}, -\d\.\d{3}\] worse\); minilm_static 128 \(256 -0\.325 "
                     r"\[-\d\.\d{3}, -\d\.\d{3}\] worse\)", out)
    # the table has the rows of both sweeps, each with its model
    lines = out.splitlines()
    for ids, model in ((ids_a, " minilm "), (ids_b, " minilm_static ")):
        for run_id in ids.values():
            assert model in next(line for line in lines if run_id in line)

    code = cmd_compare(["--tracking-uri", uri, "--sweep", a, "--sweep", b, "--axes",
                        "--no-plot", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["sweep"]["run_id"] == a and [s["run_id"] for s in data["sweeps"]] == [a, b]
    assert [r["sweep"] for r in data["rows"]] == [a, b, a, b]  # each row's own sweep
    assert [e["axis"] for e in data["agreement"]] == ["chunk.size"]
    assert data["agreement"][0]["best"] == {"minilm": 256, "minilm_static": 128}
    assert not data["agreement"][0]["holds"]
    # one sweep: no "sweeps" key, the JSON it always was
    cmd_compare(["--tracking-uri", uri, "--sweep", a, "--no-plot", "--json"])
    assert "sweeps" not in json.loads(capsys.readouterr().out)

    # Another golden set: refused in one line; a sweep named twice: refused.
    c, _ = _sweep(uri, tmp_path, "c", "minilm_static", {"c128": (128, [1] * 40)},
                  golden="f" * 64)
    with pytest.raises(SweepError, match=r"^cannot join the sweeps: they scored different "
                       r"golden sets \(sweep \w+: g{12}; sweep \w+: f{12}\); every "
                       "configuration of one comparison must be scored on the same questions"):
        runs.load_table(uri, None, [a, c], None, tmp_path / "c")
    with pytest.raises(SweepError, match="is named twice in --sweep"):
        runs.load_table(uri, None, [a, a], None, tmp_path / "twice")
    # Runs logged without a golden fingerprint cannot be shown to have scored the same questions.
    d, _ = _sweep(uri, tmp_path, "d", "minilm_static", {"d128": (128, [1] * 40)}, golden="")
    with pytest.raises(SweepError, match=f"the runs of sweep {d} carry no golden set fingerprint"):
        runs.ranked_table(uri, None, [a, d], None, tmp_path / "old")
    # A configuration in two sweeps (one config hash) is one row, from the first sweep named.
    f, ids_f = _sweep(uri, tmp_path, "f", "minilm", {"f256": (256, [1] * 30 + [0] * 10)})
    assert [r["run_id"] for r in runs.ranked_table(uri, None, [a, f], None,
                                                   tmp_path / "af").rows] == list(ids_a.values())
    fa = runs.ranked_table(uri, None, [f, a], None, tmp_path / "fa")
    assert [r["run_id"] for r in fa.rows] == [ids_f["f256"], ids_a["a128"]]
    assert fa.swept == ["chunk.size"] and [r["sweep"] for r in fa.rows] == [f, a]
    # A ranking metric one sweep never logged: refused, not ranked last unjudged.
    e, _ = _sweep(uri, tmp_path, "e", "minilm_static", {"e128": (128, [1] * 40)}, drop="mrr")
    with pytest.raises(SweepError, match=f"^cannot join the sweeps: sweep {e} has no mrr; "):
        runs.ranked_table(uri, None, [a, e], "mrr", tmp_path / "mrr")
    assert len(runs.ranked_table(uri, None, [a, e], "recall_at_5", tmp_path / "r").rows) == 3
