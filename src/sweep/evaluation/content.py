"""Scores by the kind of content the evidence sits in (issue 47): prose, list, table, code or
heading.

Every document reaches the chunker as markdown: markdown files as they are, and the HTML, PDF
and Word parsers write headings as ``#`` lines, lists as ``-``/``1.`` items, tables as ``|``
rows and code as fenced blocks (`sweep.data.parsers`). So one reading of the markdown blocks
classifies the evidence of every format (a DocBook admonition, laid out as a table, is read
as the prose it is): `line_kinds` gives each line of a document its kind,
`span_kind` the kind holding most of a span's characters, `question_kind` that of all of an
item's evidence spans together. Each row of per_question.csv gets its item's
``content_kind``; `score_by_content` averages the headline metrics per kind as
`sweep.evaluation.sources` does per source (the mean over the kind's rows that hold the
metric), and `content_metrics` names them ``by_content/<kind>/<metric>`` (MLflow groups on
"/").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from sweep.evaluation import metrics as m

KINDS = ("prose", "list", "table", "code", "heading")
PREFIX = "by_content"
UNKNOWN = "unknown"  # an item without evidence spans (document-level)

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}#{1,6}(\s|$)")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_ITEM = re.compile(r"^\s*([-*+]|\d{1,9}[.)])\s+\S")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_INDENTED = re.compile(r"^( {4}|\t)")

Line = tuple[int, int, str]  # start, end (without the newline), kind; blank lines: ""


def _lines(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for part in text.split("\n"):
        out.append((start, start + len(part)))
        start += len(part) + 1
    return out


def line_kinds(text: str) -> list[Line]:
    """Each line of a markdown text with the kind of block it belongs to."""
    spans = _lines(text)
    lines = [text[a:b] for a, b in spans]
    kinds = [""] * len(lines)
    fence: str | None = None
    for i, line in enumerate(lines):
        opener = _FENCE.match(line)
        if fence is not None:
            kinds[i] = "code"
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = None
            continue
        if opener:
            fence, kinds[i] = opener.group(1), "code"
            continue
        if not line.strip():
            continue
        prev = kinds[i - 1] if i else ""
        blank_before = i == 0 or not lines[i - 1].strip()
        if _ATX.match(line):
            kinds[i] = "heading"
        elif _SETEXT.match(line) and prev == "prose" and not blank_before:
            kinds[i] = kinds[i - 1] = "heading"  # the underlined line is the heading
        elif line.lstrip().startswith("|") or (_TABLE_RULE.match(line) and "|" in line):
            kinds[i] = "table"
            if not blank_before and prev == "prose" and "|" in lines[i - 1]:
                kinds[i - 1] = "table"  # a GFM header row without its outer pipes
        elif prev == "table" and "|" in line:
            kinds[i] = "table"
        elif _ITEM.match(line):
            kinds[i] = "list"
        elif prev == "list" and (not blank_before or _INDENTED.match(line)):
            kinds[i] = "list"  # an item's continuation
        elif _INDENTED.match(line) and (blank_before or prev == "code"):
            kinds[i] = "code"
        else:
            kinds[i] = "prose"
    _callouts_as_prose(lines, kinds)
    return [(a, b, k) for (a, b), k in zip(spans, kinds, strict=True)]


# DocBook lays out its admonitions (the Debian Reference's notes, tips, cautions) as one-cell
# HTML tables under a title row; both HTML parsers write them as markdown tables. Their text
# is prose: a table whose title row, in its first three lines, is only one of these words.
_CALLOUT_TITLES = {"note", "tip", "caution", "warning", "important", "danger", "hint",
                   "attention", "error"}
_IMAGE = re.compile(r"!\[.*?\]\([^)]*\)")


def _is_callout(rows: Sequence[str]) -> bool:
    for row in rows[:3]:
        cells = [c.strip() for c in _IMAGE.sub("", row).strip().strip("|").split("|")]
        words = [c for c in cells if c and not set(c) <= set("-: ")]
        if len(words) == 1 and words[0].lower() in _CALLOUT_TITLES:
            return True
    return False


def _callouts_as_prose(lines: Sequence[str], kinds: list[str]) -> None:
    i = 0
    while i < len(kinds):
        if kinds[i] != "table":
            i += 1
            continue
        j = i
        while j < len(kinds) and kinds[j] == "table":
            j += 1
        if _is_callout(lines[i:j]):
            kinds[i:j] = ["prose"] * (j - i)
        i = j


def kind_chars(lines: Sequence[Line], start: int, end: int) -> dict[str, int]:
    """Characters of ``[start, end)`` per kind (blank lines count for none)."""
    out: dict[str, int] = {}
    for a, b, kind in lines:
        if b <= start:
            continue
        if a >= end:
            break
        if kind:
            n = min(b, end) - max(a, start)
            if n > 0:
                out[kind] = out.get(kind, 0) + n
    return out


def _majority(chars: Mapping[str, int]) -> str:
    if not chars:
        return "prose"  # only blank characters: nothing marks it as anything else
    # ties go to the kind listed first (prose before the structured kinds)
    return max(KINDS, key=lambda k: (chars.get(k, 0), -KINDS.index(k)))


def span_kind(lines: Sequence[Line], start: int, end: int) -> str:
    """The kind holding most of the span's characters."""
    return _majority(kind_chars(lines, start, end))


def question_kind(spans: Sequence[m.Span], lines_of: Mapping[str, Sequence[Line]]) -> str:
    """The kind holding most characters of all of a question's evidence spans."""
    total: dict[str, int] = {}
    for doc_id, a, b in spans:
        if doc_id in lines_of:
            for kind, n in kind_chars(lines_of[doc_id], a, b).items():
                total[kind] = total.get(kind, 0) + n
    return _majority(total) if spans else UNKNOWN


def add_content_column(rows: Sequence[dict[str, Any]], spans: Sequence[Sequence[m.Span]],
                       texts: Mapping[str, str]) -> None:
    """``content_kind`` in each row (in place), from its item's evidence spans."""
    needed = {d for s in spans for d, _, _ in s}
    lines_of = {d: line_kinds(texts[d]) for d in needed if d in texts}
    for row, item_spans in zip(rows, spans, strict=True):
        row["content_kind"] = question_kind(item_spans, lines_of)


def _value(row: Mapping[str, Any], name: str) -> float | None:
    v = row.get(name)
    if v is None or isinstance(v, bool) or not isinstance(v, int | float) or v != v:
        return None
    return float(v)


def score_by_content(rows: Sequence[Mapping[str, Any]], names: Sequence[str]
                     ) -> dict[str, dict[str, Any]]:
    """``{kind: {n, n_scored, metrics: {name: mean}}}`` for each kind some scored row has, in
    `KINDS` order; a metric's mean is over the kind's rows that hold it."""
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        mine = [r for r in rows if r.get("content_kind") == kind]
        scored = [r for r in mine if r.get("status") == "scored"]
        if not scored:
            continue
        means = {}
        for name in names:
            values = [v for r in mine if (v := _value(r, name)) is not None]
            if values:
                means[name] = m.mean(values)
        out[kind] = {"n": len(mine), "n_scored": len(scored), "metrics": means}
    return out


def content_metrics(split: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Flat names: ``by_content/table/recall_at_5``, ``by_content/table/n`` (scored rows)."""
    out: dict[str, float] = {}
    for kind, s in split.items():
        out[f"{PREFIX}/{kind}/n"] = float(s["n_scored"])
        for name, value in s["metrics"].items():
            out[f"{PREFIX}/{kind}/{name}"] = value
    return out


def summary_line(split: Mapping[str, Mapping[str, Any]], metric: str) -> str | None:
    """``prose n=20 recall_at_5=0.800 · table n=6 recall_at_5=0.500`` (scored questions)."""
    if not split:
        return None
    return " · ".join(
        f"{kind} n={s['n_scored']} {metric}="
        + (f"{s['metrics'][metric]:.3f}" if metric in s["metrics"] else "-")
        for kind, s in split.items())


def parse_metric(name: str) -> tuple[str, str] | None:
    """``by_content/table/recall_at_5`` -> ``("table", "recall_at_5")``; None for others."""
    parts = name.split("/", 2)
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    return parts[1], parts[2]
