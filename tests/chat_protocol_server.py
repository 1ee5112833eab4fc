"""A protocol test server for the OpenAI chat-completions API, on 127.0.0.1.

Not a model: it answers from a script (status, body, delay) or, when the script is empty, with
a rule the test supplies. It records every request so tests can check what was sent (headers
included) and how many requests were in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    content: str | None = "ok"  # the assistant message; None sends ``body`` as it is
    body: str | None = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] | None = (10, 2)


def completion(content: str, usage: tuple[int, int] | None = (10, 2)) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                         "total_tokens": sum(usage)}
    return body


class ChatProtocolServer:
    def __init__(self, rule: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.script: list[Reply] = []
        self.rule = rule or (lambda request: Reply())
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path,
                                            "headers": {k.lower(): v for k, v in self.headers.items()},
                                            "json": payload})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    reply = server.script.pop(0) if server.script else None
                try:
                    reply = reply or server.rule(payload)
                    time.sleep(reply.delay_s)
                    if reply.body is not None:
                        data = reply.body.encode()
                    elif reply.status == 200:
                        data = json.dumps(completion(reply.content or "", reply.usage)).encode()
                    else:
                        data = json.dumps({"error": {"message": f"scripted {reply.status}",
                                                     "type": "test"}}).encode()
                    try:
                        self.send_response(reply.status)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(data)))
                        for k, v in reply.headers.items():
                            self.send_header(k, v)
                        self.end_headers()
                        self.wfile.write(data)
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatProtocolServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
