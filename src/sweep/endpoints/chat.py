"""`ChatClient`: OpenAI-compatible chat completions, for the reader, the judge, contextual
headers and synthetic questions.

It runs on the `openai` SDK, whose retries back off exponentially on 429, 5xx, timeouts and
dropped connections (honouring ``Retry-After``) and which it configures from the same
`EndpointSpec` as the HTTP endpoints; calls run ``concurrency`` at a time under the spec's
per-minute budget; every failure becomes one `SweepError` line that names the config key to
fix, scrubbed of the key.

``timeout_s`` is a total deadline for each attempt, as it is for the HTTP endpoints: the SDK's
own timeout is httpx's, which applies to each read, so a server that drips its answer a byte
at a time would hold a run for as long as it likes (`_deadline_client`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.progress import show_progress
from sweep.common.secret import scrub
from sweep.endpoints.http import Budget
from sweep.endpoints.spec import EndpointSpec


@dataclass(frozen=True)
class Answer:
    """One completion's text and the tokens the endpoint reported for it."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_reported: bool = False


@dataclass
class ChatUsage:
    """Calls and reported tokens over many completions (``reported``: any call reported)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    reported: bool = False

    def add(self, answer: Answer) -> None:
        self.calls += 1
        self.prompt_tokens += answer.prompt_tokens
        self.completion_tokens += answer.completion_tokens
        self.reported = self.reported or answer.usage_reported


class ChatClient:
    """Chat completions of ``model`` at the endpoint ``ep``."""

    def __init__(self, ep: EndpointSpec, model: str) -> None:
        ep.check_url("http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1")
        if not model:
            raise SweepError(f"{ep.section}.model is empty: name the model the endpoint serves")
        self.ep = ep
        self.model = model
        self._key = ep.api_key()
        ep.warn_if_no_key()
        self._budget = Budget(ep.requests_per_minute, ep.tokens_per_minute)
        try:
            from openai import OpenAI
        except ImportError as exc:  # pragma: no cover - a dependency of the project
            raise SweepError("the openai package is not installed", hint="run `make install`") \
                from exc
        # Local servers (vLLM, Ollama, llama.cpp) take any key; the SDK insists on one.
        self._client = OpenAI(base_url=ep.base_url, api_key=self._key or "no-key",
                              timeout=ep.timeout_s, max_retries=ep.max_retries,
                              http_client=_deadline_client(ep.timeout_s))

    def preflight(self, timeout: float = 3.0) -> None:
        """Fail in seconds when nothing listens at ``base_url`` (the SDK would retry with
        back-off first)."""
        self.ep.preflight(timeout, "start the server or fix the URL")

    def served_models(self, timeout: float = 5.0) -> list[str]:
        """The model names the endpoint lists at ``GET {base_url}/models``."""
        try:
            page = self._client.with_options(timeout=timeout, max_retries=0).models.list()
            return [str(m.id) for m in page.data]
        except Exception as exc:
            raise self._error(exc) from None

    def require_served(self, keyed: str) -> None:
        """The endpoint lists ``model`` under that name. A cache keyed on the name needs it:
        llama.cpp answers whatever name it is sent, so a wrong one would file another model's
        replies under this one. ``keyed`` ends the message ("the transform cache keys replies
        on that name")."""
        served = self.served_models()
        if self.model not in served:
            setting = f"{self.ep.section}.model"
            raise SweepError(f"{setting}={self.model!r} is not what {self.ep.base_url} serves "
                             f"({', '.join(served) or 'nothing'}); {keyed} on that name",
                             hint=f"set {setting} to the served name (servers/llm.sh alias "
                             "prints it)")

    def complete(self, messages: Sequence[dict[str, str]], temperature: float,
                 max_tokens: int) -> Answer:
        self._budget.take(0)  # the SDK's own retries are not counted against it
        try:
            resp = self._client.chat.completions.create(
                model=self.model, messages=list(messages),  # type: ignore[arg-type]
                temperature=temperature, max_tokens=max_tokens)
        except Exception as exc:
            raise self._error(exc) from None
        choices = getattr(resp, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise SweepError(f"{self.ep.section}: {self.ep.base_url} answered without a "
                             "choice (not a chat-completions response)")
        usage = getattr(resp, "usage", None)
        # An endpoint may echo the Authorization header: the key never reaches an answer,
        # and so never per_question.csv, a report or the judge cache.
        return Answer(scrub(choices[0].message.content or "", self._key),
                      int(getattr(usage, "prompt_tokens", 0) or 0),
                      int(getattr(usage, "completion_tokens", 0) or 0),
                      usage is not None)

    def complete_all(self, batches: Sequence[Sequence[dict[str, str]]], temperature: float,
                     max_tokens: int, progress: bool, desc: str,
                     on_answer: Callable[[int, Answer], None] | None = None) -> list[Answer]:
        """``complete`` for each message list, ``concurrency`` at a time, results in order.
        The first failure cancels what has not started and is raised. ``on_answer(i, answer)``
        runs in the calling thread as each answer arrives (an answer cache stores it there, so
        a failure later in the batch loses none that finished)."""
        # Here, not at the top: tqdm.auto imports asyncio (~16 ms), and every sweep imports
        # this module (the config's axes) whether or not it asks a model anything.
        from tqdm.auto import tqdm

        out: list[Answer | None] = [None] * len(batches)
        pool = ThreadPoolExecutor(max_workers=max(1, self.ep.concurrency))
        try:
            futures = {pool.submit(self.complete, m, temperature, max_tokens): i
                       for i, m in enumerate(batches)}
            for fut in tqdm(as_completed(futures), total=len(futures), desc=desc,
                            disable=not show_progress(progress), leave=False):
                i = futures[fut]
                out[i] = fut.result()
                if on_answer is not None:
                    on_answer(i, out[i])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [a for a in out if a is not None]

    def _error(self, exc: Exception) -> SweepError:
        import openai

        s, url = self.ep.section, self.ep.base_url
        tries = f"after {self.ep.max_retries} retries"
        import httpx

        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
            msg = f"{s}: {url} did not answer within {s}.timeout_s={self.ep.timeout_s} ({tries})"
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            msg = f"{s}.base_url={url}: connection failed ({type(cause).__name__}) ({tries})"
        elif isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            # The body of a 401 may echo part of the key: it is not repeated.
            msg = (f"{s}: the endpoint refused the credentials (HTTP {exc.status_code}); put the "
                   f"key in ${self.ep.api_key_env} ({s}.api_key_env)")
        elif isinstance(exc, openai.NotFoundError):
            msg = (f"{s}.model={self.model!r}: HTTP 404 from {url} (unknown model, or a "
                   "base_url without its /v1)")
        elif isinstance(exc, openai.RateLimitError):
            msg = f"{s}: still rate-limited (HTTP 429) {tries}; lower {s}.concurrency"
        elif isinstance(exc, openai.BadRequestError) and _context_overflow(exc) is not None:
            # llama.cpp refuses (HTTP 400) a prompt longer than its window rather than cut it.
            n_prompt, n_ctx = _context_overflow(exc) or (0, 0)
            msg = (f"{s}: the prompt ({n_prompt} tokens) is longer than the context window of "
                   f"the model at {url} ({n_ctx} tokens); the server refused it rather than cut "
                   "it: lower eval.prompt_k or chunk.size, or serve a larger window "
                   "(servers/llm.sh: CTX=...)")
        elif isinstance(exc, openai.APIStatusError):
            msg = f"{s}: HTTP {exc.status_code} from {url} {tries}: {str(exc)[:200]}"
        else:
            msg = f"{s}: {type(exc).__name__} from {url}: {str(exc)[:200]}"
        return SweepError(scrub(" ".join(msg.split()), self._key))


def _deadline_client(total_s: float) -> Any:
    """An httpx client for the SDK (which accepts one) whose every answer must be complete
    within ``total_s`` of the request being sent; past it the body's next read raises httpx's
    ReadTimeout, which the SDK retries and then reports as a timeout. Otherwise the SDK's
    defaults: redirects followed, its connection limits."""
    import httpx

    class DeadlineStream(httpx.SyncByteStream):
        def __init__(self, inner: Any, deadline: float, request: httpx.Request) -> None:
            self.inner, self.deadline, self.request = inner, deadline, request

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                if time.monotonic() > self.deadline:
                    raise httpx.ReadTimeout(f"no complete answer within {total_s} s",
                                            request=self.request)
                yield chunk

        def close(self) -> None:
            self.inner.close()

    class Deadline(httpx.BaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.HTTPTransport(limits=httpx.Limits(max_connections=1000,
                                                                 max_keepalive_connections=100))

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            deadline = time.monotonic() + total_s
            response = self.inner.handle_request(request)
            response.stream = DeadlineStream(response.stream, deadline, request)
            return response

        def close(self) -> None:
            self.inner.close()

    return httpx.Client(transport=Deadline(), timeout=total_s, follow_redirects=True)


def _context_overflow(exc: Exception) -> tuple[int, int] | None:
    """(prompt tokens, context window) when ``exc`` is llama.cpp's refusal of a prompt longer
    than its context window (``exceed_context_size_error``), else None."""
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict) or err.get("type") != "exceed_context_size_error":
        return None
    try:
        return int(err.get("n_prompt_tokens", 0)), int(err.get("n_ctx", 0))
    except (TypeError, ValueError):
        return None
