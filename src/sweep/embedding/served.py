"""Embedding models behind an OpenAI-compatible ``/embeddings`` endpoint.

The HTTP layer (retries, back-off, budgets, bounded reads, the key scrubbed from every
message), the cost formulas and the spend ledger are `sweep.endpoints`; this module is what is
particular to embeddings: batches, the answer's checks and the cache.

`ServedEmbedder` is an `Embedder` (the protocol of `sweep.embedding.embedder`): the same
content-addressed cache, keyed by a fingerprint of what makes the vectors (model name,
dimensions, prefixes, input types and the user's ``embedding.fingerprint``) and NOT of the
``base_url``, so the same model behind two URLs (a laptop's server, the team's gateway) shares
its vectors. Every response is checked (count, dimension, finite, non-zero) before anything is
cached; a batch that fails the check caches nothing, batches that passed are kept (they were
paid for).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from sweep.common.errors import SweepError
from sweep.common.progress import Progress
from sweep.embedding.cache import FILE_NAME, tiered

# The specs live with the `Embedder` protocol; this module implements it beside
# `models.LocalEmbedder` and imports neither that nor get_embedder.
from sweep.embedding.embedder import EmbeddingSpec, ServedSpec
from sweep.endpoints.cost import per_mtok
from sweep.endpoints.http import HttpEndpoint, RequestUsage, usage_tokens
from sweep.endpoints.ledger import record_hits, record_spend

log = logging.getLogger(__name__)


def estimate_tokens(texts: Sequence[str]) -> list[int]:
    """Tokens per text counted with the chunk tokenizer (MiniLM's WordPiece) plus two special
    tokens: a count for batching and budgets, and for cost when a response reports no usage."""
    from sweep.chunking.tokenizers import load_chunk_tokenizer

    tok = load_chunk_tokenizer("minilm")
    return [len(tok.token_starts(t)) + 2 for t in texts]


def plan_batches(tokens: Sequence[int], max_texts: int, max_tokens: int) -> list[range]:
    """Consecutive batches of at most ``max_texts`` texts and (``max_tokens`` > 0) at most
    ``max_tokens`` tokens; a text larger than ``max_tokens`` alone is a batch of its own.

    >>> plan_batches([5, 5, 5, 20, 1], 2, 12)
    [range(0, 2), range(2, 3), range(3, 4), range(4, 5)]
    """
    batches: list[range] = []
    start, used = 0, 0
    for i, n in enumerate(tokens):
        full = i - start >= max_texts or (max_tokens > 0 and used + n > max_tokens)
        if i > start and full:
            batches.append(range(start, i))
            start, used = i, 0
        used += n
    if start < len(tokens):
        batches.append(range(start, len(tokens)))
    return batches


def parse_embeddings(data: Any, n: int, dimensions: int, url: str) -> np.ndarray:
    """The ``n`` vectors of an OpenAI ``/embeddings`` answer, in input order, L2-normalised;
    raises a `SweepError` naming ``url`` when the answer is not exactly that."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise SweepError(f"embedding: {url}: the answer has no 'data' list "
                         "(not an OpenAI embeddings response)")
    if len(items) != n:
        raise SweepError(f"embedding: {url}: {len(items)} vectors for {n} texts")
    rows: list[Any] = [None] * n
    for pos, item in enumerate(items):
        idx = item.get("index", pos) if isinstance(item, dict) else None
        vec = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(idx, int) or not 0 <= idx < n or rows[idx] is not None:
            raise SweepError(f"embedding: {url}: bad or repeated index {idx!r} in 'data'")
        if isinstance(vec, str):  # encoding_format=base64 servers that ignore "float"
            import base64
            import binascii

            try:
                vec = np.frombuffer(base64.b64decode(vec, validate=True), dtype=np.float32)
            except (binascii.Error, ValueError):
                raise SweepError(f"embedding: {url}: vector {idx} is a string that is not "
                                 "base64 of float32 values") from None
        rows[idx] = vec
    try:
        with np.errstate(over="ignore"):  # a float64 beyond float32 becomes inf, refused below
            arr = np.asarray(rows, dtype=np.float32)
    except OverflowError:
        raise SweepError(f"embedding: {url}: vectors with numbers too large for a float") \
            from None
    except (TypeError, ValueError):
        raise SweepError(f"embedding: {url}: vectors of different lengths or not numbers") \
            from None
    if arr.ndim != 2:
        raise SweepError(f"embedding: {url}: vectors of different lengths or not numbers")
    if dimensions and arr.shape[1] != dimensions:
        raise SweepError(f"embedding: {url}: vectors of dimension {arr.shape[1]}, expected "
                         f"embedding.dimensions={dimensions}")
    if not np.isfinite(arr).all():
        raise SweepError(f"embedding: {url}: vectors with NaN or infinite values")
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        if (norms == 0).any():
            raise SweepError(f"embedding: {url}: an all-zero vector")
        # Finite components whose squares overflow float32 (values near 3e38) have an
        # infinite norm, and dividing by it gave an all-zero vector that was cached and
        # scored: such a vector is as bad as a NaN. So is one whose tiny norm overflows it.
        out = arr / norms
        good = np.isfinite(norms[:, 0]) & np.isfinite(out).all(axis=1) & (out != 0).any(axis=1)
    if not good.all():
        bad = int(np.flatnonzero(~good)[0])
        raise SweepError(f"embedding: {url}: vector {bad} cannot be normalised (its length "
                         f"overflows float32: components up to {np.abs(arr[bad]).max():.3g})")
    return out.astype(np.float32)


def served_fingerprint(spec: EmbeddingSpec, served: ServedSpec) -> str:
    """What makes a served model's vectors, without where it is served from."""
    parts = ["openai", served.model, str(served.dimensions), spec.query_prefix,
             spec.document_prefix, served.query_input_type, served.document_input_type,
             served.fingerprint, "l2"]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


class ServedEmbedder:
    """An embedding model behind an OpenAI-compatible ``/embeddings`` endpoint."""

    metric_prefix = "embedding"  # sweep.endpoints.cost.Metered: embedding_requests, ...
    reports_cache_hits = True

    def __init__(self, spec: EmbeddingSpec) -> None:  # no local model to load
        if spec.served is None or not spec.served.model:
            raise SweepError("embedding.model is empty: name the model the endpoint serves")
        self.spec = spec
        self.served = spec.served
        self.http = HttpEndpoint(spec.served.endpoint)
        self.path = spec.served.endpoint.base_url
        self._model = None
        self.loads = 0
        self._max_seq_length = None
        self.fingerprint = served_fingerprint(spec, spec.served)
        self._cache: dict[bytes, np.ndarray] = {}
        self._lengths: dict[bytes, int] = {}
        self._kept: dict[bytes, float] = {}
        self._timed: dict[str, tuple[np.ndarray, float]] = {}
        self.cache = None
        self.encoded_texts = 0
        self.read_from_cache = 0  # distinct texts the disk cache answered
        self.timed_from_cache = 0  # query times are never measured for a served model
        self.timed_now = 0
        self._dim = spec.served.dimensions

    def _load(self) -> None:
        # Nothing here is a local model, and a caller that reaches for one (a tokenizer,
        # say) must not load a folder named like the base_url.
        raise SweepError(f"embedding.family=openai: {self.served.model!r} is served from "
                         f"{self.path}; there is no local model to load")

    @property
    def model(self) -> Any:  # there is none: `_load` says why
        self._load()
        return None

    @property
    def loaded(self) -> bool:
        return False

    def kept_chars(self, texts: list[str]) -> list[int | None]:
        return [None] * len(texts)  # no tokenizer, no truncation check

    @property
    def max_seq_length(self) -> int | None:
        return None  # unknown behind an endpoint: no truncation check

    @property
    def dimension(self) -> int:
        return self._dim

    @property
    def usage(self) -> RequestUsage:
        return self.http.usage

    def cost(self, usage: RequestUsage) -> float:
        return per_mtok(usage.tokens, self.served.price_per_mtok)

    def encode(self, texts: list[str], *, query: bool = False, progress: bool = True
               ) -> np.ndarray:
        prefix = self.spec.query_prefix if query else self.spec.document_prefix
        input_type = self.served.query_input_type if query else self.served.document_input_type
        disk = self.cache

        def disk_get(model: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
            if disk is None:
                return {}
            found = disk.get_many(model, keys)
            self.http.count_cached(len(found))
            with self.http.lock:
                self.read_from_cache += len(found)
            record_hits(disk.folder / FILE_NAME, model, len(found))
            return found

        def send(todo: list[str]) -> list[np.ndarray]:
            return list(self._send(todo, input_type, progress))

        # Batches are written to the disk cache as they pass their checks (in `_send`), so
        # `tiered` gets no disk_put.
        keys = tiered([prefix + t for t in texts], self._cache, disk_get, None,
                       self.fingerprint, send)
        if not keys:
            return np.zeros((0, self.dimension), dtype=np.float32)
        dims = {self._cache[k].shape[0] for k in keys}
        if len(dims) > 1:
            raise SweepError(f"embedding.model={self.served.model!r}: cached vectors of "
                             f"dimensions {sorted(dims)} under one fingerprint (the endpoint "
                             "serves another model under this name?)",
                             hint="set embedding.fingerprint to tell the two apart")
        self._dim = self._dim or dims.pop()
        return np.stack([self._cache[k] for k in keys])

    def _send(self, texts: list[str], input_type: str, progress: bool) -> np.ndarray:
        """Vectors for ``texts`` from the endpoint, ``concurrency`` requests in flight; each
        checked batch goes to the disk cache at once. The first failure stops what has not
        started and is raised after the requests in flight are done (and, if good, kept)."""
        from sweep.common.sqlite import text_key

        sv = self.served
        tokens = estimate_tokens(texts)
        batches = plan_batches(tokens, sv.max_texts_per_request, sv.max_tokens_per_request)
        out: list[np.ndarray | None] = [None] * len(texts)
        url = self.http.url("embeddings")
        disk = self.cache

        def one(batch: range) -> tuple[range, np.ndarray, int, int]:
            body: dict[str, Any] = {"model": sv.model, "input": [texts[i] for i in batch],
                                    "encoding_format": "float"}
            if sv.dimensions:
                body["dimensions"] = sv.dimensions
            if input_type:
                body["input_type"] = input_type
            estimate = sum(tokens[i] for i in batch)
            data = self.http.post("embeddings", body, estimate)
            vecs = parse_embeddings(data, len(batch), sv.dimensions, url)
            reported = usage_tokens(data)
            return batch, vecs, estimate if reported is None else reported, reported is None

        error: BaseException | None = None
        pool = ThreadPoolExecutor(max_workers=max(1, sv.endpoint.concurrency))
        pending: set[Future] = set()
        queue = list(reversed(batches))
        bar = None
        if progress and len(batches) > 1:
            # a bar on a terminal only; a log gets a line every 30 s (a bar there was one
            # redraw per line)
            bar = Progress(f"embed via {sv.model}", total=len(texts), unit="texts").__enter__()
        try:
            while queue or pending:
                while queue and error is None and len(pending) < max(1, sv.endpoint.concurrency):
                    pending.add(pool.submit(one, queue.pop()))
                if not pending:
                    break
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        batch, vecs, n_tokens, counted = fut.result()
                    except BaseException as exc:  # re-raised below
                        error = error or exc
                        continue
                    if self._dim and vecs.shape[1] != self._dim:
                        error = error or SweepError(
                            f"embedding: {url}: vectors of dimension {vecs.shape[1]}, earlier "
                            f"ones {self._dim}")
                        continue
                    self._dim = self._dim or int(vecs.shape[1])
                    for i, v in zip(batch, vecs, strict=True):
                        out[i] = v
                    self.http.count(len(batch), n_tokens, counted)
                    self.encoded_texts += len(batch)
                    if disk is not None:
                        disk.put_many(self.fingerprint,
                                      [(text_key(texts[i]), v) for i, v in zip(batch, vecs,
                                                                                strict=True)])
                        record_spend(disk.folder / FILE_NAME, self.fingerprint, sv.model,
                                     len(batch), n_tokens, per_mtok(n_tokens, sv.price_per_mtok))
                    if bar is not None:
                        bar.update(len(batch))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if bar is not None:
                bar.__exit__(None, None, None)
        if error is not None:
            raise error
        return np.stack([v for v in out if v is not None])

    def encode_uncached(self, text: str, *, query: bool = True) -> np.ndarray:
        prefix = self.spec.query_prefix if query else self.spec.document_prefix
        input_type = self.served.query_input_type if query else self.served.document_input_type
        return self._send([prefix + text], input_type, progress=False)[0]

    def timed_queries(self, questions: list[str]) -> list[tuple[np.ndarray, float]]:
        """The cached query vectors, untimed: timing a served model would spend a request per
        question on every run (and its latency is the network's as much as the model's), so
        ``latency_query_embed_*`` is not reported and ``latency_end_to_end_*`` leaves it out."""
        vecs = self.encode(questions, query=True, progress=False)
        return [(v, None) for v in vecs]  # type: ignore[misc]

    def token_lengths(self, texts: list[str]) -> list[int] | None:
        return None
