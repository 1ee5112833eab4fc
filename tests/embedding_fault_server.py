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
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scripted_json_server import Answer, ScriptedJsonServer


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
    drip_s: float = 0.0  # the body one byte at a time, this long apart
    repeat_to: int = 0  # send ``body`` over and over until this many bytes are out


class FaultServer(ScriptedJsonServer):
    def __init__(self, dim: int = 8, usage: bool = True) -> None:
        self.dim = dim
        self.usage = usage
        self.faults: list[Fault] = []
        super().__init__()

    def next_scripted(self) -> Fault:
        return self.faults.pop(0) if self.faults else Fault()

    def answer_for(self, path: str, payload: dict[str, Any], fault: Fault) -> Answer:
        if fault.body is not None:
            data = fault.body.encode()
        else:
            good = self.answer(path, payload)
            data = json.dumps(fault.edit(good) if fault.edit else good).encode()
        return fault.delay_s, fault.status, fault.headers, data

    def write_body(self, wfile: Any, data: bytes, fault: Fault) -> None:
        if fault.repeat_to:
            sent = 0
            while sent < fault.repeat_to:
                wfile.write(data)
                sent += len(data)
        elif fault.drip_s:
            for i in range(len(data)):
                wfile.write(data[i:i + 1])
                wfile.flush()
                time.sleep(fault.drip_s)
        else:
            wfile.write(data)

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
