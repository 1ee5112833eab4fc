"""The per-minute budget of an `EndpointSpec` (requests_per_minute, tokens_per_minute), on a
fake clock: the HTTP endpoint and the chat client both wait under it."""

from __future__ import annotations

import pytest

from chat_protocol_server import ChatProtocolServer
from sweep.endpoints import http
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.http import Budget
from sweep.endpoints.spec import EndpointSpec


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(http, "_now", c.monotonic)
    monkeypatch.setattr(http, "_wait", c.sleep)
    return c


def test_requests_per_minute_waits_for_the_oldest_to_leave_the_window(clock: Clock) -> None:
    b = Budget(rpm=2, tpm=0)
    b.take(0)
    clock.now += 10
    b.take(0)
    assert clock.slept == []
    b.take(0)  # the first leaves the window at 1060: 50 s more, slept a second at a time
    assert sum(clock.slept) == pytest.approx(50.0)
    assert max(clock.slept) <= 1.0


def test_tokens_per_minute_counts_tokens_and_lets_an_oversized_request_through_alone(
        clock: Clock) -> None:
    b = Budget(rpm=0, tpm=100)
    b.take(60)
    b.take(40)
    assert clock.slept == []
    b.take(1)  # 101 > 100: waits the whole minute
    assert sum(clock.slept) == pytest.approx(60.0)
    clock.slept.clear()
    clock.now += 61
    b.take(500)  # alone in an empty window: it goes at once
    assert clock.slept == []


def test_no_limit_never_waits(clock: Clock) -> None:
    b = Budget(0, 0)
    for _ in range(1000):
        b.take(10_000)
    assert clock.slept == []


def test_the_chat_client_takes_from_its_spec_budget(clock: Clock) -> None:
    with ChatProtocolServer() as srv:
        client = ChatClient(EndpointSpec("judge", srv.base_url, "", max_retries=0,
                                         requests_per_minute=1), "m")
        client.complete([{"role": "user", "content": "a"}], 0.0, 8)
        assert clock.slept == []
        client.complete([{"role": "user", "content": "b"}], 0.0, 8)
        assert len(srv.requests) == 2
    assert sum(clock.slept) == pytest.approx(60.0)
