"""The winner a sweep hands over, on hand-made per-question results: the best unless a cheaper
configuration is shown equal within the margin and asked for (issue 45)."""

from __future__ import annotations

import math

import pytest

from sweep.common.errors import SweepError
from sweep.decide import stats, winner
from sweep.decide.decision import decide_sweep

METRIC, COST, LATENCY = "recall_at_5", "context_tokens_at_5", "latency_end_to_end_p95_ms"


def _table(per_config: list[list[int]], tokens: list[float], n: int = 2000):
    """Rows (best first, as the table ranks them) and their verdicts against the best, from
    0/1 scores per question."""
    scores = [{f"q{i:04d}": float(v) for i, v in enumerate(s)} for s in per_config]
    rows = [{METRIC: sum(s) / len(s), COST: t, LATENCY: 10.0} for s, t in
            zip(per_config, tokens, strict=True)]
    verdicts = stats.table_verdicts(scores, METRIC, n=n)
    return rows, verdicts, scores


def test_a_small_tied_set_keeps_the_best():
    # 20 questions: the cheaper one loses 5 the best finds and finds 2 it misses (0.60 vs
    # 0.75): not distinguishable on 20 questions, and far from shown equal.
    best = [1] * 15 + [0] * 5
    cheap = [0] * 5 + [1] * 12 + [0] * 3
    rows, verdicts, _ = _table([best, cheap], [900.0, 300.0])
    assert verdicts[0].tied  # "not shown different" ...
    i, rule, offer = winner.choose(rows, verdicts, METRIC, COST, LATENCY)
    assert i == 0 and rule.startswith("best recall_at_5")
    assert offer is not None and offer.index == 1 and not offer.equivalent  # ... is not "equal"
    assert offer.saves == 600 and offer.diff == pytest.approx(-0.15)
    i, rule, _ = winner.choose(rows, verdicts, METRIC, COST, LATENCY, prefer="cheaper")
    assert i == 0
    assert "not shown within ±0.02" in rule and "its difference alone is beyond ±0.02" in rule
    assert rule.endswith("kept the best")
    # Equal on average (one question lost, one gained): 20 questions still cannot show it.
    even = [0] + [1] * 14 + [1] + [0] * 4
    rows, verdicts, _ = _table([best, even], [900.0, 300.0])
    i, rule, offer = winner.choose(rows, verdicts, METRIC, COST, LATENCY, prefer="cheaper")
    assert i == 0 and offer is not None and offer.diff == 0.0 and not offer.equivalent
    half = (offer.hi - offer.lo) / 2
    assert f"too few questions to show that; about {math.ceil(20 * (half / 0.02) ** 2)} " \
        "could" in rule


def test_a_large_set_exports_the_cheaper_one_when_it_is_provably_within_the_margin():
    # 2,000 questions; the cheaper configuration loses 6 and gains 2: diff -4/2000 = -0.002,
    # its 95% interval about +-0.003 around that: inside +-0.02.
    best = [1] * 1500 + [0] * 500
    cheap = list(best)
    for q in range(6):
        cheap[q] = 0
    for q in (1500, 1501):
        cheap[q] = 1
    rows, verdicts, _ = _table([best, cheap], [900.0, 300.0])
    v = verdicts[0]
    assert v.diff == pytest.approx(-0.002)
    assert -0.02 <= v.lo < v.diff < v.hi <= 0.02
    i, rule, offer = winner.choose(rows, verdicts, METRIC, COST, LATENCY)
    assert i == 0  # not asked: the best
    assert offer is not None and offer.equivalent
    i, rule, offer = winner.choose(rows, verdicts, METRIC, COST, LATENCY, prefer="cheaper")
    assert i == 1 and rule.startswith("--prefer cheaper: 600 fewer context_tokens_at_5")
    # A margin tighter than the interval: not shown, the best is kept.
    i, rule, offer = winner.choose(rows, verdicts, METRIC, COST, LATENCY, prefer="cheaper",
                                   margin=0.001)
    assert i == 0 and offer is not None and not offer.equivalent
    assert "its difference alone is beyond ±0.001" in rule


def test_the_offer_is_the_cheapest_shown_equal_and_never_a_worse_one():
    base = [1] * 300 + [0] * 100
    equal = list(base)
    equal[0] = 0  # one question of 400: within 0.02
    worse = [1] * 100 + [0] * 300  # far worse, and cheapest of all
    wide = [1] * 270 + [0] * 130  # cheaper than `equal`; 30 of 400 lost: far from equal
    rows, verdicts, _ = _table([base, equal, wide, worse], [1000.0, 800.0, 600.0, 100.0],
                               n=1000)
    assert not verdicts[2].tied  # the cheapest is worse: never offered
    offer = winner.cheaper_offer(rows, verdicts, COST, LATENCY)
    assert offer is not None and offer.index == 1 and offer.equivalent
    # Nothing shown equal: the cheapest not shown worse is offered, as not shown equal.
    rows2, verdicts2, _ = _table([[1] * 16 + [0] * 4, [1] * 15 + [0] * 5, [0] * 20],
                                 [500.0, 400.0, 10.0], n=1000)
    offer = winner.cheaper_offer(rows2, verdicts2, COST, LATENCY)
    assert offer is not None and offer.index == 1 and not offer.equivalent
    # The best is the cheapest: nothing to offer.
    rows3 = [dict(rows2[0], **{COST: 100.0}), rows2[1]]
    assert winner.cheaper_offer(rows3, verdicts2[:1], COST, LATENCY) is None


def test_questions_needed_scale_as_one_over_the_square_root():
    o = winner.Offer(1, COST, 100, 500, 400, 0.0, -0.04, 0.04, 100, 0.02, False)
    assert o.needed() == 400  # half-width 0.04 must shrink to 0.02: 4x the questions
    o = winner.Offer(1, COST, 100, 500, 400, -0.01, -0.03, 0.01, 100, 0.02, False)
    assert o.needed() == 400  # half-width 0.02, room 0.01
    o = winner.Offer(1, COST, 100, 500, 400, -0.05, -0.15, 0.05, 20, 0.02, False)
    assert o.needed() is None  # the difference itself is beyond the margin


def test_bad_margin_and_prefer_are_refused():
    with pytest.raises(SweepError, match="--margin"):
        winner.check_margin(0)
    with pytest.raises(SweepError, match="--prefer"):
        winner.choose([{METRIC: 1.0}], [], METRIC, COST, LATENCY, prefer="fastest")


def test_the_summary_says_the_offer_on_the_same_rows():
    best = [1] * 1500 + [0] * 500
    cheap = list(best)
    cheap[0] = 0
    rows, _, scores = _table([best, cheap], [900.0, 300.0], n=1000)
    for r, size in zip(rows, (512, 128), strict=True):
        r["chunk.size"] = size
    out = decide_sweep(rows, ["chunk.size"], METRIC, scores, costs=[COST, LATENCY], n=1000,
                       detect=None, names=["size=512", "size=128"])
    assert out["offer"] is not None and out["offer"].index == 1 and out["offer"].equivalent
    said = [line for line in out["lines"] if line.startswith("cheaper than the best:")]
    assert said == [
        "cheaper than the best: size=128 reads 600 fewer context_tokens_at_5 (300 vs 900, "
        f"67% fewer); may cost -0.001 recall_at_5 (diff -0.001, 95% CI [{out['offer'].lo:+.3f}, "
        f"{out['offer'].hi:+.3f}], paired over 2000 questions); shown within ±0.02 of the best: "
        "`sweep export --prefer cheaper` exports it"]


def test_export_writes_the_cheaper_one_only_when_asked_and_shown_equal(tmp_path, capsys):
    """The command on an MLflow store: 400 questions, the cheaper configuration misses one
    the best finds (diff -0.0025, interval inside ±0.02)."""
    import json

    import yaml

    from sweep.cli.export import cmd_export
    from sweep.outputs import tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "exp", run_name="sweep big", params={},
                                      tags={"sweep_dir": str(tmp_path)})
    ids = {}
    for size, found, tokens in ((512, 300, 1200.0), (128, 299, 400.0)):
        config = {"chunk": {"boundary": "heading", "size": size, "overlap": 0,
                            "header": "path"},
                  "embedding": {"name": "minilm"}, "retrieval": {"method": "dense"},
                  "eval": {"prompt_k": 5, "headline": METRIC}}
        folder = tmp_path / str(size)
        folder.mkdir()
        (folder / "config.yaml").write_text(yaml.safe_dump(config))
        (folder / "per_question.csv").write_text(
            "qid,status,recall_at_5\n"
            + "".join(f"q{i:03d},scored,{int(i < found)}\n" for i in range(400)))
        report = {"status": "FINISHED", "config": config, "config_hash": f"h{size}",
                  "headline": {"metric": METRIC, "value": found / 400},
                  "metrics": {METRIC: found / 400, COST: tokens, LATENCY: 5.0}}
        (folder / "report.json").write_text(json.dumps(report))
        ids[size] = tracking.log_job(uri, "exp", run_name=str(size), plain_config=config,
                                     report=report, parent_run_id=parent,
                                     artifacts=[folder / f for f in ("config.yaml",
                                                                     "per_question.csv",
                                                                     "report.json")])
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])

    assert cmd_export(["--tracking-uri", uri, "--out-dir", str(tmp_path / "w"),
                       "--name", "best"]) == 0
    out = capsys.readouterr().out
    assert f"(run {ids[512]}," in out
    assert "shown within ±0.02 of the best: `sweep export --prefer cheaper` exports it" in out
    assert yaml.safe_load((tmp_path / "w" / "best.yaml").read_text())["chunk"]["size"] == 512

    assert cmd_export(["--prefer", "cheaper", "--tracking-uri", uri, "--out-dir",
                       str(tmp_path / "w"), "--name", "cheap"]) == 0
    out = capsys.readouterr().out
    assert f"(run {ids[128]}," in out and f"(the best recall_at_5: run {ids[512]}" in out
    assert "decided by: --prefer cheaper: 800 fewer context_tokens_at_5 than the best, and " \
        "shown within ±0.02 of it on recall_at_5 (diff -0.003" in out
    text = (tmp_path / "w" / "cheap.yaml").read_text()
    assert yaml.safe_load(text)["chunk"]["size"] == 128
    assert "--prefer cheaper --margin 0.02" in text
