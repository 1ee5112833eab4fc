"""Document-level nDCG@10 and recall@10 of `sweep.evaluation.metrics` against ranx on BEIR SciFact.

A BM25 run (rank-bm25) over the 5,183 abstracts for the 300 test queries is scored both ways;
ranx gets scores that strictly decrease with our rank, so tie order cannot differ.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest

from helpers import SHARED_DATA
from sweep.evaluation import metrics as m

SCIFACT = SHARED_DATA / "scifact"
DEPTH = 100

pytestmark = [
    pytest.mark.realdata,
    pytest.mark.filterwarnings("ignore:unsafe cast:Warning"),
    pytest.mark.skipif(
        not (SCIFACT / "corpus.jsonl").is_file(),
        reason=f"BEIR SciFact not found at {SCIFACT} (../shared/data or $CHUNK_SWEEP_SHARED_DATA)",
    ),
]

_WORD = re.compile(r"\w+")


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _load_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        assert header == ["query-id", "corpus-id", "score"], header
        for row in reader:
            if not row:
                continue
            qid, doc_id, score = row
            qrels.setdefault(qid, {})[doc_id] = int(score)
    return qrels


class _FastBM25:
    """The scores of a `rank_bm25.BM25Okapi`, term by term from an inverted index.

    `BM25Okapi.get_scores` loops over every document in Python for each query term (~9 s for
    the 300 queries); adding the same per-term expression only for the documents holding the
    term, in the same order, gives bit-identical floats (checked in the fixture).
    """

    def __init__(self, bm25) -> None:
        self.bm25 = bm25
        self.doc_len = np.asarray(bm25.doc_len, dtype=np.float64)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for i, freqs in enumerate(bm25.doc_freqs):
            for term, tf in freqs.items():
                docs, tfs = postings.setdefault(term, ([], []))
                docs.append(i)
                tfs.append(tf)
        self.postings = {t: (np.array(d), np.array(f, dtype=np.float64)) for t, (d, f) in postings.items()}

    def get_scores(self, query: list[str]) -> np.ndarray:
        b, k1 = self.bm25.b, self.bm25.k1
        score = np.zeros(len(self.doc_len))
        for q in query:
            if q not in self.postings:
                continue
            docs, tf = self.postings[q]
            norm = k1 * (1 - b + b * self.doc_len[docs] / self.bm25.avgdl)
            score[docs] += (self.bm25.idf.get(q) or 0) * (tf * (k1 + 1) / (tf + norm))
        return score


@pytest.fixture(scope="module")
def scifact_run() -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    from rank_bm25 import BM25Okapi

    corpus = _load_jsonl(SCIFACT / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in _load_jsonl(SCIFACT / "queries.jsonl")}
    qrels = _load_qrels(SCIFACT / "qrels" / "test.tsv")
    doc_ids = [d["_id"] for d in corpus]
    bm25 = BM25Okapi([_tokens(d.get("title", "") + " " + d.get("text", "")) for d in corpus])
    fast = _FastBM25(bm25)
    for qid in sorted(qrels)[:10]:
        query = _tokens(queries[qid])
        assert np.array_equal(fast.get_scores(query), bm25.get_scores(query)), qid
    # secondary key: the position of each doc id in string order
    id_rank = np.empty(len(doc_ids), dtype=np.int64)
    id_rank[sorted(range(len(doc_ids)), key=doc_ids.__getitem__)] = np.arange(len(doc_ids))
    run: dict[str, list[str]] = {}
    for qid in sorted(qrels):
        scores = fast.get_scores(_tokens(queries[qid]))
        order = np.lexsort((id_rank, -scores))[:DEPTH]  # by (-score, doc_id)
        run[qid] = [doc_ids[i] for i in order]
    return qrels, run


def test_scifact_shape(scifact_run) -> None:
    qrels, run = scifact_run
    assert len(qrels) == 300
    assert sum(len(v) for v in qrels.values()) == 339
    assert set(run) == set(qrels)
    assert all(len(ranked) == DEPTH and len(set(ranked)) == DEPTH for ranked in run.values())


def test_ndcg_and_recall_match_ranx(scifact_run) -> None:
    from ranx import Qrels, Run, evaluate

    qrels, run = scifact_run
    ours_ndcg, ours_recall = [], []
    for qid, judged in qrels.items():
        gains = {d: float(s) for d, s in judged.items() if s > 0}
        relevant = set(gains)
        ours_ndcg.append(m.ndcg_at_k(run[qid], gains, 10))
        ours_recall.append(m.recall_at_k(run[qid], relevant, 10))
    ours = {"ndcg@10": m.mean(ours_ndcg), "recall@10": m.mean(ours_recall)}

    ranx_run = Run.from_dict(
        {qid: {d: float(1000 - rank) for rank, d in enumerate(ranked, start=1)}
         for qid, ranked in run.items()}
    )
    ranx_qrels = Qrels.from_dict(qrels)
    theirs = evaluate(ranx_qrels, ranx_run, ["ndcg@10", "recall@10"])
    for name, value in ours.items():
        assert abs(value - float(theirs[name])) < 1e-9, (name, value, theirs[name])
    # a sanity range: BM25 on SciFact reaches roughly 0.6-0.7 nDCG@10
    assert 0.5 < ours["ndcg@10"] < 0.8
    assert ours["recall@10"] > ours["ndcg@10"] - 0.2
