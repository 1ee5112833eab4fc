"""Synthetic candidates against tests/chat_protocol_server.py: the prompt carries the passage,
replies are parsed into questions marked synthetic with their passage, a second run is served
from the cache, and tokens are costed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chat_protocol_server import ChatProtocolServer, Reply
from sweep.chunking.chunkers import ChunkSpec, chunk_corpus, corpus_token_starts
from sweep.chunking.tokenizers import RegexTokenizer
from sweep.data.corpus import parse_document
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.cache import JudgeCache
from sweep.questions.generate import (
    GenerateSpec,
    generate_rows,
    parse_questions,
    sample_passages,
)

REGEX = RegexTokenizer()
WORDS = " ".join(f"word{i}" for i in range(30))
DOC = parse_document("kettle.md", f"# Kettle\n\nDescale the kettle monthly. {WORDS}.\n\n"
                                  f"## Storage\n\nKeep it dry and upright. {WORDS}.\n\n"
                                  "## Short\n\nToo short.\n")


def chunks() -> list[Any]:
    starts = corpus_token_starts([DOC], REGEX)
    return chunk_corpus([DOC], ChunkSpec("heading", 64, 0, "none"), REGEX, starts)


def rule(request: dict[str, Any]) -> Reply:
    prompt = request["messages"][-1]["content"]
    passage = prompt.split("<passage>\n", 1)[1].split("\n</passage>", 1)[0]
    first = "descale" if "Descale" in passage else "store"
    return Reply(content=f"1. how do i {first} it?\n2) when should I {first}\n\n- x\n",
                 usage=(120, 15))


def test_parse_questions_strips_numbering_and_keeps_n() -> None:
    reply = "1. First one?\n- second one\n* third one\nQ4: fourth one\nword\n"
    assert parse_questions(reply, 3) == ["First one?", "second one", "third one"]
    assert parse_questions(reply, 9) == ["First one?", "second one", "third one",
                                         "fourth one"]


def test_sample_skips_short_passages_and_is_seeded() -> None:
    cs = chunks()
    picked = sample_passages(cs, 5, seed=0)
    assert len(picked) == 2  # "Too short." has fewer than 20 words
    assert all(len(c.text.split()) >= 20 for c in picked)
    assert [c.chunk_id for c in sample_passages(cs, 1, 3)] == \
        [c.chunk_id for c in sample_passages(cs, 1, 3)]


def test_generate_marks_synthetic_with_passage_caches_and_costs(tmp_path: Path) -> None:
    cs = sample_passages(chunks(), 5, 0)
    cache = JudgeCache(tmp_path / "questions.sqlite")
    spec = GenerateSpec(passages=2, per_passage=2, price_input_per_mtok=1.0,
                        price_output_per_mtok=2.0)
    with ChatProtocolServer(rule) as server:
        client = ChatClient(EndpointSpec("generation", server.base_url, "", timeout_s=5,
                                         max_retries=0), "gen-model")
        rows, info = generate_rows(cs, [DOC], client, spec, cache, progress=False)
        first_requests = len(server.requests)
        again, info2 = generate_rows(cs, [DOC], client, spec, cache, progress=False)
        assert len(server.requests) == first_requests  # all from the cache
    assert first_requests == 2
    assert [r.question for r in rows] == ["how do i descale it?", "when should I descale",
                                          "how do i store it?", "when should I store"]
    assert all(r.source == "synthetic" for r in rows)
    c = cs[0]
    assert rows[0].passage == {"doc_id": c.doc_id, "start": c.start, "end": c.end,
                               "text": c.text}
    assert rows[0].source_ref == f"{c.doc_id}:{c.start}-{c.end}"
    assert DOC.text[c.start:c.end] == c.text
    assert info["calls"] == 2 and info["cache_hits"] == 0
    assert info["prompt_tokens"] == 240 and info["completion_tokens"] == 30
    assert abs(info["cost_usd"] - (240 * 1.0 + 30 * 2.0) / 1e6) < 1e-12
    assert info2["calls"] == 0 and info2["cache_hits"] == 2 and info2["cost_usd"] is None
    assert [r.question for r in again] == [r.question for r in rows]
