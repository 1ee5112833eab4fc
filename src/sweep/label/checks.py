"""What the labelling page warns about while an item is being put together.

* a quote that occurs more than once in the corpus: the resolver takes the first occurrence,
  and a sweep would count a different passage as the evidence;
* a number in the evidence that a near-duplicate passage elsewhere contradicts (the same
  check as `sweep validate`, `validate.NumberIndex`);
* a question that shares most of its words with its evidence: the synthetic-question smell
  (a real user's wording would not), which makes BM25 look better than it will be;
* an ``answer_must_mention`` string that occurs in none of the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sweep.data.corpus import Document
from sweep.evaluation.validate import NUMBER, NumberIndex, absent_mentions
from sweep.retrieval.bm25 import ENGLISH_STOPWORDS

# Share of the question's content words found in the evidence from which it is flagged.
OVERLAP_WARN = 0.6
OVERLAP_MIN_WORDS = 3
_WORD = re.compile(r"[^\W_]+")
# Error codes and model numbers (ERR_4021, E-17, KT-200): letters and digits in one token.
_CODE = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+"
                   r"(?![\w-])")


@dataclass(frozen=True)
class Span:
    doc: Document
    start: int
    end: int

    @property
    def quote(self) -> str:
        return self.doc.text[self.start:self.end]


@dataclass(frozen=True)
class Warning_:
    kind: str  # duplicate_quote | conflict | question_overlap | mention
    message: str
    evidence: int | None = None  # index into the evidence list, when it is about one


def trim(doc: Document, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` clamped to the document and stripped of surrounding whitespace."""
    start, end = max(0, min(start, len(doc.text))), max(0, min(end, len(doc.text)))
    if end < start:
        start, end = end, start
    piece = doc.text[start:end]
    lead = len(piece) - len(piece.lstrip())
    return start + lead, start + len(piece.rstrip())


def occurrences(docs: Sequence[Document], quote: str, limit: int = 20
                ) -> list[tuple[Document, int]]:
    """Where ``quote`` occurs verbatim in the corpus (up to ``limit`` places)."""
    out: list[tuple[Document, int]] = []
    for doc in docs:
        at = doc.text.find(quote)
        while at >= 0 and len(out) < limit:
            out.append((doc, at))
            at = doc.text.find(quote, at + 1)
    return out


def _line(doc: Document, offset: int) -> int:
    return doc.text.count("\n", 0, offset) + 1


def _content_words(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    # A crude plural fold: "refunds" in the question and "refund" in the text are one word.
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
            for w in words if w not in ENGLISH_STOPWORDS]


def question_overlap(question: str, evidence_text: str) -> tuple[int, int]:
    """(question content words found in the evidence, question content words)."""
    q = list(dict.fromkeys(_content_words(question)))
    ev = set(_content_words(evidence_text))
    return sum(w in ev for w in q), len(q)


def suggest_mentions(text: str, limit: int = 8) -> list[str]:
    """Strings an answer must contain, guessed from the selected evidence: quantities with
    a unit (``30 days``, ``15%``, ``$15``), bare numbers, and codes (``ERR_4021``)."""
    found: dict[str, None] = {}
    for m in NUMBER.finditer(text):
        if m.start() > 0 and text[m.start() - 1] in "-_":
            continue  # the digits of a code such as KT-200, suggested whole below
        dollar, value, unit = m.group(1), m.group(2), m.group(3) or ""
        if dollar:
            found.setdefault(f"${value}", None)
        elif unit == "%":
            found.setdefault(f"{value}%", None)
        elif unit and unit.lower() not in ENGLISH_STOPWORDS and unit.isalpha():
            found.setdefault(f"{value} {unit}", None)
        else:
            found.setdefault(value, None)
    for m in _CODE.finditer(text):
        found.setdefault(m.group(0), None)
    return list(found)[:limit]


def label_warnings(question: str, spans: Sequence[Span], mentions: Sequence[str],
                   docs: Sequence[Document], numbers: NumberIndex) -> list[Warning_]:
    out: list[Warning_] = []
    reported: set[tuple[str, int]] = set()
    for i, span in enumerate(spans):
        quote = span.quote
        places = occurrences(docs, quote)
        if len(places) > 1:
            where = ", ".join(f"{d.source}:{_line(d, at)}" for d, at in places[:5])
            more = f" and {len(places) - 5} more" if len(places) > 5 else ""
            out.append(Warning_("duplicate_quote",
                                f"evidence {i + 1}: the quote occurs {len(places)}"
                                f"{'+' if len(places) >= 20 else ''} times in the corpus "
                                f"({where}{more}); a sweep resolves it to the first in its "
                                "document, so select more text to make it unique", i))
        for conflict in numbers.conflicts(span.doc.doc_id, span.start, span.end, reported):
            out.append(Warning_("conflict", f"evidence {i + 1}: {numbers.describe(conflict)}", i))
    if spans and question.strip():
        shared, total = question_overlap(question, " ".join(s.quote for s in spans))
        if total >= OVERLAP_MIN_WORDS and shared / total >= OVERLAP_WARN:
            out.append(Warning_("question_overlap",
                                f"{shared} of the question's {total} content words appear in "
                                "the evidence: a real user rarely uses the document's own "
                                "wording (synthetic-question smell); rephrase it as they would"))
    for i in absent_mentions(mentions, [s.quote for s in spans]):
        out.append(Warning_("mention", f"{mentions[i]!r} occurs in none of the evidence"))
    return out
