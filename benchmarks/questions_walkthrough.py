"""The walkthrough of docs/guide/questions-walkthrough.md, run end to end as a new user would.

From a folder of documents and a query log to a 50-question golden set made on the label page,
and to a sweep whose report separates the log's questions from synthetic ones:

1. ``sweep import squad`` turns COVID-QA into a corpus folder (its golden set is set aside:
   only its answers are used, as the person labelling would find them in the document);
2. COVID-QA's questions are written as a query log (``covid_log.csv``: each asked 1-6 times,
   some lower-cased without the ``?``, 8% with a thumbs-down);
3. ``sweep questions import`` makes ``log_queue.jsonl``; ``sweep questions generate`` makes
   ``synthetic_queue.jsonl`` from a **rule-based stand-in for a chat model**
   (`sweep.dev.standin_chat`: it lifts passage words into template questions; no LLM runs);
4. ``sweep label --queue`` serves each queue; a scripted labeller posts what the page posts
   when a person labels (claim the next candidate; save it with its evidence; skip a question
   asked of several papers, reject one the corpus cannot answer), to a 25 + 25 golden set.
   The evidence it selects: for a log question, COVID-QA's answer span; for a synthetic one,
   the passage sentence whose words it lifted. That is the person's work, scripted;
5. ``python -m sweep -m retrieval=bm25,dense`` sweeps it; report.json's ``sources`` has each
   source's recall and smell. The same is then measured on a larger set (``--large N``: N log
   and N synthetic questions written straight to a golden file, no page), for figures with
   less noise than 25 questions give.

    python benchmarks/questions_walkthrough.py WORK_DIR [--port 8520] [--large 300]

With ``--llm URL`` the synthetic questions come from a real language model instead of the
stand-in: the local model of ``make llm-server`` (``generation=local +questions=local``, its
base_url replaced by URL), and ``--no-page`` skips the label page, measuring only the larger
set (step 5), which is what a slow model on two cores can afford:

    python benchmarks/questions_walkthrough.py WORK_DIR --llm http://127.0.0.1:8088/v1 \
        --passages 20 --large 40 --no-page

Needs ../shared/data/covid_qa. Ports: PORT (stand-in chat), PORT+1 (label page).
"""

from __future__ import annotations

import argparse
import csv
import http.client
import json
import os
import random
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sweep.retrieval.bm25 import tokenize

ROOT = Path(__file__).resolve().parents[1]
COVID = ROOT.parent / "shared" / "data" / "covid_qa" / "200423_covidQA.json"
PER_SOURCE = 25


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sweep.cli", *args]


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    print("$", " ".join(cmd[2:] if cmd[:2] == [sys.executable, "-m"] else cmd), flush=True)
    started = time.monotonic()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    print(out.stdout.rstrip(), f"\n  ({time.monotonic() - started:.0f} s)", flush=True)
    return out.stdout


def norm(q: str) -> str:
    return " ".join(q.casefold().split()).strip().rstrip("?!. ")


# ------------------------------------------------------------------------- the log

def write_log(golden: Path, out: Path, seed: int = 27) -> dict[str, list[dict[str, Any]]]:
    """COVID-QA's questions as a query log; returns normalised question -> its golden items."""
    rng = random.Random(seed)
    items = [json.loads(x) for x in golden.read_text().splitlines() if x.strip()]
    answers: dict[str, list[dict[str, Any]]] = {}
    rows = []
    t = 1_714_550_400  # 2024-05-01T08:00:00Z
    for it in items:
        answers.setdefault(norm(it["question"]), []).append(it)
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 6])):
            q = it["question"]
            if rng.random() < 0.3:
                q = q.lower().rstrip("?")
            fb = "thumbs_down" if rng.random() < 0.08 else ("thumbs_up" if rng.random() < 0.1
                                                            else "")
            t += rng.randint(20, 900)
            rows.append((q, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)), fb))
    rng.shuffle(rows)
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["user_query", "asked_at", "feedback"])
        w.writerows(rows)
    return answers


# ------------------------------------------------------------------------- servers

@contextmanager
def serving(cmd: list[str], cwd: Path, env: dict[str, str], ready: str, log: Path):
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=fh,
                                text=True)
        try:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    sys.exit(f"{cmd} exited:\n{log.read_text()}")
                text = log.read_text()
                if ready in text:
                    break
                time.sleep(0.5)
            yield proc
        finally:
            proc.terminate()
            proc.wait(timeout=20)


class Page:
    """What the label page's script sends, sent from here (the page token read from the
    page, as the browser does)."""

    def __init__(self, port: int) -> None:
        self.port = port
        status, html = self._req("GET", "/")
        state = re.search(r'<script type="application/json" id="state">(.*?)</script>', html,
                          re.DOTALL)
        if status != 200 or state is None:
            sys.exit(f"label page: {status}")
        self.token = json.loads(state.group(1))["token"]
        self.tab = f"walk-{os.getpid()}"

    def _req(self, method: str, path: str, body: Any = None) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Host": f"127.0.0.1:{self.port}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers.update({"Content-Type": "application/json", "X-Label-Token": self.token,
                            "Origin": f"http://127.0.0.1:{self.port}"})
        conn.request(method, path, body=data, headers=headers)
        res = conn.getresponse()
        text = res.read().decode()
        conn.close()
        return res.status, text

    def post(self, action: str, **body: Any) -> dict[str, Any]:
        status, text = self._req("POST", f"/api/queue/{action}", {"tab": self.tab, **body})
        if status != 200:
            sys.exit(f"queue/{action}: {status} {text}")
        return json.loads(text)


def evidence_for_log(c: dict[str, Any], answers: dict[str, list[dict[str, Any]]]
                     ) -> list[dict[str, Any]] | None:
    """COVID-QA's answer for the candidate (None: none, or the question was asked of several
    papers, which the person would skip)."""
    found = answers.get(norm(c["question"]))
    if not found or len({it["relevant_doc_ids"][0] for it in found}) > 1:
        return None
    ev = found[0]["evidence"][0]
    return [{"doc_id": ev["doc_id"], "start": ev["start"], "end": ev["end"]}]


def evidence_for_synthetic(c: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The passage sentence holding the most of the question's content words (the stand-in
    lifted them from one sentence; a model's question is labelled the same way, as a person
    would pick the sentence that answers it)."""
    p = c.get("passage")
    if not p:
        return None
    # content words only (BM25's tokenizer: lower-cased, English stop words out): a model's
    # question shares "what", "is", "the" with every sentence
    words = set(tokenize(c["question"]))
    best, best_n = None, 0
    for m in re.finditer(r"[^.!?]+[.!?]?", p["text"]):
        n = len(words & set(tokenize(m.group(0))))
        if n > best_n and m.group(0).strip():
            lead = len(m.group(0)) - len(m.group(0).lstrip())
            best, best_n = (m.start() + lead, m.end()), n
    # Fewer than two shared content words: the passage does not answer it (a model's "What is
    # the purpose of the study?"), and the person would skip it; the stand-in lifts four.
    if best is None or best_n < 2:
        return None
    return [{"doc_id": p["doc_id"], "start": p["start"] + best[0], "end": p["start"] + best[1]}]


def work_queue(page: Page, target: int, answers: dict[str, list[dict[str, Any]]]
               ) -> dict[str, int]:
    """Label candidates until the golden set holds ``target`` items; skip the ambiguous,
    reject one off-corpus question."""
    tally = {"labelled": 0, "skipped": 0, "rejected": 0}
    while True:
        got = page.post("claim")
        c, counts = got["candidate"], got["counts"]
        if counts["golden_items"] >= target or c is None:
            if c is not None:
                page.post("release")
            return tally
        if c["source"] == "synthetic":
            ev = evidence_for_synthetic(c)
        else:
            ev = evidence_for_log(c, answers)
        if ev is None:
            page.post("skip", cid=c["cid"])
            tally["skipped"] += 1
            continue
        page.post("save", cid=c["cid"], item={"question": c["question"], "evidence": ev})
        tally["labelled"] += 1


# ------------------------------------------------------------------------- the sweep

def sweep_sources(work: Path, env: dict[str, str], golden: Path, name: str
                  ) -> dict[str, dict[str, Any]]:
    out = work / f"multirun-{name}"
    run([sys.executable, "-m", "sweep", "-m",
        f"corpus.path={work / 'covid' / 'corpus'}", f"golden.path={golden}",
        "corpus.name=covid", f"golden.name={name}", "retrieval=bm25,dense",
        "retrieval.diagnose=false", "eval.latency_sample=0",
        f"hydra.sweep.dir={out}"], work, env)
    found: dict[str, dict[str, Any]] = {}
    for report in sorted(out.glob("*/report.json")):
        r = json.loads(report.read_text())
        found[r["config"]["retrieval"]["method"]] = r
    return found


def table(reports: dict[str, dict[str, Any]], metric: str = "recall_at_5") -> list[str]:
    lines = [f"| retrieval | source | n | smell | {metric} | mrr |", "|---|---|---|---|---|---|"]
    for method, r in reports.items():
        for src, s in r["sources"].items():
            lines.append(f"| {method} | {src} | {s['n']} | {s['smell_mean']:.3f} | "
                         f"{s['metrics'].get(metric, float('nan')):.3f} | "
                         f"{s['metrics'].get('mrr', float('nan')):.3f} |")
        lines.append(f"| {method} | all | {sum(s['n'] for s in r['sources'].values())} | "
                     f"{r['metrics'].get('smell_mean', float('nan')):.3f} | "
                     f"{r['metrics'][metric]:.3f} | {r['metrics']['mrr']:.3f} |")
    return lines


def large_golden(work: Path, answers: dict[str, list[dict[str, Any]]], n: int) -> Path:
    """N log questions (their COVID-QA labels) and N synthetic ones (their lifted sentence)
    straight into a golden file, each with its source, for less noisy figures."""
    log_q = [json.loads(x) for x in (work / "log_queue.jsonl").read_text().splitlines()]
    syn_q = [json.loads(x) for x in (work / "synthetic_queue.jsonl").read_text().splitlines()]
    out, seen = [], set()
    for source, queue, pick in (("log", log_q, lambda c: evidence_for_log(c, answers)),
                                ("synthetic", syn_q, evidence_for_synthetic)):
        k = 0
        for c in queue:
            if k == n or c.get("source") != source or c["cid"] in seen:
                continue
            ev = pick(c)
            if ev is None:
                continue
            seen.add(c["cid"])
            k += 1
            out.append({"qid": f"{source}-{k}", "question": c["question"],
                        "relevant_doc_ids": [ev[0]["doc_id"]], "evidence": ev,
                        "source": source, "source_ref": c.get("source_ref") or c["cid"]})
    corpus = work / "covid" / "corpus"
    for item in out:  # quotes, as the label page writes them
        for ev in item["evidence"]:
            text = (corpus / f"{ev['doc_id']}.txt").read_text(encoding="utf-8")
            ev["quote"] = text[ev["start"]:ev["end"]]
    path = work / "large" / "golden.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in out))
    return path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("work", type=Path)
    p.add_argument("--port", type=int, default=8520)
    p.add_argument("--passages", type=int, default=150)
    p.add_argument("--large", type=int, default=300)
    p.add_argument("--llm", metavar="URL", help="a real chat model's base URL (the local model "
                   "of make llm-server) instead of the stand-in")
    p.add_argument("--no-page", action="store_true", help="skip the label page (steps 3-4)")
    args = p.parse_args()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": str(ROOT / "src"), "CHUNK_SWEEP_CACHE_DIR": str(work / "cache"),
           "MLFLOW_TRACKING_URI": f"sqlite:///{work / 'mlflow.db'}"}
    corpus = work / "covid" / "corpus"
    if not corpus.is_dir():
        run(sweep_cmd("import", "squad", str(COVID), "--out", str(work / "covid")), work, env)
    answers = write_log(work / "covid" / "golden.jsonl", work / "covid_log.csv")
    if not (work / "log_queue.jsonl").exists():
        run(sweep_cmd("questions", "import", "covid_log.csv", "--out", "log_queue.jsonl",
                      "--corpus", str(corpus)), work, env)
    if args.llm:  # a real model: the one of `make llm-server`, or any served at --llm
        if not (work / "synthetic_queue.jsonl").exists():
            run(sweep_cmd("questions", "generate", "--out", "synthetic_queue.jsonl",
                          "--corpus", str(corpus), "generation=local", "+questions=local",
                          f"generation.base_url={args.llm}",
                          f"questions.passages={args.passages}"), work, env)
    else:
        base = f"http://127.0.0.1:{args.port}/v1"
        with serving([sys.executable, "-m", "sweep.dev.standin_chat", "--port",
                      str(args.port)], work, env, "stand-in chat", work / "standin.log"):
            if not (work / "synthetic_queue.jsonl").exists():
                run(sweep_cmd("questions", "generate", "--out", "synthetic_queue.jsonl",
                              "--corpus", str(corpus), f"generation.base_url={base}",
                              "generation.model=standin-lift", "generation.api_key_env=",
                              f"questions.passages={args.passages}"), work, env)
    if args.no_page:
        big = sweep_sources(work, env, large_golden(work, answers, args.large), "walklarge")
        print("\n".join(table(big)))
        return 0
    golden = work / "golden.jsonl"
    for queue, target in (("log_queue.jsonl", PER_SOURCE), ("synthetic_queue.jsonl",
                                                            2 * PER_SOURCE)):
        with serving(sweep_cmd("label", "--corpus", str(corpus), "--golden", str(golden),
                               "--queue", queue, "--target", str(2 * PER_SOURCE),
                               "--port", str(args.port + 1), "--no-dense", "tracking=off"),
                     work, env, "serving on ", work / "label.log"):
            tally = work_queue(Page(args.port + 1), target, answers)
            print(f"{queue}: {tally}", flush=True)
    run(sweep_cmd("validate", f"golden.path={golden}", f"corpus.path={corpus}"), work, env)
    small = sweep_sources(work, env, golden, "walk50")
    print("\n".join(table(small)))
    if args.large:
        big = sweep_sources(work, env, large_golden(work, answers, args.large), "walklarge")
        print("\n".join(table(big)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
