"""The token starts a sweep keeps per document are 4-byte offsets (issue 14, item 3): every
boundary cuts exactly the chunks it cuts from the tokenizer's own int64 starts."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import DEMO
from sweep.chunking.chunkers import BOUNDARIES, ChunkSpec, chunk_corpus, corpus_token_starts
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.data.corpus import load_corpus


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_chunks_from_int32_starts_equal_those_from_int64(boundary: str) -> None:
    docs = load_corpus(DEMO / "corpus")
    tok = load_chunk_tokenizer("minilm")
    compact = corpus_token_starts(docs, tok)
    wide = [tok.token_starts(d.text) for d in docs]
    assert [s.dtype for s in compact] == [np.dtype(np.int32)] * len(docs)
    assert [s.dtype for s in wide] == [np.dtype(np.int64)] * len(docs)
    assert all(np.array_equal(a, b) for a, b in zip(compact, wide, strict=True))
    spec = ChunkSpec(boundary, 40, 8, "path")
    assert chunk_corpus(docs, spec, tok, compact) == chunk_corpus(docs, spec, tok, wide)
