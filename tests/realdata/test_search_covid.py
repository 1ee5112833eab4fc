"""The batched first stage on a real corpus: COVID-QA's 1,380 questions over its articles cut
into 256-token chunks (about 2,200), hybrid at depth 100. Random unit vectors stand in for a
model's (the dense stage's rankings need some vectors, not good ones), BM25 is bm25s on the
real texts, and `run_all` must give what the code before it gave (`old_run_all`: `top_k`,
`lexical_search` and `rrf_fuse` question by question), every ranking and score equal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import import_covid, old_run_all, same_results
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.search import ConfigSearch

pytestmark = pytest.mark.realdata


def test_run_all_equals_the_old_code_on_covid_qa(shared_data: Path, tmp_path: Path) -> None:
    import_covid(shared_data, tmp_path)
    docs = load_corpus(tmp_path / "d" / "corpus")
    questions = [item.question for item in load_golden(tmp_path / "d" / "golden.jsonl").items]
    chunks = chunk_corpus(docs, ChunkSpec("recursive", 256, 0), RegexTokenizer())
    assert len(questions) == 1380 and len(chunks) > 2000
    rng = np.random.default_rng(21)

    def unit(n: int) -> np.ndarray:
        x = rng.standard_normal((n, 384)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    chunk_vecs, query_vecs = unit(len(chunks)), unit(len(questions))
    bm25 = BM25Index([c.embed_text for c in chunks], backend="bm25s")
    search = ConfigSearch(chunks, "hybrid", 100, chunk_vecs=chunk_vecs, bm25=bm25)
    new = search.run_all(questions, query_vecs)
    assert same_results(new, old_run_all(search, questions, query_vecs)) == 1380 * 100
    # the case is not trivial: BM25 lists shorter than the depth, and fused ties at equal
    # ranks (one chunk dense-only, another BM25-only, at the same place)
    assert any(0 < len(r.bm25.indices) < 100 for r in new)
    assert any(len(set(r.final.scores)) < len(r.final.scores) for r in new)
