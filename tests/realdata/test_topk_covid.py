"""The one-pass metrics equal the reference functions on a real golden set: COVID-QA.

1,380 questions with real evidence spans over 147 long articles, chunked with overlap (so
ranked chunks overlap each other and the evidence), in both span modes. No model: each
question's ranking mixes the chunks that hold its evidence with others, in a seeded order, 40
deep, so a k of 50 reads past the ranking's end."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from helpers import check_rows_against_reference, import_covid
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.placement import placed_spans
from sweep.evaluation.relevance import ChunkLocator, CorpusIndex, resolve_all
from sweep.retrieval.ranking import Ranking

pytestmark = pytest.mark.realdata


def test_one_pass_metrics_equal_the_reference_on_covid_qa(shared_data: Path,
                                                          tmp_path: Path) -> None:
    import_covid(shared_data, tmp_path)
    docs = load_corpus(tmp_path / "d" / "corpus")
    golden = load_golden(tmp_path / "d" / "golden.jsonl")
    resolved = resolve_all(golden.items, CorpusIndex(docs), None)
    chunks = chunk_corpus(docs, ChunkSpec("recursive", 128, 32), RegexTokenizer())
    texts = {d.doc_id: d.text for d in docs}
    locator = ChunkLocator(chunks)
    position = {c.chunk_id: i for i, c in enumerate(chunks)}
    rng = random.Random(21)
    rankings = []
    for r in resolved:
        near = {position[c.chunk_id] for d, a, b in r.spans for c in locator.overlapping(d, a, b)}
        order = list(near) + rng.sample(range(len(chunks)), 40 - min(len(near), 40))
        rng.shuffle(order)
        order = list(dict.fromkeys(order))[:40]
        rankings.append(Ranking(tuple(order), tuple(-i / 100 for i in range(len(order)))))
    for mode in ("exact", "chroma"):
        spec = EvalSpec(k=(1, 3, 5, 10, 50), prompt_k=5, token_budget=1024, min_overlap=0.5,
                        span_mode=mode)
        _, rows = evaluate(resolved, chunks, rankings, spec, texts=texts)
        spans = placed_spans(chunks, mode, texts)
        assert check_rows_against_reference(rows, resolved, chunks, rankings, spans, spec) > 1300
        # the case is not trivial: overlapping top chunks, and some partial evidence recall
        assert any(0 < row["evidence_recall_at_3"] < 1 for row in rows)
        assert any(row["span_precision_at_10"] < row["span_precision_at_1"] for row in rows)
