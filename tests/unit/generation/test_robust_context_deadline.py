"""A contextual-header endpoint that drips its answer (issue 44).

Before: the chat client's timeout was httpx's per-read one, so a server sending a byte every
few hundredths of a second held a run far past chunk.context.timeout_s. Now each attempt has
the timeout in total, as embedding endpoints do. The drip below would take about 15 s to
finish; the limit is 0.3 s, so the call fails whatever the machine's speed (no timing is
asserted: an unbounded wait would end in a complete answer and the test would fail)."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus, corpus_token_starts
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import parse_document
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.contextual import ContextSpec, add_contexts, get_context_cache

DOC = parse_document("care.md", "# Care\n\nWash the kettle weekly. Descale it monthly.\n")


class DrippingServer(ChatProtocolServer):
    def __init__(self, drip_s: float) -> None:
        super().__init__(lambda request: Reply(content="About the kettle." * 10))
        self.drip_s = drip_s

    def write_body(self, wfile: Any, data: bytes, scripted: Any) -> None:
        for i in range(len(data)):
            wfile.write(data[i:i + 1])
            wfile.flush()
            time.sleep(self.drip_s)


def client(server: ChatProtocolServer, timeout_s: float, retries: int) -> ChatClient:
    return ChatClient(EndpointSpec("chunk.context", server.base_url, "", timeout_s=timeout_s,
                                   max_retries=retries, concurrency=1), "ctx-model")


def test_a_dripping_context_endpoint_hits_the_total_deadline(tmp_path) -> None:
    starts = corpus_token_starts([DOC], RegexTokenizer())
    chunks = chunk_corpus([DOC], ChunkSpec("heading", 64, 0, "contextual"), RegexTokenizer(),
                          starts)
    cache = get_context_cache(tmp_path)
    with DrippingServer(drip_s=0.05) as server:
        with pytest.raises(SweepError) as info:
            add_contexts(chunks, [DOC], starts, client(server, 0.3, 1), ContextSpec(), cache,
                         progress=False)
        assert len(server.requests) == 2  # the first attempt and its one retry
    assert str(info.value) == (f"chunk.context: {server.base_url} did not answer within "
                               "chunk.context.timeout_s=0.3 (after 1 retries)")
    with sqlite3.connect(tmp_path / "contexts.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM contexts").fetchone()[0] == 0


def test_an_answer_within_the_deadline_still_arrives(tmp_path) -> None:
    # the same drip, slow enough to notice but finished well inside a generous deadline
    with DrippingServer(drip_s=0.0) as server:
        answer = client(server, 30, 0).complete([{"role": "user", "content": "hi"}], 0.0, 10)
    assert answer.text == "About the kettle." * 10
