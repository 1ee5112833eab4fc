"""What callers of an embedding model use, apart from the models that implement it.

`EmbeddingSpec` (with `ServedSpec`, and `sweep.endpoints.spec.EndpointSpec`, for a model behind an endpoint) says which
model and how to call it; `Embedder` is the protocol both implementations follow:
`models.LocalEmbedder` (a sentence-transformers or model2vec model on this machine) and
`served.ServedEmbedder` (an OpenAI-compatible ``/embeddings`` endpoint). The stages and the
pipeline type against the protocol, so the two implementations import this module and not each
other (issue 31: they were a circle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sweep.common.errors import SweepError
from sweep.embedding.backends import REFERENCE, check_pair, require
from sweep.endpoints.spec import EndpointSpec

if TYPE_CHECKING:
    import numpy as np

    from sweep.embedding.cache import EmbeddingCache


@dataclass(frozen=True)
class ServedSpec:
    """An embedding model behind an OpenAI-compatible endpoint (``embedding.family=openai``)."""

    endpoint: EndpointSpec
    model: str
    dimensions: int = 0
    query_input_type: str = ""
    document_input_type: str = ""
    fingerprint: str = ""
    max_texts_per_request: int = 256
    max_tokens_per_request: int = 0
    price_per_mtok: float = 0.0


@dataclass(frozen=True)
class EmbeddingSpec:
    name: str = "minilm"
    family: str = "sentence_transformers"
    distill_from: str = "minilm"
    pca_dims: int = 256
    batch_size: int = 32
    query_prefix: str = ""
    document_prefix: str = ""
    device: str = "auto"  # local models: auto | cpu | cuda | cuda:N | mps
    served: ServedSpec | None = None  # family=openai: the endpoint and how to call it
    # Local sentence-transformers models: what runs the transformer, at what precision
    # (sweep.embedding.backends; torch fp32 is the reference).
    backend: str = "torch"
    precision: str = "fp32"
    # A text longer than the model's window: truncate (the model's own cut) or window_mean
    # (`sweep.embedding.models.window_mean`).
    long_text: str = "truncate"

    def check_long_text(self) -> None:
        """window_mean needs the model's tokenizer and window: a local model."""
        if self.long_text != "truncate" and self.served is not None:
            raise SweepError(f"embedding.long_text={self.long_text} applies to local models "
                             f"only, not family={self.family} (an endpoint cuts or refuses a "
                             "long text its own way): leave it at truncate")

    def check_backend(self) -> None:
        """A pair the backend runs, on a model it can run (a transformer in a
        sentence-transformers folder), on the CPU, with what it needs installed."""
        if (self.backend, self.precision) == REFERENCE:
            return
        check_pair(self.backend, self.precision)
        pair = f"embedding.backend={self.backend} embedding.precision={self.precision}"
        if self.family != "sentence_transformers":
            raise SweepError(f"{pair} applies to family=sentence_transformers only, not "
                             f"{self.family} (leave them at torch, fp32)")
        if self.device not in ("auto", "cpu"):
            raise SweepError(f"{pair} runs on the CPU: embedding.device={self.device!r} needs "
                             "backend=torch, precision=fp32")
        require(self.backend)


class Embedder(Protocol):
    """One embedding model with its in-process and disk caches, as the pipeline uses it."""

    spec: EmbeddingSpec
    path: str
    fingerprint: str  # keys the disk cache: everything that changes a vector
    cache: EmbeddingCache | None  # the disk cache, set by the caller
    loads: int  # times the model was loaded
    encoded_texts: int  # texts actually sent through the model (cache misses)
    read_from_cache: int  # distinct texts the disk cache answered
    timed_from_cache: int  # query times read back instead of measured
    timed_now: int

    @property
    def model(self) -> Any: ...

    @property
    def loaded(self) -> bool: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_seq_length(self) -> int | None: ...

    def encode(self, texts: list[str], *, query: bool = False, progress: bool = True
               ) -> np.ndarray: ...

    def encode_uncached(self, text: str, *, query: bool = True) -> np.ndarray: ...

    def timed_queries(self, questions: list[str]) -> list[tuple[np.ndarray, float]]: ...

    def token_lengths(self, texts: list[str]) -> list[int] | None: ...

    def kept_chars(self, texts: list[str]) -> list[int | None]: ...
