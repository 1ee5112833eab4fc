"""The scaffold both protocol test servers share (chat_protocol_server, embedding_fault_server):
a threaded HTTP server on 127.0.0.1 that records every JSON POST (path, headers, body), counts
the requests in flight, and sends what the subclass decides, after the delay it asks for."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# What a subclass answers: (delay in seconds, HTTP status, extra headers, body bytes).
Answer = tuple[float, int, dict[str, str], bytes]


class ScriptedJsonServer:
    def __init__(self) -> None:
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
                    server.requests.append({
                        "path": self.path, "json": payload,
                        "headers": {k.lower(): v for k, v in self.headers.items()}})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    scripted = server.next_scripted()
                try:
                    delay_s, status, headers, data = server.answer_for(self.path, payload,
                                                                       scripted)
                    time.sleep(delay_s)
                    self.send_response(status)
                    given = {k.lower() for k in headers}
                    if "content-type" not in given:
                        self.send_header("Content-Type", "application/json")
                    if "content-length" not in given:
                        self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        if v:  # an empty value leaves the header out
                            self.send_header(k, v)
                    self.end_headers()
                    server.write_body(self.wfile, data, scripted)
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    pass  # the client gave up (the timeout tests)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def next_scripted(self) -> Any:
        """The next queued reply, or None; called under the server's lock."""
        raise NotImplementedError

    def answer_for(self, path: str, payload: dict[str, Any], scripted: Any) -> Answer:
        raise NotImplementedError

    def write_body(self, wfile: Any, data: bytes, scripted: Any) -> None:
        """Send the body (a subclass may drip it or stream more than it holds)."""
        wfile.write(data)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
