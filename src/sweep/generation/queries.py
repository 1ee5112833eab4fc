"""The model calls of a query transform (``retrieval.query_transform=hyde|multi_query``): one
chat completion per question, each kept in the transform cache the moment it arrives.

What the reply becomes (the text HyDE embeds, the rewrites multi-query searches) is
`sweep.retrieval.transform`'s pure part. The cache is the answer cache's table
(`AnswerCache`) in its own file, ``cache.dir/transforms.sqlite``, keyed on the served model's
name (generation=local's name carries the GGUF file's sha256 prefix), the system and user
prompts, the temperature and max_tokens: a re-run, and every configuration that asks the same
question of the same model, pays once; a run stopped by a dead server keeps what it finished.
Calls, tokens and cost count what was asked of the endpoint: a cached reply costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sweep.endpoints.chat import Answer, ChatClient, ChatUsage
from sweep.endpoints.cost import chat_usage_metrics
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.cache import AnswerCache
from sweep.retrieval.transform import HydeSpec, MultiQuerySpec, hyde_text, parse_rewrites


@dataclass(frozen=True)
class TransformJob:
    """A query transform's method, endpoint and settings (``retrieval.transform.*``,
    ``retrieval.hyde.*``, ``retrieval.multi_query.*``)."""

    method: str  # hyde | multi_query
    endpoint: EndpointSpec
    model: str
    hyde: HydeSpec = field(default_factory=HydeSpec)
    multi_query: MultiQuerySpec = field(default_factory=MultiQuerySpec)
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0


@dataclass
class Transformed:
    """The queries of each question (the question first; HyDE: one text, the one embedded) and
    what writing them cost."""

    groups: list[list[str]]
    metrics: dict[str, float] = field(default_factory=dict)


def transform_messages(job: TransformJob, question: str) -> list[dict[str, str]]:
    # str.replace, not str.format: braces in a question stay text.
    if job.method == "hyde":
        system, user = job.hyde.system_prompt, job.hyde.prompt.replace("{question}", question)
    else:
        system = job.multi_query.system_prompt
        user = (job.multi_query.prompt.replace("{n}", str(job.multi_query.n))
                .replace("{question}", question))
    return [*([{"role": "system", "content": system}] if system else []),
            {"role": "user", "content": user}]


def get_transform_cache(folder: str | Path) -> AnswerCache:
    return AnswerCache((Path(folder) / "transforms.sqlite").resolve())


def open_client(job: TransformJob, cached: bool) -> ChatClient:
    """The endpoint's client, checked: something listens, and (with a cache) it serves the
    model under the name the cache is keyed on."""
    client = ChatClient(job.endpoint, job.model)
    client.preflight()
    if cached:
        client.require_served("the transform cache keys replies")
    return client


def complete_cached(client: ChatClient, cache: AnswerCache | None,
                    batches: Sequence[list[dict[str, str]]], temperature: float,
                    max_tokens: int, progress: bool, desc: str
                    ) -> tuple[list[Answer], ChatUsage, int]:
    """Each message list's answer, from the cache or the endpoint (stored as it arrives); the
    usage of what was asked, and how many came from the cache."""
    usage = ChatUsage()
    if cache is None:
        answers = client.complete_all(batches, temperature, max_tokens, progress, desc)
        for a in answers:
            usage.add(a)
        return answers, usage, 0
    keys = [AnswerCache.key(client.model, b, temperature, max_tokens) for b in batches]
    out: list[Answer | None] = []
    for k in keys:
        hit = cache.get(k)
        out.append(None if hit is None else Answer(*hit))
    todo = [i for i, a in enumerate(out) if a is None]

    def keep(j: int, a: Answer) -> None:
        i = todo[j]
        out[i] = a
        usage.add(a)
        cache.put(keys[i], a.text, a.prompt_tokens, a.completion_tokens, a.usage_reported)

    if todo:
        client.complete_all([batches[i] for i in todo], temperature, max_tokens, progress, desc,
                            on_answer=keep)
    return [a for a in out if a is not None], usage, len(batches) - len(todo)


def transform_queries(job: TransformJob, questions: Sequence[str], client: ChatClient,
                      cache: AnswerCache | None, *, progress: bool = True) -> Transformed:
    """Each question's queries: HyDE's text to embed (`hyde_text`), or the question and its
    rewrites (`parse_rewrites`). A reply that gives nothing usable leaves the question alone,
    and is counted (``transform_empty``), never dropped unsaid."""
    unique = list(dict.fromkeys(questions))  # a question asked twice is one call
    spec = job.hyde if job.method == "hyde" else job.multi_query
    answers, usage, hits = complete_cached(
        client, cache, [transform_messages(job, q) for q in unique], spec.temperature,
        spec.max_tokens, progress, job.method)
    by_question: dict[str, list[str]] = {}
    empty = 0
    for q, a in zip(unique, answers, strict=True):
        if job.method == "hyde":
            text = hyde_text(q, a.text, job.hyde.embed)
            empty += text == q
            by_question[q] = [text]
        else:
            rewrites = parse_rewrites(a.text, q, job.multi_query.n)
            empty += not rewrites
            by_question[q] = [q, *rewrites]
    groups = [by_question[q] for q in questions]
    metrics = {"transform_calls": float(usage.calls), "transform_cache_hits": float(hits),
               "transform_empty": float(empty)}
    if job.method == "multi_query":
        metrics["transform_rewrites_mean"] = (sum(len(by_question[q]) - 1 for q in unique)
                                              / max(1, len(unique)))
    metrics.update(chat_usage_metrics("transform", usage, job.price_input_per_mtok,
                                      job.price_output_per_mtok))
    return Transformed(groups, metrics)
