"""BM25 on real data: bm25s ranks BEIR SciFact (5,183 abstracts, 300 test queries) like rank-bm25."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.ranking import lexical_search, tiebreak_order


def _scifact(shared: Path) -> tuple[list[str], list[str], list[str], dict[str, set[str]]]:
    root = shared / "scifact"
    docs = [json.loads(line) for line in (root / "corpus.jsonl").open()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open())}
    qrels: dict[str, set[str]] = {}
    for line in list((root / "qrels" / "test.tsv").open())[1:]:
        qid, did, score = line.split()
        if int(score) > 0:
            qrels.setdefault(qid, set()).add(did)
    texts = [(d["title"] + "\n\n" + d["text"]).strip() for d in docs]
    qids = sorted(qrels, key=int)
    return [d["_id"] for d in docs], texts, [queries[q] for q in qids], qrels


@pytest.mark.realdata
def test_bm25s_ranks_scifact_like_rank_bm25(shared_data: Path) -> None:
    """Same top-10 for every SciFact test query (5,183 abstracts), ties aside."""
    ids, texts, questions, _ = _scifact(shared_data)
    ref = BM25Index(texts, backend="rank_bm25")
    fast = BM25Index(texts, backend="bm25s")
    tie = tiebreak_order(ids)
    compared = 0
    for q in questions:
        a_scores, b_scores = ref.scores(q), fast.scores(q)
        np.testing.assert_allclose(a_scores, b_scores, rtol=1e-9, atol=1e-9)
        a = lexical_search(a_scores, tie, 10)
        b = lexical_search(b_scores, tie, 10)
        if a.indices != b.indices:
            # Only a reordering of (numerically) equal scores is allowed: rank by rank the
            # scores agree, and a chunk in one top 10 only is tied with the 10th (the cut).
            assert np.allclose(a.scores, b.scores, rtol=1e-9)
            for i in set(a.indices) ^ set(b.indices):
                assert np.isclose(a_scores[i], a.scores[-1], rtol=1e-9), (q, i)
        else:
            compared += 1
    assert len(questions) == 300
    assert compared >= 295


@pytest.mark.realdata
def test_bm25s_read_back_scores_scifact_as_bm25s_does(shared_data: Path, tmp_path: Path) -> None:
    """The index read back from the cache (numpy alone, no bm25s) against bm25s's own
    `BM25.load` of that folder: every SciFact test query's scores the same float64 bits, one
    query at a time and as one block."""
    from sweep.retrieval.bm25 import CACHE_FOLDER, _import_bm25s, query_tokens

    _, texts, questions, _ = _scifact(shared_data)
    BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    warm = BM25Index(texts, backend="bm25s", cache_dir=tmp_path)
    assert warm.from_cache
    (folder,) = (tmp_path / CACHE_FOLDER).iterdir()
    ref = _import_bm25s().BM25.load(str(folder), show_progress=False, verbosity=0)
    expected = []
    for q in questions:
        known = [t for t in query_tokens(q) if t in ref.vocab_dict]
        expected.append(np.asarray(ref.get_scores(known), dtype=np.float64) * 2.5 if known
                        else np.zeros(len(texts)))
    want = np.stack(expected)
    assert (want > 0).any(axis=1).all()
    single = np.stack([warm.scores(q) for q in questions])
    assert np.array_equal(single.view(np.int64), want.view(np.int64))
    assert np.array_equal(warm.scores_many(questions).view(np.int64), want.view(np.int64))
