"""The generation half: answer every golden question twice and tell which half failed.

* **oracle**: the chunks of this configuration that hold the evidence, in document order
  (retrieval made perfect);
* **live**: the top ``eval.prompt_k`` retrieved chunks (what the assistant really reads).

Grading is the deterministic ``answer_must_mention`` check first; a judge only for items that
have none; what neither can grade is ``ungraded``, counted apart and never scored as wrong.
Accuracy is the mean over the items graded on both sides, so oracle and live are always
compared on the same questions and ``retrieval_tax = oracle - live`` is a paired difference.

Readers: `ExtractiveReader` (offline, deterministic: copies the context sentences closest to
the question) and `ChatReader` (any OpenAI-compatible chat-completions endpoint). The network
lives in `sweep.endpoints.chat.ChatClient`; everything else here is a pure function over plain
data.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from sweep.chunking.chunkers import split_sentences
from sweep.common.registry import Entry, Registry, Traits
from sweep.endpoints.chat import Answer, ChatClient, ChatUsage
from sweep.generation.cache import AnswerCache, JudgeCache

log = logging.getLogger(__name__)

DIAGNOSES = ("ok", "retrieval_bug", "generation_bug", "oracle_fail", "ungraded")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Passage:
    """One chunk as a prompt shows it: where it comes from, and its text."""

    source: str
    text: str


@dataclass(frozen=True)
class GenItem:
    """One golden question, ready to be answered twice."""

    qid: str
    question: str
    mentions: tuple[str, ...]
    reference: str  # the evidence text, for the judge
    oracle: tuple[Passage, ...]
    live: tuple[Passage, ...]
    evidence_in_live: bool  # every evidence character is inside the live context


class Reader(Protocol):
    name: str
    usage: ChatUsage

    def answer_all(self, questions: Sequence[str], contexts: Sequence[Sequence[Passage]],
                   progress: bool) -> list[Answer]:
        """One answer per (question, context), in order."""
        ...


# --------------------------------------------------------------------------- grading


def normalise(text: str) -> str:
    """Case-folded, every run of whitespace one space: the form mentions are matched in."""
    return " ".join(text.casefold().split())


def mentions_all(answer: str, mentions: Sequence[str]) -> bool:
    """True when every ``answer_must_mention`` string occurs in ``answer`` (case-insensitive,
    whitespace-normalised). The seed's grader: all of them must be there.

    >>> mentions_all("Returns are free within 30\\n days.", ["30 DAYS"])
    True
    >>> mentions_all("Within 30 days, with a prepaid label.", ["30 days", "restocking fee"])
    False
    """
    if not mentions:
        raise ValueError("no mentions: this item needs the judge")
    a = normalise(answer)
    return all(normalise(m) in a for m in mentions)


JUDGE_PROMPT_VERSION = "chunk-sweep-judge-v1"
JUDGE_SYSTEM = ("You grade answers of a customer-facing assistant against reference evidence. "
                "You reply with exactly one word.")
JUDGE_TEMPLATE = """Question:
{question}

Reference evidence (the passage or passages that hold the correct answer):
{reference}

Answer to grade:
{answer}

Does the answer give the information the reference evidence gives for this question, without
contradicting it? Reply with exactly one word: CORRECT or INCORRECT."""


def judge_messages(question: str, reference: str, answer: str) -> list[dict[str, str]]:
    # str.replace, not str.format: braces in a question or an answer must stay text.
    user = (JUDGE_TEMPLATE.replace("{question}", question).replace("{reference}", reference)
            .replace("{answer}", answer if answer.strip() else "(empty answer)"))
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


def parse_verdict(reply: str) -> bool | None:
    """``CORRECT`` -> True, ``INCORRECT`` -> False (case-insensitive, one trailing period
    allowed); anything else -> None, i.e. ungraded. Never a guess.

    >>> parse_verdict(" Correct. "), parse_verdict("INCORRECT"), parse_verdict("Mostly correct")
    (True, False, None)
    """
    word = reply.strip()
    word = word[:-1] if word.endswith(".") else word
    return {"CORRECT": True, "INCORRECT": False}.get(word.strip().upper())


def diagnose(oracle_ok: bool | None, live_ok: bool | None, evidence_in_live: bool) -> str:
    """Which half to spend the week on, per question.

    ``ok``: the live answer is right. ``oracle_fail``: wrong even with the evidence handed over
    (prompt, model, or the label itself). ``retrieval_bug``: right with the evidence, wrong
    without it, and the live context lacked it. ``generation_bug``: the live context held the
    evidence and the answer is still wrong (while the oracle answer was right: distracting
    chunks, ordering, length). ``ungraded``: a side could not be graded.
    """
    if oracle_ok is None or live_ok is None:
        return "ungraded"
    if live_ok:
        return "ok"
    if not oracle_ok:
        return "oracle_fail"
    return "generation_bug" if evidence_in_live else "retrieval_bug"


# --------------------------------------------------------------------------- extractive


def candidate_sentences(passages: Sequence[Passage]) -> list[str]:
    """The distinct sentences of the passages, in order, without markdown heading lines
    (a heading resembles the question more than any answer does, and answers nothing)."""
    seen: dict[str, None] = {}
    for p in passages:
        for s in split_sentences(p.text):
            if not s.lstrip().startswith("#"):
                seen.setdefault(s, None)
    return list(seen)


def pick_sentences(sentences: Sequence[str], scores: np.ndarray, max_chars: int,
                   max_sentences: int) -> str:
    """The best-scoring sentences, best first, while they fit in ``max_chars`` (the best one is
    always kept, cut at ``max_chars`` if it alone is longer). Ties go to the earlier sentence."""
    order = sorted(range(len(sentences)), key=lambda i: (-float(scores[i]), i))
    picked: list[str] = []
    used = 0
    for i in order:
        if len(picked) == max_sentences:
            break
        s = sentences[i]
        if not picked:
            picked.append(s[:max_chars])
            used = len(picked[0])
        elif used + 1 + len(s) <= max_chars:
            picked.append(s)
            used += 1 + len(s)
    return " ".join(picked)


class ExtractiveReader:
    """Answers with the context sentences closest to the question by the configured embedding
    model: no network, no randomness. A real baseline: how far copying the best sentence gets.
    """

    name = "extractive"

    def __init__(self, encode: Callable[..., np.ndarray], max_chars: int = 400,
                 max_sentences: int = 2) -> None:
        self.encode = encode  # Embedder.encode: cached, normalised vectors
        self.max_chars = max_chars
        self.max_sentences = max_sentences
        self.usage = ChatUsage()

    def answer_all(self, questions: Sequence[str], contexts: Sequence[Sequence[Passage]],
                   progress: bool = True) -> list[Answer]:
        per_item = [candidate_sentences(c) for c in contexts]
        unique = list(dict.fromkeys(s for sents in per_item for s in sents))
        vectors = self.encode(unique, progress=progress) if unique else np.zeros((0, 1))
        row = {s: i for i, s in enumerate(unique)}
        qvecs = self.encode(list(questions), query=True, progress=False)
        answers = []
        for q, sents in zip(qvecs, per_item, strict=True):
            if not sents:
                answers.append(Answer(""))
                continue
            scores = vectors[[row[s] for s in sents]] @ q
            answers.append(Answer(pick_sentences(sents, scores, self.max_chars,
                                                 self.max_sentences)))
        self.usage.calls += len(answers)
        return answers


def format_context(passages: Sequence[Passage]) -> str:
    return "\n\n".join(f"[{i}] {p.source}\n{p.text}" for i, p in enumerate(passages, start=1))


class ChatReader:
    """An LLM behind an OpenAI-compatible endpoint, prompted with ``template`` (which holds
    ``{context}`` and ``{question}``)."""

    name = "openai"

    def __init__(self, client: ChatClient, system: str, template: str, temperature: float,
                 max_tokens: int, cache: AnswerCache | None = None) -> None:
        self.client = client
        self.system = system
        self.template = template
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.usage = ChatUsage()  # what was asked of the endpoint (cached answers cost nothing)
        self.cache = cache
        self.cached_hits = 0

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        user = (self.template.replace("{context}", format_context(passages))
                .replace("{question}", question))
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        return [*msgs, {"role": "user", "content": user}]

    def answer_all(self, questions: Sequence[str], contexts: Sequence[Sequence[Passage]],
                   progress: bool = True) -> list[Answer]:
        batches = [self.messages(q, c) for q, c in zip(questions, contexts, strict=True)]
        if self.cache is None:
            answers = self.client.complete_all(batches, self.temperature, self.max_tokens,
                                               progress, "generate")
            for a in answers:
                self.usage.add(a)
            return answers
        cache = self.cache
        keys = [AnswerCache.key(self.client.model, b, self.temperature, self.max_tokens)
                for b in batches]
        out: list[Answer | None] = []
        for k in keys:
            hit = cache.get(k)
            out.append(None if hit is None else Answer(*hit))
        todo = [i for i, a in enumerate(out) if a is None]
        self.cached_hits += len(batches) - len(todo)

        def keep(j: int, a: Answer) -> None:  # stored as it arrives: a later failure loses none
            i = todo[j]
            out[i] = a
            self.usage.add(a)
            cache.put(keys[i], a.text, a.prompt_tokens, a.completion_tokens, a.usage_reported)

        if todo:
            self.client.complete_all([batches[i] for i in todo], self.temperature,
                                     self.max_tokens, progress, "generate", on_answer=keep)
        return [a for a in out if a is not None]  # complete_all raised unless all arrived


class Judge:
    """Grades answers of items without ``answer_must_mention``, through a pinned prompt at
    temperature 0; replies are cached by (model, prompt version, question, reference, answer)
    so a re-run pays for nothing it already asked."""

    def __init__(self, client: ChatClient, cache: JudgeCache | None = None) -> None:
        self.client = client
        self.cache = cache
        self.usage = ChatUsage()
        self.cached_hits = 0

    def grade_all(self, triples: Sequence[tuple[str, str, str]], progress: bool = True
                  ) -> tuple[list[bool | None], list[str]]:
        """(question, reference, answer) -> (verdict or None, raw reply) for each."""
        keys = [JudgeCache.key(self.client.model, JUDGE_PROMPT_VERSION, *t) for t in triples]
        replies: list[str | None] = [self.cache.get(k) if self.cache else None for k in keys]
        todo = [i for i, r in enumerate(replies) if r is None]
        self.cached_hits += len(triples) - len(todo)
        if todo:
            answers = self.client.complete_all([judge_messages(*triples[i]) for i in todo],
                                               0.0, 8, progress, "judge")
            for i, a in zip(todo, answers, strict=True):
                replies[i] = a.text
                self.usage.add(a)
                if self.cache is not None:
                    self.cache.put(keys[i], a.text)
        texts = [r or "" for r in replies]
        return [parse_verdict(t) for t in texts], texts


# --------------------------------------------------------------------------- the run


@dataclass
class GenOutcome:
    summary: dict[str, float]
    rows: dict[str, dict[str, Any]]  # qid -> per-question columns
    usage: dict[str, ChatUsage] = field(default_factory=dict)


def grade(items: Sequence[GenItem], answers: Sequence[Answer], judge: Judge | None,
          progress: bool) -> tuple[list[bool | None], list[str]]:
    """A verdict per answer (None = ungraded) and how it was reached."""
    verdicts: list[bool | None] = [None] * len(items)
    how = ["none"] * len(items)
    ask: list[int] = []
    for i, (item, answer) in enumerate(zip(items, answers, strict=True)):
        if item.mentions:
            verdicts[i], how[i] = mentions_all(answer.text, item.mentions), "mentions"
        elif judge is not None:
            ask.append(i)
    if ask and judge is not None:
        judged, replies = judge.grade_all(
            [(items[i].question, items[i].reference, answers[i].text) for i in ask], progress)
        for i, v, reply in zip(ask, judged, replies, strict=True):
            verdicts[i] = v
            how[i] = "judge" if v is not None else f"judge_unparsed:{reply.strip()[:40]}"
    return verdicts, how


def run_generation(items: Sequence[GenItem], reader: Reader, judge: Judge | None = None,
                   progress: bool = True) -> GenOutcome:
    """Answer each item with its oracle and its live context, grade both, diagnose."""
    questions = [it.question for it in items]
    oracle = reader.answer_all(questions, [it.oracle for it in items], progress)
    live = reader.answer_all(questions, [it.live for it in items], progress)
    ov, ohow = grade(items, oracle, judge, progress)
    lv, lhow = grade(items, live, judge, progress)

    rows: dict[str, dict[str, Any]] = {}
    counts = dict.fromkeys(DIAGNOSES, 0)
    both = [(o, x) for o, x in zip(ov, lv, strict=True) if o is not None and x is not None]
    for i, it in enumerate(items):
        d = diagnose(ov[i], lv[i], it.evidence_in_live)
        counts[d] += 1
        rows[it.qid] = {
            "oracle_answer": oracle[i].text, "live_answer": live[i].text,
            "oracle_correct": ov[i], "live_correct": lv[i],
            "grade_method": ohow[i] if ohow[i] == lhow[i] else f"{ohow[i]}/{lhow[i]}",
            "evidence_in_live": it.evidence_in_live, "diagnosis": d,
        }
        if ov[i] is not None and lv[i] is not None:
            # Per-question values of the averaged metrics, so `sweep compare` can pair them.
            rows[it.qid].update(answer_accuracy_oracle=float(ov[i]),
                                answer_accuracy_live=float(lv[i]),
                                retrieval_tax=float(ov[i]) - float(lv[i]))
    summary: dict[str, float] = {
        "n_generated": float(len(items)),
        "n_graded": float(len(both)),
        "ungraded_count": float(len(items) - len(both)),
        "n_graded_by_judge": float(sum(1 for it, h in zip(items, ohow, strict=True)
                                       if not it.mentions and h == "judge")),
    }
    if both:
        acc_o = sum(o for o, _ in both) / len(both)
        acc_l = sum(x for _, x in both) / len(both)
        summary.update(answer_accuracy_oracle=acc_o, answer_accuracy_live=acc_l,
                       retrieval_tax=acc_o - acc_l)
    else:
        log.warning("no answer could be graded: give items answer_must_mention or configure "
                    "a judge (judge=openai)")
    for d, n in counts.items():
        summary[f"n_{d}"] = float(n)
    usage = {"gen": reader.usage}
    if getattr(reader, "cache", None) is not None:
        summary["gen_cache_hits"] = float(getattr(reader, "cached_hits", 0))
    if judge is not None:
        usage["judge"] = judge.usage
        summary["judge_cache_hits"] = float(judge.cached_hits)
    for name, u in usage.items():
        summary[f"{name}_calls"] = float(u.calls)
        if u.reported:
            summary[f"{name}_prompt_tokens"] = float(u.prompt_tokens)
            summary[f"{name}_completion_tokens"] = float(u.completion_tokens)
    return GenOutcome(summary, rows, usage)


# The generation.method and judge.method axes: name -> the reader / the judge class. `none`
# is each one's off value (its section stays out of config_hash). A chat endpoint's answers
# come from outside the machine and are billed.
_CHAT = Traits(remote=True, costs_money=True, deterministic=False)
GENERATION: Registry[type] = Registry("generation.method", [
    Entry("none", doc="retrieval only"),
    Entry(ExtractiveReader.name, ExtractiveReader, traits=Traits(needs_embedder=True),
          doc="the context sentences closest to the question"),
    Entry(ChatReader.name, ChatReader, traits=_CHAT,
          doc="an OpenAI-compatible chat-completions endpoint"),
], off="none")
JUDGE: Registry[type] = Registry("judge.method", [
    Entry("none", doc="no judge"),
    Entry(ChatReader.name, Judge, traits=_CHAT, doc="a chat model grades each answer"),
], off="none")
