"""One scrubber (`sweep.common.secret.scrub`) for every client that holds a key: the HTTP
endpoint (served embeddings and rerank), the chat client (reader, judge, contextual headers)
and the PostgreSQL cache's password.

Before, there were two behaviours: the PostgreSQL cache replaced only the whole password (a
libpq message that cut it kept its first characters), while the HTTP layer masked any run of 6
or more characters of the key. Both old behaviours' cases are here, now with the stricter rule
everywhere: the key whole, cut by the server, cut again by our own message width, its middle
masked, in a JSON error body and in a plain-text one.
"""

from __future__ import annotations

import json

import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from sweep.common.errors import SweepError
from sweep.common.secret import FRAGMENT, scrub
from sweep.common.store import _conn_error
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.http import HttpEndpoint
from sweep.endpoints.spec import EndpointSpec

KEY_ENV = "CHUNK_SWEEP_TEST_SCRUB_KEY"
KEY = "sk-scrub-7d1c04be93fa62e8b5"

BODIES = {
    "json, whole": json.dumps({"error": {"message": f"invalid api key {KEY}"}}),
    "json, cut by the server": json.dumps({"error": {"message": f"bad key {KEY[:13]}"}}),
    "json, middle masked": json.dumps({"detail": f"key {KEY[:8]}...{KEY[-8:]} revoked"}),
    "text, whole": f"Bad Request: Authorization: Bearer {KEY}",
    "text, cut by our width": "x" * 150 + f" {KEY}",
}


def leaked(message: str, secret: str = KEY) -> list[str]:
    """Every run of `FRAGMENT` characters of ``secret`` still in ``message``."""
    return [secret[i:i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)
            if secret[i:i + FRAGMENT] in message]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_the_http_endpoint_masks_the_echoed_key(body: str) -> None:
    with ChatProtocolServer(lambda req: Reply(status=400, body=body)) as srv:
        http = HttpEndpoint(EndpointSpec("rerank", srv.base_url, KEY_ENV, max_retries=0))
        with pytest.raises(SweepError) as err:
            http.post("rerank", {"query": "q"})
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"  # it was sent
    msg = str(err.value)
    assert msg.startswith(f"rerank: {srv.base_url}/rerank: HTTP 400") and "\n" not in msg
    assert leaked(msg) == [], msg


@pytest.mark.parametrize("body", BODIES.values(), ids=BODIES.keys())
def test_the_chat_client_masks_the_echoed_key(body: str) -> None:
    with ChatProtocolServer(lambda req: Reply(status=400, body=body)) as srv:
        client = ChatClient(EndpointSpec("judge", srv.base_url, KEY_ENV, max_retries=0), "m")
        with pytest.raises(SweepError) as err:
            client.complete([{"role": "user", "content": "x"}], 0.0, 8)
    msg = str(err.value)
    assert msg.startswith(f"judge: HTTP 400 from {srv.base_url}") and "\n" not in msg
    assert leaked(msg) == [], msg


def test_the_chat_answer_loses_an_echoed_cut_key() -> None:
    with ChatProtocolServer(lambda req: Reply(content=f"you sent {KEY[:-5]}")) as srv:
        client = ChatClient(EndpointSpec("generation", srv.base_url, KEY_ENV, max_retries=0),
                            "m")
        answer = client.complete([{"role": "user", "content": "x"}], 0.0, 8)
    assert answer.text == "you sent ***"


@pytest.mark.parametrize("line", [
    'FATAL:  password authentication failed for user "sweep" (password "{pw}")',
    'FATAL:  password authentication failed (got "{cut}")',  # libpq's buffer cut it
])
def test_the_postgres_cache_masks_its_password_whole_or_cut(line: str) -> None:
    pw = "Hunter2-correct-horse"
    exc = RuntimeError("connection failed: connection to server at 127.0.0.1 failed:\n"
                       + line.format(pw=pw, cut=pw[:9]))
    reason = _conn_error(exc, "postgresql://sweep@127.0.0.1/cache", pw)
    assert reason.startswith("FATAL:  password authentication failed")
    assert leaked(reason, pw) == [], reason


def test_the_rule_itself() -> None:
    # the whole key, every time (what both scrubbers did)
    assert scrub(f"{KEY} and {KEY}", KEY) == "*** and ***"
    # a head cut at the end, a tail after a mask, a run inside: the stricter rule
    assert scrub(f"got {KEY[:10]}", KEY) == "got ***"
    assert scrub(f"{KEY[:4]}****{KEY[-6:]}", KEY) == f"{KEY[:4]}*******"
    assert scrub(f"[{KEY[5:17]}]", KEY) == "[***]"
    # shorter than a fragment, or a value too short to be a key: left as it is
    assert scrub(f"prefix {KEY[:5]}.", KEY) == f"prefix {KEY[:5]}."
    assert scrub("a b c", "a") == "a b c"
