"""retrieval.query_transform (hyde, multi_query): the reply parsed into queries, the fused
search recomputed by hand, the model calls against tests/chat_protocol_server.py (cache,
tokens, an empty reply, a failure mid-batch, a bad payload), and the configuration's identity
(off: no key enters config_hash; on: the prompts do, how the endpoint is called does not)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from sweep.chunking.chunkers import Chunk
from sweep.common.errors import SweepError
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.queries import (
    TransformJob,
    get_transform_cache,
    transform_messages,
    transform_queries,
)
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.search import ConfigSearch
from sweep.retrieval.transform import (
    HydeSpec,
    MultiQuerySpec,
    fused_search,
    group_heads,
    hyde_text,
    parse_rewrites,
)

# ----------------------------------------------------------------------------- pure parts


def test_rewrites_drop_list_marks_quotes_blanks_and_repeats() -> None:
    reply = ("Here are 3 ways:\n1. How do I get my money back?\n2) \"Can I return it?\"\n"
             "- what is the return policy?\n\n* Q4: How do I get my money back?\n"
             "Q5: Is there a refund window?")
    got = parse_rewrites(reply, "What is the return policy?", 3)
    # the question itself and the repeat are skipped; the preamble line counts as a rewrite
    assert got == ["Here are 3 ways:", "How do I get my money back?", "Can I return it?"]
    assert parse_rewrites(reply, "What is the return policy?", 10)[-1] == \
        "Is there a refund window?"
    assert parse_rewrites("\n \n", "q?", 3) == []
    assert parse_rewrites("1.\n2.", "q?", 3) == []  # marks alone say nothing
    # a model stuck on a pattern writes no question
    assert parse_rewrites("1. 1.1.1.1.1.1\n2. ---\n3. Can I?", "q?", 3) == ["Can I?"]


def test_hyde_text_keeps_the_question_unless_told_and_an_empty_passage_changes_nothing() -> None:
    assert hyde_text("q?", " Returns take\n30 days. ", "question_passage") == \
        "q?\nReturns take 30 days."
    assert hyde_text("q?", "Returns take 30 days.", "passage") == "Returns take 30 days."
    assert hyde_text("q?", " \n ", "passage") == "q?"


def _chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk(f"d#{i}", "d", i, 0, len(t), t, t, len(t.split())) for i, t in enumerate(texts)]


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float32)
    return a / np.linalg.norm(a)


def test_fused_search_is_rrf_over_each_querys_ranking_computed_by_hand() -> None:
    chunks = _chunks(["a", "b", "c", "d"])
    vecs = np.stack([_unit([1, 0, 0]), _unit([0, 1, 0]), _unit([0, 0, 1]),
                     _unit([1, 1, 0])])
    search = ConfigSearch(chunks, "dense", depth=3, chunk_vecs=vecs, rrf_k=60)
    # group 0: the question near chunk 0, one rewrite near chunk 2; group 1: the question alone
    q = np.stack([_unit([1, 0.1, 0]), _unit([0, 0.1, 1]), _unit([0, 1, 0.2])])
    groups = [["question one", "rewrite"], ["question two"]]
    out = fused_search(search, groups, q)
    scores = q @ vecs.T
    own = [sorted(range(4), key=lambda i, r=r: -scores[r, i])[:3] for r in range(3)]
    fused: dict[int, float] = {}
    for ranked in own[:2]:
        for rank, i in enumerate(ranked, start=1):
            fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
    expected = sorted(fused, key=lambda i: (-fused[i], i))[:3]
    assert out[0].final.indices == tuple(expected)
    assert out[0].final.scores == pytest.approx([fused[i] for i in expected], abs=1e-15)
    assert out[0].dense is not None and out[0].dense.indices == tuple(own[0])  # the question's
    assert out[1].final.indices == tuple(own[2])  # a group of one: its own ranking, unfused
    assert np.array_equal(group_heads(groups, q), q[[0, 2]])


def test_fused_search_on_bm25_reads_each_querys_words() -> None:
    chunks = _chunks(["refund window thirty days", "shipping to hawaii", "warranty claim"])
    bm25 = BM25Index([c.embed_text for c in chunks])
    search = ConfigSearch(chunks, "bm25", depth=3, bm25=bm25)
    alone = fused_search(search, [["refund window"]], None)[0].final
    both = fused_search(search, [["refund window", "hawaii shipping"]], None)[0].final
    assert alone.indices == (0,)  # one query, one matching chunk
    assert set(both.indices) == {0, 1}  # the rewrite's chunk joins through the fusion


# ----------------------------------------------------------------------------- model calls


def _job(method: str = "hyde", url: str = "", **kw: Any) -> TransformJob:
    return TransformJob(method=method, endpoint=EndpointSpec("retrieval.transform", url, "",
                                                             timeout_s=5, max_retries=0,
                                                             concurrency=1),
                        model="m@abc", **kw)


def _client(server: ChatProtocolServer, model: str = "m@abc") -> ChatClient:
    return ChatClient(EndpointSpec("retrieval.transform", server.base_url, "", timeout_s=5,
                                   max_retries=0, concurrency=1), model)


def _hyde_reply(request: dict[str, Any]) -> Reply:
    q = request["messages"][-1]["content"].removeprefix("Question: ").removesuffix("\nPassage:")
    return Reply(content=f"About {q}", usage=(12, 5))


def _rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM answers").fetchone()[0])


def test_hyde_asks_once_per_distinct_question_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    cache = get_transform_cache(tmp_path)
    questions = ["refund?", "postage?", "refund?"]
    with ChatProtocolServer(_hyde_reply) as server:
        job = _job(url=server.base_url)
        first = transform_queries(job, questions, _client(server), cache, progress=False)
        assert first.groups == [["refund?\nAbout refund?"], ["postage?\nAbout postage?"],
                                ["refund?\nAbout refund?"]]
        assert len(server.requests) == 2
        assert first.metrics == {"transform_calls": 2.0, "transform_cache_hits": 0.0,
                                 "transform_empty": 0.0, "transform_prompt_tokens": 24.0,
                                 "transform_completion_tokens": 10.0}
        again = transform_queries(job, questions, _client(server), cache, progress=False)
        assert again.groups == first.groups and len(server.requests) == 2
        assert again.metrics == {"transform_calls": 0.0, "transform_cache_hits": 2.0,
                                 "transform_empty": 0.0}  # nothing asked, nothing reported
        # another model name, another prompt: asked again, never taken from the cache
        transform_queries(job, questions[:1], _client(server, "m@def"), cache, progress=False)
        other = _job(url=server.base_url, hyde=HydeSpec(prompt="Q: {question}\nPassage:"))
        transform_queries(other, questions[:1], _client(server), cache, progress=False)
        assert len(server.requests) == 4
        priced = _job(url=server.base_url, price_input_per_mtok=1e6, price_output_per_mtok=2e6)
        m = transform_queries(priced, ["new?"], _client(server), cache, progress=False).metrics
        assert m["transform_cost_usd"] == pytest.approx(12 * 1.0 + 5 * 2.0)
    assert _rows(tmp_path / "transforms.sqlite") == 5


def test_multi_query_keeps_the_question_first_and_counts_an_empty_reply() -> None:
    replies = iter(["1. how do refunds work\n2. refund rules\n3. money back\n4. extra",
                    "   "])
    with ChatProtocolServer(lambda request: Reply(content=next(replies))) as server:
        job = _job("multi_query", server.base_url, multi_query=MultiQuerySpec(n=3))
        out = transform_queries(job, ["refund?", "postage?"], _client(server), None,
                                progress=False)
        sent = server.requests[0]["json"]
    assert out.groups == [["refund?", "how do refunds work", "refund rules", "money back"],
                          ["postage?"]]
    assert out.metrics["transform_empty"] == 1.0
    assert out.metrics["transform_rewrites_mean"] == 1.5
    assert sent["model"] == "m@abc" and sent["temperature"] == 0.0 and sent["max_tokens"] == 96
    assert sent["messages"][-1]["content"] == "Write 3 different ways to ask this question:\n" \
        "refund?"


def test_the_prompts_are_filled_by_replacement_so_braces_stay_text() -> None:
    msgs = transform_messages(_job("multi_query", "http://x/v1"), "what is {this}?")
    assert msgs[0] == {"role": "system", "content": MultiQuerySpec.system_prompt}
    assert msgs[1]["content"] == "Write 3 different ways to ask this question:\nwhat is {this}?"
    assert transform_messages(_job("hyde", "http://x/v1", hyde=HydeSpec(system_prompt="")),
                              "q {n}")[0] == {"role": "user",
                                               "content": "Question: q {n}\nPassage:"}


def test_a_failure_mid_batch_keeps_the_replies_that_arrived(tmp_path: Path) -> None:
    cache = get_transform_cache(tmp_path)
    questions = ["a?", "b?", "c?", "d?"]
    with ChatProtocolServer(_hyde_reply) as server:
        server.script = [_hyde_reply({"messages": [{"content": f"Question: {q}\nPassage:"}]})
                         for q in questions[:2]] + [Reply(status=500)]
        with pytest.raises(SweepError, match=r"retrieval.transform: HTTP 500"):
            transform_queries(_job(url=server.base_url), questions, _client(server), cache,
                              progress=False)
        assert _rows(tmp_path / "transforms.sqlite") == 2
        sent = len(server.requests)
        out = transform_queries(_job(url=server.base_url), questions, _client(server), cache,
                                progress=False)
        assert out.metrics["transform_cache_hits"] == 2.0
        assert out.metrics["transform_calls"] == 2.0
        assert len(server.requests) == sent + 2
        assert out.groups[3] == ["d?\nAbout d?"]


@pytest.mark.parametrize("reply", [Reply(status=429), Reply(content=None, body="not json"),
                                   Reply(content=None, body='{"choices": []}')])
def test_a_refusal_or_a_bad_payload_is_one_line_naming_the_section(reply: Reply) -> None:
    with ChatProtocolServer(lambda request: reply) as server, pytest.raises(SweepError) as err:
        transform_queries(_job(url=server.base_url), ["q?"], _client(server), None,
                          progress=False)
    assert str(err.value).startswith("retrieval.transform")
    assert "\n" not in str(err.value)


# ----------------------------------------------------------------------------- identity


def _hash(*overrides: str) -> str:
    from sweep.config.compose import compose, to_container
    from sweep.config.identity import config_hash

    return config_hash(to_container(compose(list(overrides))), "corpus", "golden")


def test_off_no_transform_key_counts_and_on_the_prompts_do_but_not_the_calling() -> None:
    base = _hash()
    # off: whatever the transform's settings say, the configuration is the one it always was
    assert _hash("retrieval.hyde.prompt='Q {question}'", "retrieval.multi_query.n=9",
                 "retrieval.transform.model=x") == base
    hyde = _hash("retrieval.query_transform=hyde", "retrieval.transform.model=m")
    multi = _hash("retrieval.query_transform=multi_query", "retrieval.transform.model=m")
    assert len({base, hyde, multi}) == 3
    assert _hash("retrieval.query_transform=hyde", "retrieval.transform.model=m2") != hyde
    assert _hash("retrieval.query_transform=hyde", "retrieval.transform.model=m",
                 "retrieval.hyde.embed=passage") != hyde
    # a setting of the method not chosen, or of how the endpoint is called: the same
    assert _hash("retrieval.query_transform=hyde", "retrieval.transform.model=m",
                 "retrieval.multi_query.n=5", "retrieval.transform.timeout_s=5",
                 "retrieval.transform.concurrency=3") == hyde
    assert _hash("retrieval.query_transform=multi_query", "retrieval.transform.model=m",
                 "retrieval.multi_query.n=5") != multi


@pytest.mark.parametrize(("overrides", "message"), [
    (["retrieval=bm25", "retrieval.query_transform=hyde", "retrieval.transform.model=m"],
     "retrieval.method=bm25 has none"),
    (["retrieval.query_transform=multi_query"], "retrieval.transform.model is empty"),
    (["retrieval.query_transform=multi_query", "retrieval.transform.model=m",
      "retrieval.multi_query.n=0"], "retrieval.multi_query.n=0 must be >= 1"),
    (["retrieval.query_transform=hyde", "retrieval.transform.model=m",
      "retrieval.hyde.prompt=no field"], "retrieval.hyde.prompt must contain {question}"),
])
def test_a_transform_that_cannot_run_is_refused_before_any_work(overrides: list[str],
                                                                 message: str) -> None:
    from sweep.config.checks import check_config
    from sweep.config.compose import compose

    with pytest.raises(SweepError, match=message.replace("{", r"\{").replace("}", r"\}")):
        check_config(compose(overrides))
    # multi_query runs on BM25 alone: every query's words are searched
    check_config(compose(["retrieval=bm25", "retrieval.query_transform=multi_query",
                          "retrieval.transform.model=m"]))
