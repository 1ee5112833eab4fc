"""A model loads only when it has work: a warm job with every vector, token length, truncation
offset and query time on disk never calls the loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sweep.embedding import models
from sweep.embedding.cache import EmbeddingCache
from sweep.embedding.models import EmbeddingSpec, LocalEmbedder, declared_max_seq_length

MINILM = EmbeddingSpec()
QUESTION = "how long is the refund window?"
TEXTS = ["The refund window is 30 days.", "Warranty covers two years. " * 80]


def _refuse(*_: object) -> None:
    raise AssertionError("the model loader was called on a warm cache")


def test_declared_limit_is_the_loaded_models() -> None:
    e = LocalEmbedder(MINILM)
    assert e.loads == 0
    known, declared = declared_max_seq_length(e.path, MINILM.family)
    assert known and declared == e.max_seq_length
    assert e.model.max_seq_length == declared == 256 and e.loads == 1


def test_warm_embedder_never_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = LocalEmbedder(MINILM)
    cold.cache = EmbeddingCache(tmp_path / "e.sqlite")
    vecs = cold.encode(TEXTS, progress=False)
    lengths = cold.token_lengths(TEXTS)
    kept = cold.kept_chars(TEXTS)
    # As a job does: the questions are embedded (cached) before the latency pass times them.
    cold.encode([QUESTION], query=True, progress=False)
    timed = cold.timed_queries([QUESTION])
    assert cold.loads == 1 and cold.timed_now == 1
    assert lengths is not None and lengths[1] > 256 and kept[0] is None
    assert kept[1] is not None and 0 < kept[1] < len(TEXTS[1])

    monkeypatch.setattr(models, "_load_sentence_transformer", _refuse)
    warm = LocalEmbedder(MINILM)
    warm.cache = EmbeddingCache(tmp_path / "e.sqlite")
    assert warm.fingerprint == cold.fingerprint
    assert np.array_equal(warm.encode(TEXTS, progress=False), vecs)
    assert warm.token_lengths(TEXTS) == lengths
    assert warm.kept_chars(TEXTS) == kept
    again = warm.timed_queries([QUESTION])
    assert again[0][1] == timed[0][1]  # the time measured on this machine, read back
    assert warm.timed_from_cache == 1 and warm.timed_now == 0 and warm.loads == 0


def test_a_miss_loads_the_model_once(tmp_path: Path) -> None:
    e = LocalEmbedder(MINILM)
    e.cache = EmbeddingCache(tmp_path / "e.sqlite")
    e.encode(["one"], progress=False)
    e.encode(["two"], progress=False)
    assert e.loads == 1 and e.encoded_texts == 2
