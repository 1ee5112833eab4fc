"""`sweep questions` end to end with the bundled MiniLM (slow): a log written here with
duplicates, near-duplicates, PII and feedback, ranked on the demo corpus against its golden
set; synthetic candidates from the chat protocol server; a 40 MB log streamed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from helpers import DEMO, mlflow_tracking_uri, run_cli

pytestmark = pytest.mark.slow  # conftest marks all of tests/e2e/ slow; said here for the reader

LOG = """timestamp,question,rating
2024-05-01T10:00:00Z,How do I reset my password?,1
2024-05-01T10:01:00Z,How can I reset my password?,2
2024-05-01T10:02:00Z,how do i reset my password,5
2024-05-02T08:00:00Z,Do you ship to Canada?,4
2024-05-02T08:05:00Z,Do you ship to Mexico?,
2024-05-03T09:00:00Z,my card 4111 1111 1111 1111 was charged twice,1
2024-05-03T09:10:00Z,write to me at ann@example.com about the refund window,3
2024-05-04T11:00:00Z,how long do i have to send something back,5
2024-05-04T11:00:00Z,how long do i have to send something back,5
2024-05-04T11:00:00Z,how long do i have to send something back,
"""


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    res = run_cli("-m", "sweep.cli", "questions", *args, cwd=cwd, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    return res


def test_log_import_merges_redacts_and_ranks_on_the_demo_corpus(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text(LOG, encoding="utf-8")
    half = tmp_path / "half.jsonl"
    golden = (DEMO / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    half.write_text("\n".join(golden[:10]) + "\n", encoding="utf-8")
    corpus = str(DEMO / "corpus")
    q_half, q_full = tmp_path / "half_q.jsonl", tmp_path / "full_q.jsonl"
    run("import", str(log), "--out", str(q_half), "--corpus", corpus, "--golden", str(half),
        cwd=tmp_path)
    run("import", str(log), "--out", str(q_full), "--corpus", corpus, "--golden",
        str(DEMO / "golden.jsonl"), cwd=tmp_path)
    out = lines(q_half)
    by_q = {c["question"]: c for c in out}
    # exact + near duplicates: the three password questions are one candidate
    pw = by_q["How do I reset my password?"]
    assert pw["count"] == 3 and sorted(pw["variants"]) == ["How can I reset my password?",
                                                          "how do i reset my password"]
    assert pw["negative_count"] == 1  # ratings up to 5: only 1 is the bottom of the scale
    assert "Do you ship to Mexico?" in by_q and "Do you ship to Canada?" in by_q
    # PII gone from every file written
    text = q_half.read_text(encoding="utf-8")
    assert "4111" not in text and "ann@example.com" not in text
    assert "my card [card] was charged twice" in by_q
    report = json.loads((tmp_path / "half_q.import_report.json").read_text(encoding="utf-8"))
    assert report["redactions"]["card"] == 1 and report["redactions"]["email"] == 1
    assert report["near_duplicates"]["ran"] and report["near_duplicates"]["model"] == "minilm"
    assert report["merged_exact"] == 3 and report["merged_near"] == 1
    steps = report["priority"]["steps"]
    assert steps["disagreement"]["ran"] and steps["coverage"]["ran"]
    # order: negative feedback first (by count), then frequency
    negatives = [c for c in out if c["negative_count"]]
    assert out[: len(negatives)] == negatives
    assert [c["question"] for c in negatives] == ["How do I reset my password?",
                                                  "my card [card] was charged twice"]
    rest = out[len(negatives):]
    assert [c["count"] for c in rest] == sorted((c["count"] for c in rest), reverse=True)
    assert rest[0]["question"] == "how long do i have to send something back"
    # reasons agree with the report's counts
    counts = report["priority"]["counts"]
    assert counts["disagreement"] == sum("disagree" in c["reason"] for c in out)
    assert counts["uncovered"] == sum("not covered" in c["reason"] for c in out)
    # more golden evidence covers more: what the full set leaves uncovered, half does too
    unc_half = {c["cid"] for c in out if "not covered" in c["reason"]}
    unc_full = {c["cid"] for c in lines(q_full) if "not covered" in c["reason"]}
    assert unc_full <= unc_half


def test_generate_queues_synthetic_candidates_and_asks_once(tmp_path: Path) -> None:
    def rule(request: dict) -> Reply:
        passage = request["messages"][-1]["content"].split("<passage>\n", 1)[1]
        word = "topic-" + hashlib.sha256(passage.encode()).hexdigest()[:8]  # one per passage
        return Reply(content=f"what about {word}?\nhow does {word} work", usage=(200, 12))

    q = tmp_path / "q.jsonl"
    with ChatProtocolServer(rule) as server:
        args = ("generate", "--out", str(q), "--corpus", str(DEMO / "corpus"), "--passages",
                "4", "--no-near", f"generation.base_url={server.base_url}",
                "generation.model=m", "generation.api_key_env=", "generation.price_input_per_mtok=1",
                "generation.price_output_per_mtok=2")
        first = run(*args, cwd=tmp_path)
        asked = len(server.requests)
        second = run(*args, cwd=tmp_path)
        assert len(server.requests) == asked  # the second run is served from the cache
    assert asked == 4
    assert "4 calls" in first.stdout and "0 calls, 4 from the cache" in second.stdout
    out = lines(q)
    assert len(out) == 8 and all(c["source"] == "synthetic" for c in out)
    assert all(c["count"] == 2 for c in out)  # asked by both runs
    for c in out:
        p = c["passage"]
        doc = (DEMO / "corpus").rglob("*.md")
        assert p["text"] and p["end"] > p["start"] and c["source_ref"] == \
            f"{p['doc_id']}:{p['start']}-{p['end']}"
        assert any(p["text"] in f.read_text(encoding="utf-8") for f in doc)
    report = json.loads((tmp_path / "q.import_report.json").read_text(encoding="utf-8"))
    assert report["generate"]["calls"] == 0 and report["generate"]["cache_hits"] == 4


def test_a_40_mb_log_streams_in_bounded_memory(tmp_path: Path) -> None:
    """The whole command on 40 MB of CSV: the process's peak RSS grows far less than the
    file (the CLI with MiniLM loaded would be ~500 MB; --no-near keeps the model out)."""
    log = tmp_path / "big.csv"
    with log.open("w", encoding="utf-8") as fh:
        fh.write("time,question,feedback\n")
        for i in range(420_000):
            fh.write(f"2024-05-01T10:00:00Z,how do I configure setting number {i % 500} "
                     f"for the widget in a large deployment,{'down' if i % 7 == 0 else ''}\n")
    assert log.stat().st_size > 35e6
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across exec, so a child of a
    # pytest process that has grown to 3 GB (another test's models) reports 3 GB.
    code = ("import re, sys; from sweep.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code\n"
            "hwm = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read())\n"
            "print('rss_kb', hwm.group(1))")
    res = subprocess.run([sys.executable, "-c", code, "questions", "import", str(log), "--out",
                          str(tmp_path / "q.jsonl"), "--no-near"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    rss_mb = int(res.stdout.split("rss_kb")[-1]) / 1024
    assert rss_mb < 300, rss_mb  # the interpreter, hydra and numpy are most of it
    out = lines(tmp_path / "q.jsonl")
    assert len(out) == 500 and sum(c["count"] for c in out) == 420_000
    assert sum(c["negative_count"] for c in out) == len(range(0, 420_000, 7))


def test_mlflow_traces_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Traces made with MLflow's tracing API in this process, imported by the command in
    another; the tracking URI comes from $MLFLOW_TRACKING_URI, as for every subcommand."""
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    import mlflow
    from mlflow.entities import Document, SpanType

    uri = f"sqlite:///{tmp_path / 'app.db'}"
    with mlflow_tracking_uri(uri):
        mlflow.set_experiment("assistant")

        @mlflow.trace(span_type=SpanType.RETRIEVER)
        def retrieve(query: str) -> list[Document]:
            return [Document(page_content="Refunds within 30 days.",
                             metadata={"doc_uri": "returns/refund-policy.md"})]

        @mlflow.trace
        def answer(question: str) -> str:
            return retrieve(question)[0].page_content

        for q, verdict in [("How long is the refund window?", False),
                           ("how long is the refund window", None),
                           ("Can I pay with bob@example.com's card?", True)]:
            answer(q)
            if verdict is not None:
                mlflow.log_feedback(trace_id=mlflow.get_last_active_trace_id(), name="thumbs",
                                    value=verdict)
    q = tmp_path / "q.jsonl"
    res = run_cli("-m", "sweep.cli", "questions", "import", "--mlflow-experiment", "assistant",
                  "--out", str(q), "--no-near", cwd=tmp_path, env={"MLFLOW_TRACKING_URI": uri},
                  timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = lines(q)
    assert [(c["question"], c["count"], c["feedback"]) for c in out] == [
        ("How long is the refund window?", 2, "negative"),
        ("Can I pay with [email]'s card?", 1, "positive")]
    assert out[0]["source"] == "trace" and out[0]["trace_id"].startswith("tr-")
    assert out[0]["retrieved"] == [{"doc_id": "returns/refund-policy.md",
                                    "text": "Refunds within 30 days."}]
    report = json.loads((tmp_path / "q.import_report.json").read_text(encoding="utf-8"))
    assert report["sources"][0]["rows"] == 3 and report["sources"][0]["with_feedback"] == 2
    assert report["sources"][0]["with_retriever"] == 3
