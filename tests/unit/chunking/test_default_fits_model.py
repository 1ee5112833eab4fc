"""The default chunk fits the default model (issue 30): MiniLM reads max_seq_length tokens
*including* its [CLS] and [SEP], so chunk.size must leave room for both, or the default run
has the model silently drop the end of its longest chunks."""

from __future__ import annotations

import json
from pathlib import Path

from sweep.chunking.chunkers import ChunkSpec
from sweep.config.schema import ChunkConfig, EmbeddingConfig
from sweep.embedding.models import resolve_model_path


def test_the_default_chunk_size_plus_special_tokens_fits_the_default_model() -> None:
    folder = Path(resolve_model_path(EmbeddingConfig().name))
    limit = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
    special = json.loads((folder / "tokenizer.json").read_text())["post_processor"]
    n_special = len(special["single"]) - 1  # [CLS] $A [SEP]: every piece but the text
    assert (limit, n_special) == (256, 2)
    assert ChunkSpec().size == ChunkConfig().size == 254
    assert ChunkConfig().size + n_special <= limit
    assert ChunkConfig().header == "none"  # a header would add tokens on top
