"""Second-stage reranking with a sentence-transformers CrossEncoder.

No trained cross-encoder ships on PyPI, so on an offline machine ``rerank.model`` must be a
local folder (any CrossEncoder saved with ``save_pretrained``, or a Hugging Face
sequence-classification model with its tokenizer). Where a hub is reachable, a hub id such as
``cross-encoder/ms-marco-MiniLM-L6-v2`` works as is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweep.common.errors import model_load_error
from sweep.common.hf import quiet_transformers
from sweep.common.registry import Entry, Registry, Traits


@dataclass(frozen=True)
class RerankSpec:
    model: str
    batch_size: int = 32
    max_length: int = 512


class CrossEncoderReranker:
    def __init__(self, spec: RerankSpec) -> None:
        quiet_transformers()
        from sentence_transformers import CrossEncoder

        self.spec = spec
        try:
            self.model: Any = CrossEncoder(spec.model, device="cpu", max_length=spec.max_length)
        except Exception as exc:
            raise model_load_error("rerank.model", spec.model, "cross-encoder", exc,
                                   "offline, rerank.model must be a local CrossEncoder folder "
                                   "(see docs/guide/retrieval.md, 'Reranking')") from None

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float64)
        out = self.model.predict([(query, t) for t in texts], batch_size=self.spec.batch_size,
                                 show_progress_bar=False, convert_to_numpy=True)
        out = np.asarray(out, dtype=np.float64)
        return out if out.ndim == 1 else out[:, -1]  # 2-label heads: the "relevant" logit


_RERANKERS: dict[RerankSpec, CrossEncoderReranker] = {}


def get_reranker(spec: RerankSpec) -> CrossEncoderReranker:
    if spec not in _RERANKERS:
        _RERANKERS[spec] = CrossEncoderReranker(spec)
    return _RERANKERS[spec]


# The rerank.method axis. `none` is its off value (the rerank section stays out of
# config_hash). `cohere` is a Cohere-style POST /rerank endpoint (Cohere, Jina, Voyage, TEI,
# infinity), served by sweep.embedding.served: its answers come from outside the machine.
RERANK: Registry[Callable[[RerankSpec], CrossEncoderReranker]] = Registry("rerank.method", [
    Entry("none", doc="no second stage"),
    Entry("cross_encoder", get_reranker, model_keys=("model",),
          doc="a sentence-transformers CrossEncoder (`model`)"),
    Entry("cohere", traits=Traits(remote=True, costs_money=True, deterministic=False),
          doc="a Cohere-style POST /rerank endpoint"),
], off="none")
