"""`HttpEndpoint`: POST JSON to one endpoint (on httpx), for served embeddings and rerank.

A timeout per request, retries with exponential back-off on 429, 5xx, timeouts and dropped
connections (``Retry-After`` honoured up to `MAX_RETRY_AFTER_S`), a per-minute request/token
budget, ``concurrency`` requests in flight, and every failure as one line naming the endpoint
and the status, scrubbed of the key. It is written on httpx rather than taken from the `openai`
SDK because the SDK has no ``/rerank`` route and hides its retries, and the sweep reports how
many requests each configuration really sent (the chat endpoints, which the SDK does cover, are
`sweep.endpoints.chat`).
"""

from __future__ import annotations

import dataclasses
import email.utils
import json
import logging
import random
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from sweep.common.errors import SweepError
from sweep.common.secret import scrub
from sweep.endpoints.spec import EndpointSpec

log = logging.getLogger(__name__)
# httpx logs every request at INFO, and a Hydra job logs at INFO: one line per batch is noise.
logging.getLogger("httpx").setLevel(logging.WARNING)

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0  # a longer Retry-After fails the call rather than stall a sweep
# 256 texts of 3,072 floats written as JSON take about 20 MB: four times that is no answer.
MAX_BODY_BYTES = 80 * 2**20
MAX_ERROR_BYTES = 64 * 2**10


@dataclass
class RequestUsage:
    """What was sent to an endpoint. ``tokens`` are the responses' ``usage`` counts; where a
    response had none, the text was counted with the chunk tokenizer (``tokens_counted``).
    ``cached``: texts the disk cache answered instead of the endpoint."""

    requests: int = 0
    retries: int = 0
    texts: int = 0
    tokens: int = 0
    tokens_counted: int = 0  # the part of ``tokens`` counted here, not reported
    cached: int = 0

    def minus(self, before: RequestUsage) -> RequestUsage:
        return RequestUsage(*(getattr(self, f.name) - getattr(before, f.name)
                              for f in dataclasses.fields(self)))

    def copy(self) -> RequestUsage:
        return self.minus(RequestUsage())


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


# The budget's clock, by name, so that a test runs a minute of it in no time.
_now = time.monotonic
_wait = time.sleep


class Budget:
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
                now = _now()
                while self._sent and now - self._sent[0][0] >= 60.0:
                    self._sent.popleft()
                used = sum(n for _, n in self._sent)
                fits_r = self.rpm <= 0 or len(self._sent) < self.rpm
                fits_t = self.tpm <= 0 or used + tokens <= self.tpm or not self._sent
                if fits_r and fits_t:
                    self._sent.append((now, tokens))
                    return
                wait_s = 60.0 - (now - self._sent[0][0]) + 0.01
            _wait(min(wait_s, 1.0))


class HttpEndpoint:
    """POST JSON to one endpoint, with retries, a per-minute budget and usage counting."""

    def __init__(self, ep: EndpointSpec) -> None:
        ep.check_url("http://127.0.0.1:7997/v1 (make model-server) or https://api.openai.com/v1")
        self.ep = ep
        self.usage = RequestUsage()
        self._budget = Budget(ep.requests_per_minute, ep.tokens_per_minute)
        self.lock = threading.Lock()  # guards ``usage``: callers add what they sent under it
        self._checked = False
        self._client: Any = None

    def _key(self) -> str:
        return self.ep.api_key()

    def url(self, route: str) -> str:
        return self.ep.base_url.rstrip("/") + "/" + route.lstrip("/")

    def _http(self) -> Any:
        with self.lock:
            if self._client is None:
                import httpx

                if not self._checked:
                    self.ep.preflight(min(3.0, self.ep.timeout_s),
                                      "start the server (make model-server) or fix the URL")
                    self._checked = True
                    self.ep.warn_if_no_key()
                limits = httpx.Limits(max_connections=max(1, self.ep.concurrency))
                self._client = httpx.Client(timeout=self.ep.timeout_s, limits=limits)
            return self._client

    def count(self, texts: int, tokens: int, counted: bool) -> None:
        """Add ``texts`` that got an answer and their ``tokens`` (``counted``: by the caller's
        estimate, as the response reported none) to `usage`."""
        with self.lock:
            self.usage.texts += texts
            self.usage.tokens += tokens
            self.usage.tokens_counted += tokens if counted else 0

    def count_cached(self, texts: int) -> None:
        with self.lock:
            self.usage.cached += texts

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
                    with self.lock:
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
            with self.lock:
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
