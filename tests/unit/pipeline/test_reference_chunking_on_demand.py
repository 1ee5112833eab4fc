"""The reference chunking is made only for a golden set that has chunk ids (issue 14, item 3:
on one 52 MB file it was a second chunking of the corpus held through the run). Either way
the resolved evidence is what resolving with the reference chunks gives."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import sweep.pipeline.memo as memo
from helpers import DEMO
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import corpus_fingerprint, load_corpus
from sweep.data.golden import load_golden
from sweep.evaluation.relevance import CorpusIndex, resolve_all

REFERENCE = ChunkSpec("heading", 256, 0)  # data/demo/golden.reference.yaml


@pytest.fixture(autouse=True)
def _fresh_memo() -> None:
    memo.clear_memo()


def _golden_without_chunk_ids(tmp_path: Path) -> Path:
    path = tmp_path / "golden.jsonl"
    rows = [json.loads(line) for line in (DEMO / "golden.jsonl").read_text().splitlines()
            if line.strip()]
    assert any(r.get("relevant_chunk_ids") for r in rows)
    for r in rows:
        r.pop("relevant_chunk_ids", None)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    shutil.copy(DEMO / "golden.reference.yaml", tmp_path / "golden.reference.yaml")
    return path


def _reference_chunkings() -> list[tuple]:
    return [k for k in memo._MEMO.chunks if k[1] == REFERENCE]


@pytest.mark.parametrize("with_ids", [True, False])
def test_resolution_equals_resolving_with_the_reference_chunks(tmp_path: Path,
                                                              with_ids: bool) -> None:
    docs = load_corpus(DEMO / "corpus")
    golden = load_golden(DEMO / "golden.jsonl" if with_ids else _golden_without_chunk_ids(tmp_path))
    assert golden.reference is not None
    got = memo.resolve_golden(golden, docs, corpus_fingerprint(docs))
    reference = {c.chunk_id: c for c in chunk_corpus(docs, REFERENCE,
                                                     load_chunk_tokenizer("minilm"))}
    expected = resolve_all(golden.items, CorpusIndex(docs), reference, golden.path)
    assert got == expected
    assert any(r.spans for r in got)
    # The reference chunking is in memory only when an item names chunk ids.
    assert len(_reference_chunkings()) == (1 if with_ids else 0)
