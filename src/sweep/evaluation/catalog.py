"""The metrics a run reports, each one self-describing entry on one registry (as the axes are).

An entry (`Metric`) carries its name pattern (``recall_at_{k}``: one metric for each k of
``eval.k`` and ``eval.prompt_k``), its direction, its docstring and, for the per-question
metrics, its computation. Everything that needs to know the metrics reads `METRICS`:
`sweep.evaluation.evaluate` (what each question is scored on), the check of ``eval.headline``
(a headline is a per-question metric, as the verdicts need per-question scores), the sort of
the tables and the verdicts (`lower_is_better`), and the generated reference
(reference/metrics.md). So adding a metric is one entry in this file (docs/development.md,
"Add a metric in one file"); a test adds a toy one for the duration of a block (`added`).

Two kinds of entry:

* **per-question** (``level`` ``chunk`` or ``doc``, with ``compute``): `evaluate` computes it
  for each question it applies to (``chunk``: a question some chunk of the configuration
  answers, from a `Question`; ``doc``: a question that names a document, from a `Documents`)
  and reports its mean over those questions;
* **run** (no ``compute``): a figure a stage logs for the whole run (latency, index size,
  cost); the entry states its direction, and a pattern's ``{placeholder}`` stands for any text.

The direction of a name is read off the start of the name: ``recall_at_5_needs_2`` (the
per-need split of ``recall_at_5``) has the direction of ``recall_at_5``. A name no entry
starts ranks highest first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sweep.evaluation import metrics as m

Span = m.Span
LEVELS = ("chunk", "doc", "run")


@dataclass(frozen=True)
class Question:
    """What a chunk-level metric of one question reads: a question some chunk answers."""

    ranked_ids: Sequence[str]  # the ranking, best first
    relevant: set[str]  # the ids relevant to the question in this chunking
    tokens: Sequence[int]  # tokens of each ranked chunk
    ranks: m.TopKRanks  # recall, hit and nDCG for every k, from one pass
    spans: m.TopKSpans  # the span metrics for every k, from one pass
    passages: Sequence[set[str]]  # per evidence passage, the ids relevant to it
    found: m.TopKPassages  # the passages found for every k, from one pass
    needs: str  # all | any: whether the answer needs every passage
    evidence: Sequence[Span]
    touching: Sequence[Span]  # every chunk that touches the evidence
    closed: bool  # touching spans tested as closed intervals (Chroma's test)
    k_min: int  # the "Min" k: as many chunks as touch the evidence, capped
    token_budget: int


@dataclass(frozen=True)
class Documents:
    """What a document-level metric of one question reads: a question that names documents."""

    ranked: Sequence[str]  # documents, each at the rank of its best chunk
    relevant: set[str]
    ranks: m.TopKRanks


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Metric:
    """One metric, or one family of them (a pattern with ``{k}``: one per k).

    ``compute``: ``(view) -> value`` or, with ``{k}`` in the pattern, ``(view, k) -> value``;
    the view is a `Question` (``level="chunk"``) or a `Documents` (``level="doc"``); a run
    metric has none. ``doc``: what it measures, in a sentence or two (the reference page)."""

    pattern: str
    doc: str
    compute: Callable[..., Any] | None = None
    lower_is_better: bool = False
    level: str = "chunk"
    _start: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"metric {self.pattern}: level {self.level!r} is not one of "
                             f"{', '.join(LEVELS)}")
        if (self.compute is None) != (self.level == "run"):
            raise ValueError(f"metric {self.pattern}: a per-question metric has a computation, "
                             "a run metric none")
        if self.level != "run" and set(_PLACEHOLDER.findall(self.pattern)) - {"k"}:
            raise ValueError(f"metric {self.pattern}: a per-question metric's only "
                             "placeholder is {k}")
        parts = _PLACEHOLDER.split(self.pattern)  # text, name, text, name, ...
        regex = "".join(re.escape(p) if i % 2 == 0 else (r"\d+" if p == "k" else ".*")
                        for i, p in enumerate(parts))
        object.__setattr__(self, "_start", re.compile(regex))

    @property
    def per_k(self) -> bool:
        """Whether it is one metric per k (``{k}`` in its pattern)."""
        return "{k}" in self.pattern

    def names(self, ks: Sequence[int]) -> list[str]:
        """Its metric names for the cut-offs ``ks``."""
        return [self.pattern.format(k=k) for k in ks] if self.per_k else [self.pattern]

    def starts(self, name: str) -> bool:
        """Whether ``name`` is this metric or one derived from it (a prefix of the name)."""
        return self._start.match(name) is not None


class MetricRegistry:
    """The metrics, in registration order (the order `evaluate` computes them in)."""

    def __init__(self, entries: Sequence[Metric] = ()) -> None:
        self._entries: dict[str, Metric] = {}
        for entry in entries:
            self.register(entry)

    def register(self, entry: Metric) -> Metric:
        """Add ``entry``; a pattern taken already is a programming error, said at import."""
        if entry.pattern in self._entries:
            raise ValueError(f"metric {entry.pattern} is registered twice")
        self._entries[entry.pattern] = entry
        return entry

    def unregister(self, pattern: str) -> Metric:
        return self._entries.pop(pattern)

    @contextmanager
    def added(self, *entries: Metric) -> Iterator[MetricRegistry]:
        """The registry with ``entries`` added for the duration of the block (a test's toy)."""
        for entry in entries:
            self.register(entry)
        try:
            yield self
        finally:
            for entry in entries:
                self._entries.pop(entry.pattern, None)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, pattern: str) -> Metric:
        return self._entries[pattern]

    def at(self, level: str) -> list[Metric]:
        """The entries of one level, in order."""
        return [e for e in self if e.level == level]

    def question_names(self, ks: Sequence[int], prompt_k: int) -> list[str]:
        """Every per-question metric a run with these cut-offs reports: what ``eval.headline``
        may name."""
        cuts = sorted(set(ks) | {prompt_k})
        return [name for e in self if e.level != "run" for name in e.names(cuts)]

    def lower_is_better(self, name: str) -> bool:
        """Whether less of ``name`` is better (some lower-is-better entry starts it)."""
        return any(e.lower_is_better and e.starts(name) for e in self)


class Plan:
    """The order and the names `compute` gives the values of ``entries`` for the cut-offs
    ``ks``, worked out once for every question of a run (formatting the names and walking the
    entries per question was much of the cost of scoring a warm sweep). A run of consecutive
    per-k entries is computed k by k (``recall_at_1, hit_at_1, ..., recall_at_3, ...``)."""

    def __init__(self, entries: Sequence[Metric], ks: Sequence[int]) -> None:
        self.names: list[str] = []
        self._steps: list[tuple[Callable[..., Any], int | None]] = []
        i = 0
        while i < len(entries):
            j = i
            while j < len(entries) and entries[j].per_k:
                j += 1
            if j == i:  # one metric without k
                self._add(entries[i].pattern, entries[i], None)
                i += 1
                continue
            for k in ks:
                for e in entries[i:j]:
                    self._add(e.pattern.format(k=k), e, k)
            i = j

    def _add(self, name: str, entry: Metric, k: int | None) -> None:
        self.names.append(name)
        self._steps.append((entry.compute, k))  # type: ignore[arg-type]

    def values(self, view: Question | Documents) -> list[Any]:
        """The values for one question, in the order of ``names``."""
        # two plain calls: a call with *args costs twice as much, 800,000 times a sweep
        return [f(view) if k is None else f(view, k) for f, k in self._steps]


def compute(entries: Sequence[Metric], view: Question | Documents, ks: Sequence[int]
            ) -> dict[str, Any]:
    """The values of ``entries`` for one question, by name, in `Plan`'s order."""
    plan = Plan(entries, ks)
    return dict(zip(plan.names, plan.values(view), strict=True))


def _passages_found(q: Question, k: int) -> float:
    return float(q.found.found(k))


METRICS = MetricRegistry([
    # --- per question: a question some chunk of the configuration answers ------------------
    Metric("mrr", "Mean reciprocal rank of the first relevant chunk (`reciprocal_rank`): 0 "
           "when none is in the retrieved list.",
           lambda q: m.reciprocal_rank(q.ranked_ids, q.relevant)),
    Metric("recall_at_{k}", "Share of the question's relevant chunks in the top k "
           "(`recall_at_k`).", lambda q, k: q.ranks.recall(k)),
    Metric("hit_at_{k}", "1 when any relevant chunk is in the top k (`hit_at_k`).",
           lambda q, k: q.ranks.hit(k)),
    Metric("ndcg_at_{k}", "Normalised DCG of the top k with binary gains (`ndcg_at_k`).",
           lambda q, k: q.ranks.ndcg(k)),
    Metric("evidence_recall_at_{k}", "Share of the evidence characters inside the top-k "
           "chunks (`evidence_recall_at_k`): the same yardstick for every chunk size.",
           lambda q, k: q.spans.evidence_recall(k)),
    Metric("span_precision_at_{k}", "Evidence characters in the top-k chunks over the "
           "characters they hold (`span_precision_at_k`).",
           lambda q, k: q.spans.span_precision(k)),
    Metric("span_iou_at_{k}", "Evidence characters covered over the union of the top-k "
           "chunks and the evidence (`span_iou_at_k`).", lambda q, k: q.spans.span_iou(k)),
    Metric("context_tokens_at_{k}", "Tokens the reader gets with the top-k chunks "
           "(`context_tokens_at_k`): the prompt's cost.",
           lambda q, k: m.context_tokens_at_k(q.tokens, k), lower_is_better=True),
    Metric("evidence_recall_at_budget", "`evidence_recall_at_k` with as many top chunks as fit "
           "in `eval.token_budget` tokens (`evidence_recall_at_budget`).",
           lambda q: q.spans.evidence_recall_at_budget(q.tokens, q.token_budget)),
    Metric("full_recall_at_{k}", "1 when the top k holds the whole answer: every passage it "
           "needs (`full_recall_at_k`).",
           lambda q, k: q.found.full_recall(k)),
    Metric("passages_found_at_{k}", "How many of the passages the answer needs are in the "
           "top k (`passages_found_at_k`).", _passages_found),
    Metric("precision_omega", "Precision when every chunk touching the evidence is retrieved "
           "(`precision_omega`): the best a chunking allows.",
           lambda q: m.precision_omega(q.touching, q.evidence, q.closed)),
    Metric("evidence_recall_at_min", "`evidence_recall_at_k` at the \"Min\" k: as many chunks "
           "as touch the evidence, at most 20.", lambda q: q.spans.evidence_recall(q.k_min)),
    Metric("span_precision_at_min", "`span_precision_at_k` at the \"Min\" k.",
           lambda q: q.spans.span_precision(q.k_min)),
    Metric("span_iou_at_min", "`span_iou_at_k` at the \"Min\" k.",
           lambda q: q.spans.span_iou(q.k_min)),
    # --- per question: a question that names a document -------------------------------------
    Metric("doc_mrr", "Mean reciprocal rank of the first relevant document, each document at "
           "the rank of its best chunk (`collapse_to_docs`).",
           lambda d: m.reciprocal_rank(d.ranked, d.relevant), level="doc"),
    Metric("doc_recall_at_{k}", "Share of the question's documents among the top k documents.",
           lambda d, k: d.ranks.recall(k), level="doc"),
    # --- the run's own figures, logged by the stages (direction only) ------------------------
    Metric("latency_{stage}", "Query latency per stage and end to end, in ms "
           "(`latency_end_to_end_p95_ms`: the table's latency).", lower_is_better=True,
           level="run"),
    Metric("time_{stage}", "Wall time of a stage, in seconds.", lower_is_better=True,
           level="run"),
    Metric("index_bytes_{index}", "Size of an index, in bytes.", lower_is_better=True,
           level="run"),
    Metric("index_build_{index}", "Time to build an index, in seconds.", lower_is_better=True,
           level="run"),
    Metric("ann_tax_{metric}", "What the approximate index loses on a metric against exact "
           "search.", lower_is_better=True, level="run"),
    Metric("ann_lost_{what}", "Answers exact search found and the approximate index lost.",
           lower_is_better=True, level="run"),
    Metric("quant_tax_{metric}", "What a quantised backend loses on a metric against torch "
           "fp32.", lower_is_better=True, level="run"),
    Metric("assembled_evidence_recall", "Share of the evidence characters inside the context "
           "the prompt gets (`assembly.*`: budget, dedup; the mean over scored questions).",
           level="run"),
    Metric("assembled_tokens", "Tokens of the context the prompt gets (`assembly.*`).",
           lower_is_better=True, level="run"),
    Metric("assembled_chunks", "Chunks in the context the prompt gets (`assembly.*`).",
           lower_is_better=True, level="run"),
    Metric("n_orphans", "Questions no chunk of the configuration answers (never scored as 0).",
           lower_is_better=True, level="run"),
    Metric("truncated_fraction", "Share of chunks the embedding model truncated.",
           lower_is_better=True, level="run"),
    Metric("n_oversize_chunks", "Chunks longer than `chunk.size` (an atomic block).",
           lower_is_better=True, level="run"),
    Metric("retrieval_tax", "Answer accuracy lost to retrieval: oracle minus live.",
           lower_is_better=True, level="run"),
    Metric("ungraded_count", "Answers neither side could grade.", lower_is_better=True,
           level="run"),
    Metric("n_ungraded", "Answers neither side could grade.", lower_is_better=True,
           level="run"),
    Metric("n_retrieval_bug", "Answers wrong because retrieval missed.", lower_is_better=True,
           level="run"),
    Metric("n_generation_bug", "Answers wrong although retrieval found the evidence.",
           lower_is_better=True, level="run"),
    Metric("n_oracle_fail", "Answers wrong even with the evidence given.",
           lower_is_better=True, level="run"),
    Metric("cost_estimate_usd", "Estimated dollars of the generation step.",
           lower_is_better=True, level="run"),
    Metric("gen_{figure}", "Figures of the generation step (tokens, time, cost).",
           lower_is_better=True, level="run"),
    Metric("judge_{figure}", "Figures of the judge (tokens, time, cost).",
           lower_is_better=True, level="run"),
    Metric("n_requests", "Requests sent to served models.", lower_is_better=True, level="run"),
    Metric("served_cost_usd", "Dollars billed by served models.", lower_is_better=True,
           level="run"),
    Metric("embedding_{figure}", "Figures of a served embedding model (tokens, texts, cost).",
           lower_is_better=True, level="run"),
    Metric("rerank_{figure}", "Figures of a served reranker (tokens, cost).",
           lower_is_better=True, level="run"),
])


def lower_is_better(name: str) -> bool:
    """Whether less of the metric ``name`` is better (`METRICS`)."""
    return METRICS.lower_is_better(name)


def is_question_metric(name: str) -> bool:
    """Whether ``name`` (a column of per_question.csv) is a per-question metric's value."""
    return any(e.level != "run" and e._start.fullmatch(name) is not None for e in METRICS)
