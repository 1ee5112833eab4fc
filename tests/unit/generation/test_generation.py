"""The generation half: graders, diagnosis, the extractive reader, and the chat client against
a protocol test server on 127.0.0.1 (tests/chat_protocol_server.py: scripted replies, not a
model)."""

from __future__ import annotations

import numpy as np
import pytest

from chat_protocol_server import ChatProtocolServer, Reply
from sweep.common.errors import SweepError
from sweep.endpoints.chat import Answer, ChatClient
from sweep.endpoints.chat import ChatUsage as Usage
from sweep.endpoints.cost import chat_cost_usd as cost_usd
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.cache import JudgeCache
from sweep.generation.run import (
    ChatReader,
    ExtractiveReader,
    GenItem,
    Judge,
    Passage,
    candidate_sentences,
    diagnose,
    grade,
    mentions_all,
    parse_verdict,
    pick_sentences,
    run_generation,
)

# --------------------------------------------------------------------------- graders


def test_mentions_all_is_case_and_whitespace_insensitive_and_needs_every_string() -> None:
    assert mentions_all("Returns are accepted within 30\n  DAYS of delivery.", ["30 days"])
    assert mentions_all("A prepaid label, 30 days.", ["30 days", "PREPAID label"])
    assert not mentions_all("Returns are accepted within 30 days.", ["30 days", "prepaid label"])
    assert not mentions_all("within 3 0 days", ["30 days"])
    assert not mentions_all("", ["30 days"])
    with pytest.raises(ValueError):
        mentions_all("anything", [])


@pytest.mark.parametrize(("reply", "verdict"), [
    ("CORRECT", True), ("correct", True), (" Correct.\n", True), ("INCORRECT", False),
    ("incorrect.", False),
    # Anything else is ungraded, never a guess:
    ("Correct, mostly", None), ("**CORRECT**", None), ("CORRECT INCORRECT", None), ("", None),
    ("yes", None), ("CORRECT..", None), ('{"verdict": "CORRECT"}', None),
])
def test_parse_verdict_is_strict(reply: str, verdict: bool | None) -> None:
    assert parse_verdict(reply) is verdict


@pytest.mark.parametrize(("oracle", "live", "in_live", "expected"), [
    (True, True, True, "ok"),
    (False, True, False, "ok"),  # the live answer is right: nothing to fix
    (True, False, False, "retrieval_bug"),
    (True, False, True, "generation_bug"),
    (False, False, True, "oracle_fail"),
    (False, False, False, "oracle_fail"),
    (None, True, True, "ungraded"),
    (True, None, False, "ungraded"),
])
def test_diagnose_table(oracle: bool | None, live: bool | None, in_live: bool,
                        expected: str) -> None:
    assert diagnose(oracle, live, in_live) == expected


# --------------------------------------------------------------------------- extractive


def test_candidate_sentences_drop_headings_and_duplicates_keep_order() -> None:
    passages = [Passage("a", "## Refunds\nYou have 30 days. Shipping is free."),
                Passage("b", "Shipping is free. Labels are prepaid.")]
    assert candidate_sentences(passages) == ["You have 30 days.", "Shipping is free.",
                                             "Labels are prepaid."]


def test_pick_sentences_best_first_within_the_limit() -> None:
    sents = ["aaaa.", "bbbbbbbbbb.", "cc."]
    scores = np.array([0.5, 0.9, 0.7])
    assert pick_sentences(sents, scores, max_chars=100, max_sentences=2) == "bbbbbbbbbb. cc."
    # after the best (11 characters) nothing else fits in 13
    assert pick_sentences(sents, scores, max_chars=13, max_sentences=3) == "bbbbbbbbbb."
    assert pick_sentences(sents, scores, max_chars=16, max_sentences=3) == "bbbbbbbbbb. cc."
    # the best sentence alone is cut, never dropped
    assert pick_sentences(sents, scores, max_chars=4, max_sentences=2) == "bbbb"
    # ties go to the earlier sentence
    assert pick_sentences(["x.", "y."], np.array([0.3, 0.3]), 100, 1) == "x."


def _toy_encoder(vocab: dict[str, np.ndarray]):
    """Vectors by hand: a text's vector is the normalised sum of its known words'."""
    def encode(texts: list[str], query: bool = False, progress: bool = False) -> np.ndarray:
        out = []
        for t in texts:
            v = sum((vec for w, vec in vocab.items() if w in t.lower()), np.zeros(3))
            n = np.linalg.norm(v)
            out.append(v / n if n else v)
        return np.array(out, dtype=np.float32)
    return encode


def test_extractive_reader_copies_the_sentence_closest_to_the_question() -> None:
    vocab = {"refund": np.array([1.0, 0, 0]), "return": np.array([0.9, 0.1, 0]),
             "ship": np.array([0, 1.0, 0]), "warranty": np.array([0, 0, 1.0])}
    reader = ExtractiveReader(_toy_encoder(vocab), max_chars=200, max_sentences=1)
    ctx = [Passage("p", "Shipping takes 3 days. Warranty lasts 2 years."),
           Passage("q", "## Refund policy\nRefunds are issued within 30 days.")]
    answers = reader.answer_all(["when do i get my refund", "how long is the warranty"],
                                [ctx, ctx], progress=False)
    assert [a.text for a in answers] == ["Refunds are issued within 30 days.",
                                         "Warranty lasts 2 years."]
    empty = reader.answer_all(["refund?"], [[Passage("h", "# Only a heading")]], progress=False)
    assert empty == [Answer("")]


# --------------------------------------------------------------------------- the run


class _ScriptedReader:
    """Answers from a dict (question, first passage text) -> answer."""

    name = "scripted"

    def __init__(self, answers: dict[tuple[str, str], str]) -> None:
        self.answers = answers
        self.usage = Usage()

    def answer_all(self, questions, contexts, progress=True):
        out = [Answer(self.answers[(q, c[0].text if c else "")], 5, 1, True)
               for q, c in zip(questions, contexts, strict=True)]
        for a in out:
            self.usage.add(a)
        return out


def _item(qid: str, mentions: tuple[str, ...], in_live: bool) -> GenItem:
    return GenItem(qid, f"q{qid}", mentions, "ref", (Passage("s", "oracle"),),
                   (Passage("s", "live"),), in_live)


def test_run_generation_accuracy_tax_and_diagnosis_by_hand() -> None:
    items = [_item("1", ("30 days",), True),    # oracle right, live right      -> ok
             _item("2", ("30 days",), False),   # oracle right, live wrong      -> retrieval_bug
             _item("3", ("30 days",), True),    # oracle right, live wrong      -> generation_bug
             _item("4", ("30 days",), True),    # oracle wrong, live wrong      -> oracle_fail
             _item("5", (), True)]              # no mentions, no judge         -> ungraded
    right, wrong = "within 30 days", "no idea"
    answers = {("q1", "oracle"): right, ("q1", "live"): right,
               ("q2", "oracle"): right, ("q2", "live"): wrong,
               ("q3", "oracle"): right, ("q3", "live"): wrong,
               ("q4", "oracle"): wrong, ("q4", "live"): wrong,
               ("q5", "oracle"): right, ("q5", "live"): right}
    out = run_generation(items, _ScriptedReader(answers), None, progress=False)
    s = out.summary
    # graded on both sides: items 1-4; oracle right 3/4, live right 1/4
    assert s["n_graded"] == 4 and s["ungraded_count"] == 1
    assert s["answer_accuracy_oracle"] == pytest.approx(0.75)
    assert s["answer_accuracy_live"] == pytest.approx(0.25)
    assert s["retrieval_tax"] == pytest.approx(0.5)
    assert [out.rows[q]["diagnosis"] for q in "12345"] == [
        "ok", "retrieval_bug", "generation_bug", "oracle_fail", "ungraded"]
    assert (s["n_ok"], s["n_retrieval_bug"], s["n_generation_bug"], s["n_oracle_fail"],
            s["n_ungraded"]) == (1, 1, 1, 1, 1)
    assert out.rows["5"]["oracle_correct"] is None and out.rows["5"]["grade_method"] == "none"
    # per-question values whose means are the summary (what `sweep compare` pairs)
    assert [out.rows[q].get("retrieval_tax") for q in "12345"] == [0.0, 1.0, 1.0, 0.0, None]
    assert [out.rows[q].get("answer_accuracy_live") for q in "1234"] == [1.0, 0.0, 0.0, 0.0]
    assert s["gen_calls"] == 10 and s["gen_prompt_tokens"] == 50
    assert s["gen_completion_tokens"] == 10


def test_no_gradable_item_reports_no_accuracy_rather_than_zero() -> None:
    items = [_item("1", (), True)]
    out = run_generation(items, _ScriptedReader({("q1", "oracle"): "x", ("q1", "live"): "y"}),
                         None, progress=False)
    assert "answer_accuracy_oracle" not in out.summary
    assert "retrieval_tax" not in out.summary
    assert out.summary["ungraded_count"] == 1


def test_cost_estimate_needs_reported_usage_and_a_price() -> None:
    u = Usage(prompt_tokens=2_000_000, completion_tokens=500_000, calls=3, reported=True)
    assert cost_usd(u, 0.5, 2.0) == pytest.approx(1.0 + 1.0)
    assert cost_usd(u, 0.0, 0.0) is None
    assert cost_usd(Usage(calls=3), 0.5, 2.0) is None


# --------------------------------------------------------------------------- the endpoint


def _client(url: str, **kw) -> ChatClient:
    args = {"api_key_env": "CHUNK_SWEEP_TEST_KEY", "timeout_s": 5.0, "max_retries": 2,
            "concurrency": 2}
    args.update(kw)
    return ChatClient(EndpointSpec("generation", url, **args), "test-model")


def test_chat_success_sends_the_key_from_the_named_variable(monkeypatch) -> None:
    monkeypatch.setenv("CHUNK_SWEEP_TEST_KEY", "sk-test-123456")
    with ChatProtocolServer() as srv:
        srv.script.append(Reply(content="The window is 30 days.", usage=(42, 7)))
        reader = ChatReader(_client(srv.base_url), "be brief", "C:{context}\nQ:{question}", 0.0,
                            64)
        [answer] = reader.answer_all(["how long?"], [[Passage("Returns", "30 days.")]],
                                     progress=False)
    assert answer == Answer("The window is 30 days.", 42, 7, True)
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == "Bearer sk-test-123456"
    assert req["json"]["model"] == "test-model" and req["json"]["max_tokens"] == 64
    assert req["json"]["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "C:[1] Returns\n30 days.\nQ:how long?"}]


def test_429_then_success_is_retried() -> None:
    with ChatProtocolServer() as srv:
        srv.script += [Reply(status=429, headers={"Retry-After": "0"}),
                       Reply(status=503, headers={"Retry-After": "0"}),
                       Reply(content="fine")]
        answer = _client(srv.base_url).complete([{"role": "user", "content": "hi"}], 0.0, 8)
    assert answer.text == "fine"
    assert len(srv.requests) == 3


def test_429_for_ever_gives_one_line_naming_the_setting() -> None:
    with ChatProtocolServer(lambda req: Reply(status=429, headers={"Retry-After": "0"})) as srv:
        with pytest.raises(SweepError, match=r"rate-limited \(HTTP 429\) after 1 retries; "
                                             r"lower generation.concurrency"):
            _client(srv.base_url, max_retries=1).complete([{"role": "user", "content": "x"}],
                                                          0.0, 8)
        assert len(srv.requests) == 2


def test_timeout_is_reported_not_hung() -> None:
    with (ChatProtocolServer(lambda req: Reply(content="late", delay_s=3.0)) as srv,
          pytest.raises(SweepError, match=r"did not answer within generation.timeout_s=0.3")):
        _client(srv.base_url, timeout_s=0.3, max_retries=0).complete(
            [{"role": "user", "content": "x"}], 0.0, 8)


def test_refused_key_is_not_echoed(monkeypatch) -> None:
    key = "sk-planted-abcdef987654"
    monkeypatch.setenv("CHUNK_SWEEP_TEST_KEY", key)
    body = '{"error": {"message": "Incorrect API key provided: ' + key + '"}}'
    with (ChatProtocolServer(lambda req: Reply(status=401, body=body)) as srv,
          pytest.raises(SweepError) as info):
        _client(srv.base_url).complete([{"role": "user", "content": "x"}], 0.0, 8)
    assert "HTTP 401" in str(info.value) and "$CHUNK_SWEEP_TEST_KEY" in str(info.value)
    assert key not in str(info.value)


def test_unreachable_endpoint_fails_at_preflight() -> None:
    with ChatProtocolServer() as srv:
        url = srv.base_url  # a port that was just freed: nothing listens on it afterwards
    with pytest.raises(SweepError, match=r"generation.base_url=http://127.0.0.1:\d+/v1: cannot "
                                         r"reach the endpoint"):
        _client(url).preflight()


@pytest.mark.parametrize(("kw", "message"), [
    ({"base_url": ""}, "generation.base_url is empty"),
    ({"base_url": "localhost:11434"}, "is not an http"),
    ({"model": ""}, "generation.model is empty"),
])
def test_bad_endpoint_settings(kw: dict[str, str], message: str) -> None:
    ep = {"section": "generation", "base_url": "http://127.0.0.1:1/v1", "model": "m", **kw}
    with pytest.raises(SweepError, match=message):
        model = ep.pop("model")
        ChatClient(EndpointSpec(**ep), model)


def test_concurrency_is_bounded_and_order_kept() -> None:
    with ChatProtocolServer(lambda req: Reply(content=req["messages"][-1]["content"],
                                              delay_s=0.2)) as srv:
        client = _client(srv.base_url, concurrency=2)
        batches = [[{"role": "user", "content": f"m{i}"}] for i in range(6)]
        answers = client.complete_all(batches, 0.0, 8, progress=False, desc="t")
    assert [a.text for a in answers] == [f"m{i}" for i in range(6)]
    assert srv.max_in_flight == 2


def test_judge_parses_strictly_and_caches(tmp_path) -> None:
    replies = {"A1": "CORRECT", "A2": "incorrect.", "A3": "I would say it is correct"}

    def rule(req):
        user = req["messages"][-1]["content"]
        return Reply(content=next(v for k, v in replies.items() if f"\n{k}\n" in user))

    triples = [("q", "ref", "A1"), ("q", "ref", "A2"), ("q", "ref", "A3")]
    with ChatProtocolServer(rule) as srv:
        cache = JudgeCache(tmp_path / "judge.sqlite")
        judge = Judge(_client(srv.base_url), cache)
        verdicts, raw = judge.grade_all(triples, progress=False)
        assert verdicts == [True, False, None]
        assert raw[2] == "I would say it is correct"
        assert len(srv.requests) == 3
        assert srv.requests[0]["json"]["temperature"] == 0.0
        again = Judge(_client(srv.base_url), JudgeCache(tmp_path / "judge.sqlite"))
        assert again.grade_all(triples, progress=False)[0] == [True, False, None]
        assert len(srv.requests) == 3  # every verdict came from the cache
        assert again.cached_hits == 3


def test_grade_uses_mentions_first_and_the_judge_only_without_them() -> None:
    with ChatProtocolServer(lambda req: Reply(content="CORRECT")) as srv:
        judge = Judge(_client(srv.base_url))
        items = [_item("1", ("30 days",), True), _item("2", (), True), _item("3", (), True)]
        verdicts, how = grade(items, [Answer("no"), Answer("yes"), Answer("maybe")], judge,
                              progress=False)
    assert verdicts == [False, True, True]
    assert how == ["mentions", "judge", "judge"]
    assert len(srv.requests) == 2


def test_first_failure_stops_the_batch_quickly() -> None:
    with ChatProtocolServer(lambda req: Reply(status=400)) as srv:
        client = _client(srv.base_url, concurrency=1, max_retries=0)
        with pytest.raises(SweepError, match="HTTP 400"):
            client.complete_all([[{"role": "user", "content": "x"}]] * 50, 0.0, 8, False, "t")
    assert len(srv.requests) < 50  # what had not started was cancelled


def test_compare_ranks_generation_metrics_the_right_way_round() -> None:
    from sweep.evaluation.catalog import lower_is_better

    assert lower_is_better("retrieval_tax") and lower_is_better("n_retrieval_bug")
    assert lower_is_better("cost_estimate_usd") and lower_is_better("ungraded_count")
    assert not lower_is_better("answer_accuracy_live")
    assert not lower_is_better("answer_accuracy_oracle") and not lower_is_better("n_ok")
