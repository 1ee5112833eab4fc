"""A parser that drops the answer loses the question (issue 45): evidence one configuration's
parser lost while another's kept counts as that configuration's miss wherever the sweep's
configurations are compared; evidence no parser kept stays an orphan, listed and kept out."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sweep.chunking.chunkers import Chunk
from sweep.data.documents import Document
from sweep.data.golden import EvidenceRef, GoldenItem
from sweep.decide import lost
from sweep.decide.decision import finished_sweep
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.misses import miss_cause
from sweep.evaluation.relevance import CorpusIndex, resolve_all
from sweep.outputs import tracking
from sweep.outputs.report import comparison_rows, print_comparison
from sweep.retrieval.ranking import Ranking

# --- the rule on plain maps ------------------------------------------------------------------


def test_lost_questions_and_orphans_everywhere():
    a = {"q1": "scored", "q2": "scored", "q3": "orphan", "q4": "orphan"}
    b = {"q1": "scored", "q2": "orphan", "q3": "orphan", "q4": "scored"}
    c = {"q1": "scored", "q2": "scored", "q3": "orphan", "q4": "scored"}
    found = lost.lost_questions([a, b, None, c])
    assert found.lost == [["q4"], ["q2"], [], []]
    assert found.everywhere == ["q3"] and found.any
    # Two golden sets: the same ids are other questions; each set on its own.
    other = lost.lost_questions([a, b, c], ["g1", "g2", "g1"])
    assert other.lost == [["q4"], [], []] and other.everywhere == ["q2", "q3"]
    # One parser: the same orphans everywhere, nothing lost.
    same = lost.lost_questions([{"q1": "scored", "q2": "orphan"}] * 3)
    assert not same.any and same.everywhere == ["q2"]


def test_a_lost_question_is_a_miss_on_quality_metrics_only():
    assert lost.with_misses({"q1": 1.0}, ["q2", "q1"], "recall_at_5") == {"q1": 1.0, "q2": 0.0}
    assert lost.with_misses({"q1": 0.5}, ["q2"], "mrr") == {"q1": 0.5, "q2": 0.0}
    # A cost has no value for a question never answered.
    assert lost.with_misses({"q1": 300.0}, ["q2"], "context_tokens_at_5") == {"q1": 300.0}


# --- a parser sweep, from the golden set to the decision --------------------------------------

SENTENCES = [f"Step {i} of the guide says to run command number {i}." for i in range(8)]
DROPPED = (6, 7)  # the section the lossy parser loses with its whole block
KEEPER, LOSSY = "markitdown", "trafilatura"


def _parsed(parser: str) -> tuple[Document, list[Chunk]]:
    kept = [s for i, s in enumerate(SENTENCES) if parser == KEEPER or i not in DROPPED]
    text = " ".join(kept)
    chunks, pos = [], 0
    for n, s in enumerate(kept):
        start = text.index(s, pos)
        chunks.append(Chunk(f"guide#{n}", "guide", n, start, start + len(s), s, s, 12))
        pos = start + len(s)
    doc = Document(doc_id="guide", title="Guide", text=text, sections=(),
                   source="guide.html", parser=parser)
    return doc, chunks


ITEMS = [GoldenItem(f"q{i}", f"what does step {i} run?",
                    evidence=(EvidenceRef(doc_id="guide", quote=s),), line=i + 1)
         for i, s in enumerate(SENTENCES)] + [
    # Quoted from neither parser's text: a label problem, an orphan everywhere.
    GoldenItem("q8", "what is step 9?", line=9,
               evidence=(EvidenceRef(doc_id="guide", quote="Step 9 does not exist."),))]


def _evaluate(parser: str, missed: set[str]) -> tuple[dict, list[dict]]:
    """The real resolver and evaluation; each question's relevant chunk first in its ranking,
    or last for the questions in ``missed``."""
    doc, chunks = _parsed(parser)
    resolved = resolve_all(ITEMS, CorpusIndex([doc]), None)
    rankings = []
    for item in ITEMS:
        quote = item.evidence[0].quote
        rel = [i for i, c in enumerate(chunks) if c.text == quote]
        rest = [i for i in range(len(chunks)) if i not in rel]
        order = rest + rel if item.qid in missed else rel + rest
        rankings.append(Ranking(tuple(order), tuple(1.0 - 0.01 * k for k in range(len(order)))))
    return evaluate(resolved, chunks, rankings, EvalSpec())


def _job(folder: Path, parser: str, missed: set[str], tokens: float) -> dict:
    summary, rows = _evaluate(parser, missed)
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(folder / "per_question.csv", index=False)
    config = {"corpus": {"name": "guide", "html_parser": parser},
              "chunk": {"boundary": "heading", "size": 256, "overlap": 0, "header": "path"},
              "embedding": {"name": "minilm"}, "retrieval": {"method": "dense"},
              "eval": {"k": [1, 3, 5, 10], "prompt_k": 5, "headline": "recall_at_5"}}
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    report = {"status": "FINISHED", "config": config, "config_hash": f"hash-{parser}",
              "headline": {"metric": "recall_at_5", "value": summary["recall_at_5"]},
              "metrics": {**summary, "context_tokens_at_5": tokens,
                          "latency_end_to_end_p95_ms": 10.0}}
    (folder / "report.json").write_text(json.dumps(report))
    return report


@pytest.fixture
def parser_sweep(tmp_path):
    # The keeper misses q5; the lossy parser finds every question its text still holds, but
    # lost the evidence of q6 and q7 (the keeper finds both), and reads fewer tokens.
    jobs = [(tmp_path / "0", KEEPER, {"q5"}, 600.0), (tmp_path / "1", LOSSY, set(), 500.0)]
    reports = [_job(*job) for job in jobs]
    return tmp_path, reports, [job[0] for job in jobs]


def test_each_job_alone_rewards_the_lossy_parser(parser_sweep):
    """What a job knows by itself (unchanged): the lossy parser scores its 6 questions."""
    _, (keeper, lossy), _ = parser_sweep
    assert keeper["metrics"]["recall_at_5"] == pytest.approx(7 / 8)
    assert keeper["metrics"]["n_orphans"] == 1  # q8
    assert lossy["metrics"]["recall_at_5"] == 1.0
    assert lossy["metrics"]["n_orphans"] == 3  # q6, q7 and q8
    rows = pd.read_csv(parser_sweep[0] / "1" / "per_question.csv").to_dict("records")
    q6 = next(r for r in rows if r["qid"] == "q6")
    assert q6["orphan_reason"] == f"evidence[0]: not found in {LOSSY} output"
    assert miss_cause(q6, [], [], [], 5, {}, True).cause == "lost_in_parsing"


def test_the_end_of_sweep_scores_both_parsers_on_the_same_questions(parser_sweep, capsys):
    _, reports, folders = parser_sweep
    axes, rows = comparison_rows(reports, folders=folders)
    assert axes == ["corpus.html_parser"]
    assert [r["corpus.html_parser"] for r in rows] == [LOSSY, KEEPER]  # per job: lossy first
    by_folder = {str(f): r for f, r in zip(folders, reports, strict=True)}
    ranked: list = []
    out = finished_sweep(axes, rows, by_folder, detect=None, on_ranked=lambda: ranked.append(
        [(r["corpus.html_parser"], r["headline"], r.get("verdict")) for r in rows]))
    # The rows as the caller's headline plot gets them: sorted again, before the verdicts.
    assert ranked == [[(KEEPER, pytest.approx(7 / 8), None), (LOSSY, pytest.approx(6 / 8), None)]]
    # Both on the 8 questions some parser kept: the lossy one's 2 lost are misses, 6/8.
    assert [r["corpus.html_parser"] for r in rows] == [KEEPER, LOSSY]
    assert [r["headline"] for r in rows] == [pytest.approx(7 / 8), pytest.approx(6 / 8)]
    assert [r["recall_at_5"] for r in rows] == [pytest.approx(7 / 8), pytest.approx(6 / 8)]
    assert [r["lost_in_parsing"] for r in rows] == [0, 2]
    assert out["verdicts"][0].n_pairs == 8
    assert out["verdicts"][0].diff == pytest.approx(-1 / 8)
    assert out["lost"].lost == [[], ["q6", "q7"]] and out["lost"].everywhere == ["q8"]
    (effect,) = out["axes"]
    assert effect["best"] == KEEPER
    other = next(v for v in effect["values"] if v["value"] == LOSSY)
    assert other["diff"] == pytest.approx(-1 / 8)
    assert any(line.startswith("lost_in_parsing: html_parser=trafilatura lost the evidence "
                               "of 2 question(s) another configuration kept (q6, q7)")
               for line in out["lines"])
    assert any("orphans in every configuration (a label problem; kept out of every mean): "
               "1 (q8)" in line for line in out["lines"])
    print_comparison(axes, rows)
    printed = capsys.readouterr().out
    assert f"best: corpus.html_parser={KEEPER} (recall_at_5=0.875, 0.125 ahead" in printed
    assert "lost_in_parsing" in printed


def test_one_parser_changes_nothing(tmp_path):
    """The same orphans in every configuration (one parser): rows, order and headline are
    those of the jobs, and no lost_in_parsing column appears."""
    reports = [_job(tmp_path / "a", KEEPER, {"q5"}, 600.0),
               _job(tmp_path / "b", KEEPER, {"q5", "q6"}, 500.0)]
    reports[1]["config"]["chunk"]["size"] = 128
    reports[1]["config_hash"] = "other"
    folders = [tmp_path / "a", tmp_path / "b"]
    axes, rows = comparison_rows(reports, folders=folders)
    before = [dict(r) for r in rows]
    finished_sweep(axes, rows, {str(f): r for f, r in zip(folders, reports, strict=True)},
                   detect=None)
    assert [r["headline"] for r in rows] == [b["headline"] for b in before]
    assert all("lost_in_parsing" not in r for r in rows)


def test_compare_export_and_rerun_agree_on_the_parser_that_kept_the_answer(parser_sweep,
                                                                           capsys):
    from sweep.cli.compare import cmd_compare
    from sweep.cli.export import cmd_export
    from sweep.cli.rerun import cmd_rerun
    from sweep.decide import runs

    root, reports, folders = parser_sweep
    uri = f"sqlite:///{root / 'mlflow.db'}"
    _, parent = tracking.start_parent(uri, "parsers", run_name="sweep parsers",
                                      params={"overrides": "corpus.html_parser=a,b"},
                                      tags={"sweep_dir": str(root)})
    ids = {}
    for folder, report in zip(folders, reports, strict=True):
        parser = report["config"]["corpus"]["html_parser"]
        ids[parser] = tracking.log_job(
            uri, "parsers", run_name=parser, plain_config=report["config"], report=report,
            artifacts=[folder / f for f in ("report.json", "per_question.csv", "config.yaml")],
            parent_run_id=parent)
    tracking.finish_parent(uri, parent, status="FINISHED", metrics={}, tags={}, artifacts=[])

    t = runs.load_table(uri, None, "latest", None, root / "t", n=1000)
    assert [r["run_id"] for r in t.rows] == [ids[KEEPER], ids[LOSSY]]
    assert [r["recall_at_5"] for r in t.rows] == [pytest.approx(7 / 8), pytest.approx(6 / 8)]
    assert [r["lost_in_parsing"] for r in t.rows] == [0, 2] and "lost_in_parsing" in t.shown
    assert t.orphans == ["q8"] and t.rows[1]["n_pairs"] == 8

    assert cmd_compare(["--tracking-uri", uri, "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "lost_in_parsing: html_parser=trafilatura lost the evidence of 2" in out
    assert cmd_export(["--tracking-uri", uri, "--out-dir", str(root / "w"), "--name", "w"]) == 0
    out = capsys.readouterr().out
    assert f"(run {ids[KEEPER]}," in out
    exported = yaml.safe_load((root / "w" / "w.yaml").read_text())
    assert exported["corpus"]["html_parser"] == KEEPER
    assert cmd_rerun(["--top", "1", "--dry-run", "--tracking-uri", uri]) == 0
    out = capsys.readouterr().out
    assert f"1. corpus.html_parser={KEEPER}  recall_at_5=0.875" in out


def test_the_end_of_sweep_callback_prints_and_writes_the_parser_that_kept_the_answer(
        parser_sweep, capsys):
    import csv

    from omegaconf import OmegaConf

    from sweep.cli.hydra_job import MlflowSweepCallback

    root, _, _ = parser_sweep
    MlflowSweepCallback().on_multirun_end(
        OmegaConf.create({"hydra": {"sweep": {"dir": str(root)}}}))
    out = capsys.readouterr().out
    assert f"best: corpus.html_parser={KEEPER} (recall_at_5=0.875" in out
    assert "lost_in_parsing: html_parser=trafilatura lost the evidence of 2" in out
    with (root / "comparison.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert [(r["corpus.html_parser"], r["headline"], r["lost_in_parsing"]) for r in table] == [
        (KEEPER, "0.875", "0"), (LOSSY, "0.75", "2")]
