"""An endpoint that echoes the Authorization header must not put the key into anything the
tool writes (issue 14, item 2): answers are scrubbed where they enter the tool."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec

KEY = "sk-echoed-key-0123456789"


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant",
                "content": f"your header was {self.headers.get('Authorization')}"}}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo_url() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_echoed_key_is_scrubbed_from_the_answer(echo_url: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDTEAM_KEY", KEY)
    client = ChatClient(EndpointSpec("generation", echo_url, api_key_env="REDTEAM_KEY",
                                     max_retries=0), "m")
    answer = client.complete([{"role": "user", "content": "hi"}], 0.0, 8)
    assert KEY not in answer.text
    assert answer.text == "your header was Bearer ***"
