"""Models behind an endpoint: OpenAI-compatible ``/embeddings`` and Cohere-style ``/rerank``.

One HTTP layer (`HttpEndpoint`, on httpx) serves both routes: a timeout per request, retries
with exponential back-off on 429, 5xx, timeouts and dropped connections (``Retry-After``
honoured), a per-minute request/token budget, ``concurrency`` requests in flight, and every
failure as one line naming the endpoint and the status. It is written here rather than taken
from the `openai` SDK because the SDK has no ``/rerank`` route and hides its retries, and the
sweep reports how many requests each configuration really sent.

`ServedEmbedder` is an `Embedder` (the protocol of `sweep.embedding.embedder`): the same content-addressed cache, keyed by a fingerprint of
what makes the vectors (model name, dimensions, prefixes, input types and the user's
``embedding.fingerprint``) and NOT of the ``base_url``, so the same model behind two URLs (a
laptop's server, the team's gateway) shares its vectors. Every response is checked (count,
dimension, finite, non-zero) before anything is cached; a batch that fails the check caches
nothing, batches that passed are kept (they were paid for).
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import json
import logging
import os
import random
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from sweep.common.errors import SweepError
from sweep.common.net import connect_error
from sweep.common.progress import Progress
from sweep.common.secret import scrub
from sweep.common.sqlite import open_db
from sweep.embedding.cache import FILE_NAME, tiered

# The specs live with the `Embedder` protocol (callers import them from here too); this module
# implements it beside `models.LocalEmbedder` and imports neither that nor get_embedder.
from sweep.embedding.embedder import EmbeddingSpec, EndpointSpec, ServedSpec

log = logging.getLogger(__name__)
# httpx logs every request at INFO, and a Hydra job logs at INFO: one line per batch is noise.
logging.getLogger("httpx").setLevel(logging.WARNING)

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0  # a longer Retry-After fails the call rather than stall a sweep
# 256 texts of 3,072 floats written as JSON take about 20 MB: four times that is no answer.
MAX_BODY_BYTES = 80 * 2**20
MAX_ERROR_BYTES = 64 * 2**10


@dataclass
class Usage:
    """What was sent to an endpoint. ``tokens`` are the responses' ``usage`` counts; where a
    response had none, the text was counted with the chunk tokenizer (``tokens_counted``).
    ``cached``: texts the disk cache answered instead of the endpoint."""

    requests: int = 0
    retries: int = 0
    texts: int = 0
    tokens: int = 0
    tokens_counted: int = 0  # the part of ``tokens`` counted here, not reported
    cached: int = 0

    def minus(self, before: Usage) -> Usage:
        return Usage(*(getattr(self, f.name) - getattr(before, f.name)
                       for f in dataclasses.fields(self)))

    def copy(self) -> Usage:
        return self.minus(Usage())


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date.

    >>> retry_after_s("2"), retry_after_s(None), retry_after_s("soon")
    (2.0, None, None)
    """
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_s(attempt: int, base: float = 0.5, cap: float = 8.0) -> float:
    """Exponential back-off with full jitter for the ``attempt``-th retry (0-based)."""
    return random.uniform(0.5, 1.0) * min(cap, base * 2**attempt)


class _Budget:
    """A sliding one-minute window of requests and tokens: `take` waits until one more request
    of ``tokens`` fits under both limits (a request larger than the token limit alone waits for
    an empty window)."""

    def __init__(self, rpm: int, tpm: int) -> None:
        self.rpm, self.tpm = rpm, tpm
        self._sent: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def take(self, tokens: int) -> None:
        if self.rpm <= 0 and self.tpm <= 0:
            return
        while True:
            with self._lock:
                now = time.monotonic()
                while self._sent and now - self._sent[0][0] >= 60.0:
                    self._sent.popleft()
                used = sum(n for _, n in self._sent)
                fits_r = self.rpm <= 0 or len(self._sent) < self.rpm
                fits_t = self.tpm <= 0 or used + tokens <= self.tpm or not self._sent
                if fits_r and fits_t:
                    self._sent.append((now, tokens))
                    return
                wait_s = 60.0 - (now - self._sent[0][0]) + 0.01
            time.sleep(min(wait_s, 1.0))


class HttpEndpoint:
    """POST JSON to one endpoint, with retries, a per-minute budget and usage counting."""

    def __init__(self, ep: EndpointSpec) -> None:
        s = ep.section
        parsed = urlparse(ep.base_url)
        if not ep.base_url:
            raise SweepError(f"{s}.base_url is empty",
                             hint="e.g. http://127.0.0.1:7997/v1 (make model-server) or "
                             "https://api.openai.com/v1")
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise SweepError(f"{s}.base_url={ep.base_url!r} is not an http(s) URL")
        self.ep = ep
        self.usage = Usage()
        self._budget = _Budget(ep.requests_per_minute, ep.tokens_per_minute)
        self._lock = threading.Lock()
        self._checked = False
        self._client: Any = None

    def _key(self) -> str:
        return os.environ.get(self.ep.api_key_env, "") if self.ep.api_key_env else ""

    def url(self, route: str) -> str:
        return self.ep.base_url.rstrip("/") + "/" + route.lstrip("/")

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx

                if not self._checked:
                    # Fail in seconds when nothing listens (retries would take minutes).
                    reason = connect_error(self.ep.base_url, min(3.0, self.ep.timeout_s))
                    if reason is not None:
                        raise SweepError(f"{self.ep.section}.base_url={self.ep.base_url}: cannot "
                                         f"reach the endpoint ({reason})",
                                         hint="start the server (make model-server) or fix "
                                         "the URL")
                    self._checked = True
                    if self.ep.api_key_env and not self._key():
                        log.warning("%s.api_key_env: $%s is not set; calling %s without a key "
                                    "(fine for local servers)", self.ep.section,
                                    self.ep.api_key_env, self.ep.base_url)
                limits = httpx.Limits(max_connections=max(1, self.ep.concurrency))
                self._client = httpx.Client(timeout=self.ep.timeout_s, limits=limits)
            return self._client

    def post(self, route: str, body: dict[str, Any], tokens_estimate: int = 0) -> Any:
        """The parsed JSON answer to one request; raises a one-line `SweepError`.

        Each attempt has ``timeout_s`` in total (a server that drips its body a byte at a time
        never trips httpx's per-read timeout) and reads at most `MAX_BODY_BYTES`. Redirects are
        not followed: the key would go with the request to wherever the server points."""
        import httpx

        client = self._http()
        url = self.url(route)
        key = self._key()
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        s, tries = self.ep.section, self.ep.max_retries
        last = ""
        for attempt in range(tries + 1):
            self._budget.take(tokens_estimate)
            wait_s: float | None = None
            try:
                status, resp_headers, raw = self._exchange(client, url, body, headers)
            except _Deadline:
                last = f"no complete answer within {s}.timeout_s={self.ep.timeout_s}"
            except httpx.TimeoutException:
                last = f"no answer within {s}.timeout_s={self.ep.timeout_s}"
            except httpx.TransportError as exc:
                last = f"connection failed ({type(exc).__name__})"
            else:
                if status == 200:
                    data = self._json_200(raw, resp_headers, url, key)
                    with self._lock:
                        self.usage.requests += 1
                    return data
                if 300 <= status < 400:
                    raise self._error(_redirect_line(status, url, resp_headers, s), key)
                detail = _detail(raw)
                if status not in RETRY_STATUSES:
                    raise self._error(self._status_line(status, url, detail), key)
                last = f"HTTP {status}{': ' + detail if detail else ''}"
                wait_s = retry_after_s(resp_headers.get("retry-after"))
                if wait_s is not None and wait_s > MAX_RETRY_AFTER_S:
                    raise self._error(f"{url}: HTTP {status} asks to retry after "
                                      f"{wait_s:.0f} s (more than {MAX_RETRY_AFTER_S:.0f} s); "
                                      f"lower {s}.requests_per_minute or {s}.concurrency", key)
            if attempt == tries:
                break
            with self._lock:
                self.usage.retries += 1
            delay = wait_s if wait_s is not None else backoff_s(attempt)
            # The log goes to the job's log file: the server's words may hold the key.
            log.info("%s: %s from %s; retry %d of %d in %.1f s", s, scrub(last, key), url,
                     attempt + 1, tries, delay)
            time.sleep(delay)
        hint = f"; lower {s}.concurrency or set {s}.requests_per_minute" if "429" in last else ""
        raise self._error(f"{url}: {last} (after {tries} retries){hint}", key)

    def _exchange(self, client: Any, url: str, body: dict[str, Any], headers: dict[str, str]
                  ) -> tuple[int, Any, bytes]:
        """One request: status, headers and at most `MAX_BODY_BYTES` of the body (an error
        answer: its first `MAX_ERROR_BYTES`), all within ``timeout_s``."""
        deadline = time.monotonic() + self.ep.timeout_s
        with client.stream("POST", url, json=body, headers=headers) as resp:
            status = resp.status_code
            cap = MAX_BODY_BYTES if status == 200 else MAX_ERROR_BYTES
            declared = resp.headers.get("content-length", "")
            if status == 200 and declared.isdigit() and int(declared) > cap:
                raise self._error(f"{url}: an answer of {int(declared):,} bytes, more than "
                                  f"{cap:,} (lower {self.ep.section}.max_texts_per_request)",
                                  self._key())
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:
                    if status != 200:
                        break  # the start of an error body is all a message needs
                    raise self._error(f"{url}: an answer of more than {cap:,} bytes (lower "
                                      f"{self.ep.section}.max_texts_per_request)", self._key())
                if time.monotonic() > deadline:
                    raise _Deadline
            return status, resp.headers, b"".join(chunks)[:cap]

    def _json_200(self, raw: bytes, headers: Any, url: str, key: str) -> Any:
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        if kind == "text/html" or raw.lstrip()[:1] == b"<":
            raise self._error(f"{url}: HTTP 200 with an HTML page, not JSON (a login page or a "
                              "proxy in front of the endpoint?)", key)
        try:
            return json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            text = raw[:80].decode("utf-8", "replace")
            raise self._error(f"{url}: HTTP 200 with a body that is not JSON "
                              f"(truncated?): {text!r}", key) from None
        except RecursionError:
            raise self._error(f"{url}: HTTP 200 with JSON nested too deeply to be an "
                              "answer", key) from None

    def _status_line(self, status: int, url: str, detail: str) -> str:
        s = self.ep.section
        if status in (401, 403):
            # The body of a 401 may echo the key: it is not repeated.
            where = (f"put the key in ${self.ep.api_key_env} ({s}.api_key_env)"
                     if self.ep.api_key_env else f"set {s}.api_key_env to the variable that "
                     "holds the key")
            return f"{url}: HTTP {status}, the endpoint refused the credentials; {where}"
        if status == 404:
            return (f"{url}: HTTP 404 (unknown model, or a {s}.base_url without its /v1)"
                    f"{': ' + detail if detail else ''}")
        return f"{url}: HTTP {status}{': ' + detail if detail else ''}"

    def _error(self, message: str, key: str) -> SweepError:
        return SweepError(scrub(" ".join(f"{self.ep.section}: {message}".split()), key))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class _Deadline(Exception):
    """An answer still arriving when the attempt's ``timeout_s`` ran out."""


def _redirect_line(status: int, url: str, headers: Any, section: str) -> str:
    target = urlparse(headers.get("location", ""))
    # scheme, host and path only: a query string may carry a token
    where = (f"{target.scheme}://{target.netloc}{target.path}" if target.netloc
             else target.path or "nowhere")
    return (f"{url}: HTTP {status} redirects to {where}; not followed (the key would go with "
            f"it): set {section}.base_url to the address that answers")


def _detail(raw: bytes) -> str:
    """The server's error message, short: ``error.message``, ``detail``, ``message``, or text."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return raw[:160].decode("utf-8", "replace").strip()
    if isinstance(data, dict):
        err = data.get("error")
        for value in (err.get("message") if isinstance(err, dict) else err,
                      data.get("detail"), data.get("message")):
            if value:
                return str(value)[:160]
    return str(data)[:160]


# --------------------------------------------------------------------------- embeddings


def _estimate_tokens(texts: Sequence[str]) -> list[int]:
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
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise SweepError(f"embedding: {url}: an all-zero vector")
    return (arr / norms).astype(np.float32)


def usage_tokens(data: Any) -> int | None:
    """Input tokens a response reports: OpenAI ``usage.prompt_tokens``/``total_tokens``,
    Cohere ``meta.billed_units.input_tokens``; None when it reports none."""
    if not isinstance(data, dict):
        return None
    usage = data.get("usage")
    if isinstance(usage, dict):
        for k in ("prompt_tokens", "total_tokens", "input_tokens"):
            if isinstance(usage.get(k), int):
                return int(usage[k])
    billed = (data.get("meta") or {}).get("billed_units") if isinstance(data.get("meta"),
                                                                         dict) else None
    if isinstance(billed, dict) and isinstance(billed.get("input_tokens"), int):
        return int(billed["input_tokens"])
    return None


def served_fingerprint(spec: EmbeddingSpec, served: ServedSpec) -> str:
    """What makes a served model's vectors, without where it is served from."""
    parts = ["openai", served.model, str(served.dimensions), spec.query_prefix,
             spec.document_prefix, served.query_input_type, served.document_input_type,
             served.fingerprint, "l2"]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


class ServedEmbedder:
    """An embedding model behind an OpenAI-compatible ``/embeddings`` endpoint."""

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
    def usage(self) -> Usage:
        return self.http.usage

    def encode(self, texts: list[str], *, query: bool = False, progress: bool = True
               ) -> np.ndarray:
        prefix = self.spec.query_prefix if query else self.spec.document_prefix
        input_type = self.served.query_input_type if query else self.served.document_input_type
        disk = self.cache

        def disk_get(model: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
            if disk is None:
                return {}
            found = disk.get_many(model, keys)
            with self.http._lock:
                self.usage.cached += len(found)
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
        tokens = _estimate_tokens(texts)
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
                    with self.http._lock:
                        self.usage.texts += len(batch)
                        self.usage.tokens += n_tokens
                        self.usage.tokens_counted += n_tokens if counted else 0
                    self.encoded_texts += len(batch)
                    if disk is not None:
                        disk.put_many(self.fingerprint,
                                      [(text_key(texts[i]), v) for i, v in zip(batch, vecs,
                                                                                strict=True)])
                        record_spend(disk.folder / FILE_NAME, self.fingerprint, sv.model, len(batch),
                                     n_tokens, n_tokens * sv.price_per_mtok / 1e6)
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


def cost_usd(tokens: int, price_per_mtok: float) -> float:
    return tokens * price_per_mtok / 1e6


# --------------------------------------------------------------------------- the ledger


_LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS served_spend (
    fingerprint TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    texts INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS served_hits (
    fingerprint TEXT PRIMARY KEY,
    texts INTEGER NOT NULL
) WITHOUT ROWID;
"""
_LEDGERS: dict[Path, Any] = {}
_LEDGER_LOCK = threading.Lock()


def _ledger(cache_path: Path) -> Any:
    path = Path(cache_path).with_name("served.sqlite")
    with _LEDGER_LOCK:
        if path not in _LEDGERS:
            _LEDGERS[path] = open_db(path, _LEDGER_SCHEMA, "served-model ledger")
        return _LEDGERS[path]


def record_spend(cache_path: Path, fingerprint: str, model: str, texts: int, tokens: int,
                 cost: float) -> None:
    """Add what the vectors now in the cache cost to fetch (so `sweep cache info` can say what
    each later cache hit saved)."""
    db = _ledger(cache_path)
    with _LEDGER_LOCK:
        db.execute("INSERT INTO served_spend VALUES (?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO "
                   "UPDATE SET texts = texts + excluded.texts, tokens = tokens + "
                   "excluded.tokens, cost_usd = cost_usd + excluded.cost_usd",
                   (fingerprint, model, texts, tokens, cost))


def record_hits(cache_path: Path, fingerprint: str, texts: int) -> None:
    if texts <= 0:
        return
    db = _ledger(cache_path)
    with _LEDGER_LOCK:
        db.execute("INSERT INTO served_hits VALUES (?, ?) ON CONFLICT(fingerprint) DO UPDATE "
                   "SET texts = texts + excluded.texts", (fingerprint, texts))


def clear_ledger(cache_path: Path) -> None:
    """Forget what the cached served vectors cost (`sweep cache clear` removed them)."""
    if Path(cache_path).with_name("served.sqlite").exists():
        db = _ledger(cache_path)
        with _LEDGER_LOCK:
            db.execute("DELETE FROM served_spend")
            db.execute("DELETE FROM served_hits")


def ledger_summary(cache_path: Path) -> list[dict[str, Any]]:
    """Per served model: texts/tokens/dollars paid for, and texts (and, at the same mean
    tokens per text, dollars) the cache has served instead of the endpoint since."""
    path = Path(cache_path).with_name("served.sqlite")
    if not path.exists():
        return []
    rows = _ledger(cache_path).execute(
        "SELECT s.fingerprint, s.model, s.texts, s.tokens, s.cost_usd, COALESCE(h.texts, 0) "
        "FROM served_spend s LEFT JOIN served_hits h USING (fingerprint) ORDER BY s.model"
    ).fetchall()
    out = []
    for fp, model, texts, tokens, cost, hits in rows:
        per_text = tokens / texts if texts else 0.0
        out.append({"fingerprint": fp, "model": model, "texts_paid": texts,
                    "tokens_paid": tokens, "cost_usd_paid": cost, "texts_from_cache": hits,
                    "tokens_saved": hits * per_text,
                    "cost_usd_saved": hits * (cost / texts if texts else 0.0)})
    return out


# --------------------------------------------------------------------------- reranking


@dataclass(frozen=True)
class ServedRerankSpec:
    endpoint: EndpointSpec
    model: str
    price_per_mtok: float = 0.0
    price_per_request: float = 0.0


def parse_rerank(data: Any, n: int, url: str) -> np.ndarray:
    """One score per document, in input order, from a Cohere-style answer (``results``;
    Voyage calls it ``data``), each item ``{"index", "relevance_score"}`` (or ``score``)."""
    items = None
    if isinstance(data, dict):
        items = data.get("results", data.get("data"))
    elif isinstance(data, list):  # text-embeddings-inference answers with the bare list
        items = data
    if not isinstance(items, list):
        raise SweepError(f"rerank: {url}: the answer has no 'results' list "
                         "(not a Cohere-style rerank response)")
    if len(items) != n:
        raise SweepError(f"rerank: {url}: {len(items)} scores for {n} documents")
    scores = np.full(n, np.nan)
    for item in items:
        idx = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) \
            else None
        if not isinstance(idx, int) or not 0 <= idx < n or not np.isnan(scores[idx]):
            raise SweepError(f"rerank: {url}: bad or repeated index {idx!r} in the results")
        if not isinstance(score, int | float) or not np.isfinite(score):
            raise SweepError(f"rerank: {url}: a score that is not a finite number: {score!r}")
        scores[idx] = float(score)
    return scores


@dataclass
class ServedReranker:
    """A cross-encoder behind a Cohere-style ``POST {base_url}/rerank``: ``{"model", "query",
    "documents", "top_n"}`` -> ``{"results": [{"index", "relevance_score"}]}``. Scores are not
    cached: every call (the scored pass and the latency sample) is a request, counted in
    ``usage``."""

    spec: ServedRerankSpec
    http: HttpEndpoint = field(init=False)

    def __post_init__(self) -> None:
        if not self.spec.model:
            raise SweepError("rerank.model is empty: name the model the endpoint serves")
        self.http = HttpEndpoint(self.spec.endpoint)

    @property
    def usage(self) -> Usage:
        return self.http.usage

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float64)
        # The fields Cohere (v1, v2), Jina, vLLM, LiteLLM and infinity share; top_n = all, so
        # every document gets a score.
        body = {"model": self.spec.model, "query": query, "documents": list(texts),
                "top_n": len(texts)}
        estimate = sum(_estimate_tokens([query, *texts]))
        data = self.http.post("rerank", body, estimate)
        scores = parse_rerank(data, len(texts), self.http.url("rerank"))
        reported = usage_tokens(data)
        with self.http._lock:
            self.usage.texts += len(texts)
            self.usage.tokens += estimate if reported is None else reported
            self.usage.tokens_counted += estimate if reported is None else 0
        return scores

    def cost(self, usage: Usage) -> float:
        return (usage.tokens * self.spec.price_per_mtok / 1e6
                + usage.requests * self.spec.price_per_request)


_RERANKERS: dict[ServedRerankSpec, ServedReranker] = {}


def get_served_reranker(spec: ServedRerankSpec) -> ServedReranker:
    if spec not in _RERANKERS:
        _RERANKERS[spec] = ServedReranker(spec)
    return _RERANKERS[spec]


def usage_metrics(prefix: str, usage: Usage, cost: float) -> dict[str, float]:
    """Per-configuration metrics of what was sent (``{prefix}_tokens`` etc.)."""
    return {f"{prefix}_requests": float(usage.requests),
            f"{prefix}_retries": float(usage.retries),
            f"{prefix}_texts_sent": float(usage.texts),
            f"{prefix}_tokens": float(usage.tokens),
            f"{prefix}_tokens_counted": float(usage.tokens_counted),
            f"{prefix}_cost_usd": float(cost)}


def served_usage_before(part: Any) -> dict[str, Usage]:
    """A snapshot of a served embedder's or reranker's usage (empty for a local model)."""
    if isinstance(part, ServedEmbedder):
        return {"embedding": part.usage.copy()}
    if isinstance(part, ServedReranker):
        return {"rerank": part.usage.copy()}
    return {}


def served_usage_metrics(before: dict[str, Usage], embedder: Any, reranker: Any
                         ) -> dict[str, float]:
    """What one configuration sent to its endpoints since ``before``: per endpoint requests,
    retries, texts, tokens, dollars; ``n_requests`` and ``served_cost_usd`` over both. Empty
    when nothing is served."""
    out: dict[str, float] = {}
    total_requests, total_cost = 0, 0.0
    if isinstance(embedder, ServedEmbedder) and "embedding" in before:
        u = embedder.usage.minus(before["embedding"])
        cost = cost_usd(u.tokens, embedder.served.price_per_mtok)
        out.update(usage_metrics("embedding", u, cost))
        out["embedding_cache_hits"] = float(u.cached)
        total_requests, total_cost = total_requests + u.requests, total_cost + cost
    if isinstance(reranker, ServedReranker) and "rerank" in before:
        u = reranker.usage.minus(before["rerank"])
        cost = reranker.cost(u)
        out.update(usage_metrics("rerank", u, cost))
        total_requests, total_cost = total_requests + u.requests, total_cost + cost
    if out:
        out["n_requests"] = float(total_requests)
        out["served_cost_usd"] = total_cost
    return out

