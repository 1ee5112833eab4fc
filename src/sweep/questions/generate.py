"""Synthetic candidates: a chat model asked for user-style questions about sampled passages.

They enter the queue marked ``source: synthetic`` with the passage they came from, never the
golden file: a human labels (or rejects) each on the label page. Replies are cached by (model,
prompt, passage, count, temperature): a re-run asks nothing and pays nothing.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sweep.chunking.chunkers import Chunk
from sweep.common.errors import SweepError
from sweep.data.corpus import Document
from sweep.endpoints.chat import ChatClient, ChatUsage
from sweep.endpoints.cost import chat_cost_usd
from sweep.generation.cache import JudgeCache
from sweep.questions.prompts import PROMPT
from sweep.questions.rows import Row

MIN_PASSAGE_WORDS = 20  # a heading or a table row is no passage to ask about


@dataclass(frozen=True)
class GenerateSpec:
    passages: int = 20
    per_passage: int = 2
    seed: int = 0
    prompt: str = PROMPT
    system: str = ""
    temperature: float = 0.7
    max_tokens: int = 200
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0


def sample_passages(chunks: Sequence[Chunk], n: int, seed: int) -> list[Chunk]:
    """``n`` chunks of at least `MIN_PASSAGE_WORDS` words, drawn with ``seed`` (the same
    draw for the same corpus, chunking and seed), in corpus order."""
    pool = [i for i, c in enumerate(chunks) if len(c.text.split()) >= MIN_PASSAGE_WORDS]
    chosen = sorted(random.Random(seed).sample(pool, min(n, len(pool))))
    return [chunks[i] for i in chosen]


_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)]|q\d*[:.)])\s*", re.IGNORECASE)


def parse_questions(reply: str, n: int) -> list[str]:
    """The questions of a reply: one a line, bullets and numbering removed, at most ``n``."""
    out: list[str] = []
    for line in reply.splitlines():
        text = " ".join(_BULLET.sub("", line).split()).strip("\"'")
        if len(text.split()) >= 2 and text not in out:
            out.append(text)
        if len(out) == n:
            break
    return out


def messages_for(spec: GenerateSpec, doc: Document, chunk: Chunk) -> list[dict[str, str]]:
    try:
        prompt = spec.prompt.format(passage=chunk.text, title=doc.title or doc.doc_id,
                                    n=spec.per_passage)
    except (KeyError, IndexError, ValueError) as exc:
        raise SweepError(f"questions.generate_prompt: {exc!r} is not one of the fields "
                         "{passage}, {title}, {n} (double other braces: {{ }})") from None
    msgs = [{"role": "system", "content": spec.system}] if spec.system else []
    return [*msgs, {"role": "user", "content": prompt}]


def _key(model: str, messages: list[dict[str, str]], spec: GenerateSpec) -> bytes:
    body = "\x1f".join(m["role"] + "\x1e" + m["content"] for m in messages)
    return JudgeCache.key("questions", model, hashlib.sha256(body.encode()).hexdigest(),
                          repr(spec.temperature), str(spec.max_tokens))


def generate_rows(chunks: Sequence[Chunk], docs: Sequence[Document], client: ChatClient,
                  spec: GenerateSpec, cache: JudgeCache | None, *, progress: bool = True
                  ) -> tuple[list[Row], dict[str, Any]]:
    """Synthetic rows for ``chunks`` and what it cost (calls, cache hits, tokens, dollars).
    Replies are cached only once every call has succeeded."""
    by_id = {d.doc_id: d for d in docs}
    plans = []
    for c in chunks:
        msgs = messages_for(spec, by_id[c.doc_id], c)
        key = _key(client.model, msgs, spec)
        plans.append((c, msgs, key, cache.get(key) if cache is not None else None))
    todo = [p for p in plans if p[3] is None]
    usage = ChatUsage()
    fresh: dict[bytes, str] = {}
    if todo:
        answers = client.complete_all([p[1] for p in todo], spec.temperature, spec.max_tokens,
                                      progress, "questions")
        for p, answer in zip(todo, answers, strict=True):
            fresh[p[2]] = answer.text
            usage.add(answer)
        if cache is not None:
            for key, reply in fresh.items():
                cache.put(key, reply)
    rows: list[Row] = []
    empty = 0
    for c, _msgs, key, cached in plans:
        reply = cached if cached is not None else fresh[key]
        questions = parse_questions(reply, spec.per_passage)
        empty += not questions
        passage = {"doc_id": c.doc_id, "start": c.start, "end": c.end, "text": c.text}
        rows.extend(Row(question=q, source="synthetic",
                        source_ref=f"{c.doc_id}:{c.start}-{c.end}", passage=passage)
                    for q in questions)
    cost = chat_cost_usd(usage, spec.price_input_per_mtok, spec.price_output_per_mtok)
    info: dict[str, Any] = {"model": client.model, "passages": len(chunks),
                            "calls": usage.calls, "cache_hits": len(plans) - len(todo),
                            "questions": len(rows), "replies_without_questions": empty,
                            "prompt_tokens": usage.prompt_tokens if usage.reported else None,
                            "completion_tokens": usage.completion_tokens if usage.reported
                            else None, "cost_usd": cost}
    return rows, info
