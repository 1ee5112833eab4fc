"""generation.cache_answers against tests/chat_protocol_server.py: answers kept as they arrive
(a failure later in the batch loses none that finished), a re-run asks nothing, the key holds
the model name, the prompt and the parameters; and llama.cpp's refusal of a prompt over its
context window becomes one line with the two token counts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from sweep.common.errors import SweepError
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.cache import AnswerCache, get_answer_cache
from sweep.generation.run import ChatReader, Passage

QUESTIONS = ["q one?", "q two?", "q three?", "q four?"]
CONTEXTS = [[Passage("doc", f"passage {i}")] for i in range(4)]


def _echo(request: dict[str, Any]) -> Reply:
    """A deterministic "model": the answer names the question it was asked."""
    user = request["messages"][-1]["content"]
    return Reply(content="A: " + user.rsplit("Question: ", 1)[1], usage=(20, 3))


def _reader(server: ChatProtocolServer, cache: AnswerCache, model: str = "m@abc",
            max_tokens: int = 16) -> ChatReader:
    client = ChatClient(EndpointSpec("generation", server.base_url, "", timeout_s=5,
                                     max_retries=0, concurrency=1), model)
    return ChatReader(client, "sys", "{context}\nQuestion: {question}", 0.0, max_tokens, cache)


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])


def test_a_rerun_asks_nothing_and_gives_the_same_answers(tmp_path: Path) -> None:
    cache = get_answer_cache(tmp_path)
    with ChatProtocolServer(_echo) as server:
        first = _reader(server, cache)
        answers = first.answer_all(QUESTIONS, CONTEXTS, progress=False)
        assert [a.text for a in answers] == [f"A: {q}" for q in QUESTIONS]
        assert len(server.requests) == 4 and first.cached_hits == 0
        assert (first.usage.calls, first.usage.prompt_tokens) == (4, 80)
        again = _reader(server, cache)
        assert again.answer_all(QUESTIONS, CONTEXTS, progress=False) == answers
        assert len(server.requests) == 4  # nothing asked
        assert again.cached_hits == 4 and again.usage.calls == 0
        # another model name or other parameters: asked again, never taken from the cache
        _reader(server, cache, model="m@def").answer_all(QUESTIONS[:1], CONTEXTS[:1], False)
        _reader(server, cache, max_tokens=17).answer_all(QUESTIONS[:1], CONTEXTS[:1], False)
        assert len(server.requests) == 6
    assert _rows(tmp_path / "answers.sqlite") == 6


def test_a_failure_mid_batch_keeps_the_answers_that_finished(tmp_path: Path) -> None:
    cache = get_answer_cache(tmp_path)
    with ChatProtocolServer(_echo) as server:
        # two answers, then a refusal (not retried: max_retries=0)
        server.script = [*(_echo({"messages": [{"content": f"Question: {q}"}]})
                           for q in QUESTIONS[:2]), Reply(status=400)]
        with pytest.raises(SweepError, match="HTTP 400"):
            _reader(server, cache).answer_all(QUESTIONS, CONTEXTS, progress=False)
        assert _rows(tmp_path / "answers.sqlite") == 2
        # the fourth may have started before the failure cancelled what was left
        sent = len(server.requests)
        assert sent in (3, 4)
        resumed = _reader(server, cache)
        answers = resumed.answer_all(QUESTIONS, CONTEXTS, progress=False)
        assert [a.text for a in answers] == [f"A: {q}" for q in QUESTIONS]
        assert resumed.cached_hits == 2 and resumed.usage.calls == 2
        assert len(server.requests) == sent + 2  # only the two not kept


def test_a_prompt_over_the_context_window_is_one_line_with_both_counts() -> None:
    refusal = json.dumps({"error": {"code": 400, "message": "request (4240 tokens) exceeds the "
                                    "available context size (2048 tokens)",
                                    "type": "exceed_context_size_error",
                                    "n_prompt_tokens": 4240, "n_ctx": 2048}})
    with ChatProtocolServer(lambda r: Reply(status=400, body=refusal)) as server:
        client = ChatClient(EndpointSpec("generation", server.base_url, "", timeout_s=5,
                                         max_retries=0), "m")
        with pytest.raises(SweepError) as err:
            client.complete([{"role": "user", "content": "long"}], 0.0, 8)
    msg = str(err.value)
    assert "the prompt (4240 tokens) is longer than the context window" in msg
    assert "(2048 tokens)" in msg and "refused it rather than cut it" in msg
    assert "\n" not in msg
