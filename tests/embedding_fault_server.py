"""A misbehaving embeddings/rerank endpoint on 127.0.0.1, for fault tests (not a model).

``POST .../embeddings`` answers in the OpenAI shape with a deterministic vector per text
(`fake_vector`); ``POST .../rerank`` in the Cohere shape with a score per document. A test
queues `Fault`s (status, headers, delay, a body to send as is, or a change to the good answer);
each request takes the next one, and a request with none left gets the good answer. Every
request is recorded (path, headers, JSON) with how many were in flight at once.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def fake_vector(text: str, dim: int) -> np.ndarray:
    """The fake model: a vector seeded by the text's sha256 (not normalised)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return np.random.default_rng(seed).normal(size=dim)


def fake_score(query: str, doc: str) -> float:
    return float(fake_vector(query + "\x00" + doc, 1)[0])


@dataclass
class Fault:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    body: str | None = None  # sent verbatim
    edit: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # changes the good answer


class FaultServer:
    def __init__(self, dim: int = 8, usage: bool = True) -> None:
        self.dim = dim
        self.usage = usage
        self.faults: list[Fault] = []
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server._lock:
                    server.requests.append({
                        "path": self.path, "json": payload,
                        "headers": {k.lower(): v for k, v in self.headers.items()}})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    fault = server.faults.pop(0) if server.faults else Fault()
                try:
                    time.sleep(fault.delay_s)
                    if fault.body is not None:
                        data = fault.body.encode()
                    else:
                        good = server.answer(self.path, payload)
                        data = json.dumps(fault.edit(good) if fault.edit else good).encode()
                    self.send_response(fault.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in fault.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/rerank"):
            docs = payload["documents"]
            results = [{"index": i, "relevance_score": fake_score(payload["query"], d)}
                       for i, d in enumerate(docs)]
            results.sort(key=lambda r: -r["relevance_score"])  # best first, as Cohere does
            out: dict[str, Any] = {"results": results}
            if self.usage:
                out["usage"] = {"total_tokens": 3 * len(docs)}
            return out
        texts = payload["input"]
        dim = payload.get("dimensions") or self.dim
        out = {"object": "list", "model": payload["model"],
               "data": [{"object": "embedding", "index": i,
                         "embedding": fake_vector(t, dim).tolist()}
                        for i, t in enumerate(texts)]}
        if self.usage:  # 10 "tokens" a text: easy to check by hand
            out["usage"] = {"prompt_tokens": 10 * len(texts), "total_tokens": 10 * len(texts)}
        return out

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
