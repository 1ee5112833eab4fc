"""chunk.header=contextual against tests/chat_protocol_server.py (scripted, deterministic
contexts): contexts in embed_text only, cache hits on the second run, cost counted, a dry run
that spends nothing, and a failing endpoint that fails in one line with no cache entries."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from helpers import run_cli
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus, corpus_token_starts
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.common.errors import SweepError
from sweep.data.corpus import parse_document
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.contextual import (
    PROMPT_VERSION,
    ContextSpec,
    add_contexts,
    get_context_cache,
)

REGEX = RegexTokenizer()
DOC = parse_document("care.md", "# Care\n\nWash the kettle weekly. Descale it monthly.\n\n"
                                "## Storage\n\nKeep it dry. Store it upright.\n")


def _chunk_of(request: dict[str, Any]) -> str:
    prompt = request["messages"][0]["content"]
    return prompt.split("<passage>\n", 1)[1].split("\n</passage>", 1)[0]


def _context_rule(request: dict[str, Any]) -> Reply:
    """A deterministic "model": the context names the passage's first word."""
    return Reply(content=f"About {_chunk_of(request).split()[0]} in the care guide.",
                 usage=(100, 10))


def _setup():
    starts = corpus_token_starts([DOC], REGEX)
    chunks = chunk_corpus([DOC], ChunkSpec("heading", 8, 0, "contextual"), REGEX, starts)
    return chunks, starts


def _client(server: ChatProtocolServer, retries: int = 0) -> ChatClient:
    return ChatClient(EndpointSpec("chunk.context", server.base_url, "", timeout_s=5,
                                   max_retries=retries, concurrency=2), "ctx-model")


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM contexts").fetchone()[0]


def test_contexts_go_into_embed_text_and_are_paid_once(tmp_path: Path) -> None:
    chunks, starts = _setup()
    assert len(chunks) == 4 and all(c.embed_text == c.text for c in chunks)
    spec = ContextSpec(price_input_per_mtok=2.0, price_output_per_mtok=10.0)
    cache = get_context_cache(tmp_path)
    with ChatProtocolServer(_context_rule) as server:
        first = add_contexts(chunks, [DOC], starts, _client(server), spec, cache,
                             progress=False)
        assert len(server.requests) == 4
        # The whole document is shown (it is shorter than max_doc_tokens), with the chunk.
        prompt = server.requests[0]["json"]["messages"][0]["content"]
        assert DOC.text in prompt
        second = add_contexts(chunks, [DOC], starts, _client(server), spec, cache,
                              progress=False)
        assert len(server.requests) == 4  # every context from the cache
    for c, got in zip(chunks, first.chunks, strict=True):
        assert (got.start, got.end, got.text) == (c.start, c.end, c.text)  # span unchanged
        assert got.embed_text == f"About {c.text.split()[0]} in the care guide.\n\n{c.text}"
    assert [c.embed_text for c in second.chunks] == [c.embed_text for c in first.chunks]
    # 4 calls of 100 prompt + 10 completion tokens at $2 / $10 per million tokens.
    assert first.metrics["context_calls"] == 4
    assert first.metrics["context_prompt_tokens"] == 400
    assert first.metrics["context_cost_usd"] == pytest.approx((400 * 2 + 40 * 10) / 1e6)
    assert second.metrics["context_calls"] == 0
    assert second.metrics["context_cache_hits"] == 4
    assert "context_cost_usd" not in second.metrics  # nothing reported, nothing paid
    assert PROMPT_VERSION == "contextual-v1"  # bump it when PROMPT changes


def test_a_failing_endpoint_leaves_no_partial_cache_entries(tmp_path: Path) -> None:
    chunks, starts = _setup()
    cache = get_context_cache(tmp_path)

    def fail_on_storage(request: dict[str, Any]) -> Reply:
        if "Keep" in _chunk_of(request):
            return Reply(status=400)
        return _context_rule(request)

    with (ChatProtocolServer(fail_on_storage) as server,
          pytest.raises(SweepError, match=r"^chunk\.context: HTTP 400") as err):
        add_contexts(chunks, [DOC], starts, _client(server), ContextSpec(), cache,
                     progress=False)
    assert "\n" not in str(err.value)
    assert _rows(tmp_path / "contexts.sqlite") == 0


def test_dry_run_states_the_cost_and_spends_nothing(tmp_path: Path) -> None:
    chunks, starts = _setup()
    with ChatProtocolServer(_context_rule) as server:
        with pytest.raises(SweepError, match=r"chunk\.context\.dry_run: 4 calls") as err:
            add_contexts(chunks, [DOC], starts, _client(server),
                         ContextSpec(max_tokens=50, price_output_per_mtok=1.0, dry_run=True),
                         get_context_cache(tmp_path), progress=False)
        assert server.requests == []
    assert "at most 200 output tokens" in str(err.value)


FAST = ["retrieval=bm25", "retrieval.diagnose=false", "eval.latency_sample=0",
        "chunk.header=contextual", "chunk.context.model=ctx-model",
        "chunk.context.max_retries=0"]


def test_the_command_line_run_logs_context_costs_and_fails_in_one_line(tmp_path: Path
                                                                        ) -> None:
    common = [*FAST, f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
              f"cache.dir={tmp_path}/cache", "chunk.context.price_input_per_mtok=1"]
    with ChatProtocolServer(lambda r: Reply(content="From the demo help centre.",
                                            usage=(50, 5))) as server:
        res = run_cli("-m", "sweep", *common, f"chunk.context.base_url={server.base_url}",
                      f"hydra.run.dir={tmp_path}/run", cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-2000:]
        calls = len(server.requests)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert calls > 0 and report["metrics"]["context_calls"] == calls
    assert report["metrics"]["context_cost_usd"] == pytest.approx(calls * 50 / 1e6)
    with ChatProtocolServer(lambda r: Reply(status=500)) as server:
        # Same chunks, every context cached: the broken endpoint is never called.
        res = run_cli("-m", "sweep", *common, f"chunk.context.base_url={server.base_url}",
                      f"hydra.run.dir={tmp_path}/run2", "sweep.force=true", cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-2000:]
        assert server.requests == []
        res = run_cli("-m", "sweep", *common, f"chunk.context.base_url={server.base_url}",
                      "chunk.size=128", f"hydra.run.dir={tmp_path}/run3", cwd=tmp_path)
    assert res.returncode == 1
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: chunk.context: HTTP 500"), \
        res.stderr[-2000:]
    assert json.loads((tmp_path / "run3" / "report.json").read_text())["status"] == "FAILED"
