"""A protocol test server for the OpenAI chat-completions API, on 127.0.0.1.

Not a model: it answers from a script (status, body, delay) or, when the script is empty, with
a rule the test supplies. It records every request so tests can check what was sent (headers
included) and how many requests were in flight at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scripted_json_server import Answer, ScriptedJsonServer


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


class ChatProtocolServer(ScriptedJsonServer):
    def __init__(self, rule: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.script: list[Reply] = []
        self.rule = rule or (lambda request: Reply())
        super().__init__()

    def next_scripted(self) -> Reply | None:
        return self.script.pop(0) if self.script else None

    def answer_for(self, path: str, payload: dict[str, Any], scripted: Reply | None) -> Answer:
        reply = scripted or self.rule(payload)
        if reply.body is not None:
            data = reply.body.encode()
        elif reply.status == 200:
            data = json.dumps(completion(reply.content or "", reply.usage)).encode()
        else:
            data = json.dumps({"error": {"message": f"scripted {reply.status}",
                                         "type": "test"}}).encode()
        return reply.delay_s, reply.status, reply.headers, data
