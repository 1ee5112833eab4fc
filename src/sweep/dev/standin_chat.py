"""A rule-based STAND-IN for a chat model, speaking the OpenAI chat-completions API.

NOT A LANGUAGE MODEL. It exists so that ``sweep questions generate`` can be shown end to end
on a machine with no chat model (the docs' walkthrough, docs/guide/questions-walkthrough.md).
For each request it finds the ``<passage>...</passage>`` of `sweep.questions.prompts.PROMPT`,
picks the passage's longest sentences and writes one "question" per sentence by lifting the
sentence's own content words into a template (``what about <w1> <w2> <w3> <w4>?``). That is
the synthetic flattery the issue warns of, with nothing else: every content word of a
stand-in question is in its passage (smell 1.0 by construction), where a real model asked to
write "in the user's words" borrows fewer. Figures measured with it show how a source that
borrows its passage's words inflates lexical recall; they are an upper bound on that effect,
not a measurement of any LLM.

    python -m sweep.dev.standin_chat --port 8520
    sweep questions generate --out queue.jsonl --corpus DIR \\
        generation.base_url=http://127.0.0.1:8520/v1 generation.model=standin-lift

Replies are deterministic (the same passage and count give the same questions); usage is
reported as word counts so the cost lines have numbers to show (price 0 by default).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sweep.retrieval.bm25 import ENGLISH_STOPWORDS, tokenize

MODEL = "standin-lift"
WORDS_PER_QUESTION = 4
_PASSAGE = re.compile(r"<passage>\n?(.*?)\n?</passage>", re.DOTALL)
_N = re.compile(r"Write (\d+) ")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def lift_questions(passage: str, n: int) -> list[str]:
    """``n`` template questions, each from one of the passage's longest sentences (passage
    order), made of that sentence's first `WORDS_PER_QUESTION` distinct content words of
    four letters or more."""
    sentences = [s for s in _SENTENCE.split(" ".join(passage.split())) if s]
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(sentences[i]), i))[:max(n, 0)]
    out = []
    for i in sorted(ranked):
        words = [w for w in dict.fromkeys(tokenize(sentences[i], ENGLISH_STOPWORDS))
                 if len(w) >= 4 and not w.isdigit()][:WORDS_PER_QUESTION]
        if len(words) >= 2:
            out.append(f"what about {' '.join(words)}?")
    return out


def reply_for(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions response for one request body."""
    prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages") or []
                       if isinstance(m, dict) and m.get("role") == "user")
    passage = _PASSAGE.search(prompt)
    count = _N.search(prompt)
    questions = lift_questions(passage.group(1) if passage else prompt,
                               int(count.group(1)) if count else 1)
    content = "\n".join(questions)
    usage = (len(prompt.split()), len(content.split()))
    return {"id": "standin", "object": "chat.completion", "created": 0,
            "model": str(body.get("model") or MODEL),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                      "total_tokens": sum(usage)}}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        except (ValueError, json.JSONDecodeError):
            self._send(400, {"error": {"message": "the body is not JSON"}})
            return
        self._send(200, reply_for(body if isinstance(body, dict) else {}))

    def _send(self, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # quiet: one line at start-up is enough
        pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sweep.dev.standin_chat",
                                description="A rule-based stand-in for a chat model (NOT a "
                                "model): lifts passage words into template questions.")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8520)
    args = p.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), _Handler)
    print(f"stand-in chat (rule-based, not a model) on http://{args.host}:"
          f"{server.server_address[1]}/v1", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
