"""A tiny *untrained* cross-encoder, for testing the rerank path where no hub is reachable.

Its scores are random (seeded, so deterministic): it exercises loading, pooling, ordering and
latency, and says nothing about reranking quality.

    python -m sweep.dev.fixtures .cache/untrained-reranker

A development command: the test suite and the offline reranking example (docs/guide/retrieval.md) use it.
"""

from __future__ import annotations

import sys
from pathlib import Path


def make_untrained_cross_encoder(path: str | Path, *, seed: int = 0, hidden: int = 32) -> Path:
    """Write a one-layer BERT sequence classifier with MiniLM's tokenizer to ``path``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from sweep.chunking.tokenizers import minilm_path

    path = Path(path)
    if (path / "config.json").exists():
        return path
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast.from_pretrained(str(minilm_path()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden,
                        num_hidden_layers=1, num_attention_heads=2, intermediate_size=2 * hidden,
                        max_position_embeddings=512, num_labels=1)
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else ".cache/untrained-reranker"
    print(make_untrained_cross_encoder(target))
