"""Everything that talks to a model behind an HTTP endpoint, in one place.

`spec.EndpointSpec` (where, which key variable, timeout, retries, concurrency, per-minute
budget) is the one settings type every client takes; `http.HttpEndpoint` (on httpx: retries
and back-off, ``Retry-After``, budgets, bounded reads) carries served embeddings and served
rerank; `chat.ChatClient` (on the `openai` SDK, whose retries it configures) carries the
generation reader, the judge, contextual headers and synthetic questions; `cost` holds every
cost formula and the per-configuration usage metrics; `ledger` what cached served vectors
cost. Messages are scrubbed of the key with `sweep.common.secret.scrub`, the one scrubber
(the PostgreSQL cache uses it too, so it lives below this package).

This package imports only `sweep.common` (import contract in pyproject.toml); the stages that
call endpoints import it.
"""
