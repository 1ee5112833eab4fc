"""`sweep validate`: check a golden set against a corpus before spending a sweep on it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sweep.data.corpus import Document
from sweep.data.golden import GoldenSet, Problem
from sweep.evaluation.relevance import ResolvedItem


@dataclass
class ValidationResult:
    problems: list[Problem]
    n_items: int

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


def absent_mentions(mentions: Sequence[str], evidence: Sequence[str]) -> list[int]:
    """Indexes of the ``mentions`` found (case-insensitively) in none of the ``evidence`` texts;
    none when there is no evidence to look in. Shared by `sweep validate` and `sweep label`."""
    texts = [t.lower() for t in evidence]
    if not texts:
        return []
    return [i for i, m in enumerate(mentions) if not any(m.lower() in t for t in texts)]


def mention_problems(resolved: ResolvedItem, docs: dict[str, Document], file: str
                     ) -> list[Problem]:
    """``answer_must_mention`` strings that occur in none of the item's evidence text."""
    mentions = resolved.item.answer_must_mention
    evidence = [docs[d].text[s:e] for d, s, e in resolved.spans]
    return [Problem(file, resolved.item.line, f"answer_must_mention[{i}]",
                    f"{mentions[i]!r} occurs in none of the item's evidence", "warning")
            for i in absent_mentions(mentions, evidence)]


def check_golden(golden: GoldenSet, resolved: list[ResolvedItem], docs: list[Document]
                 ) -> ValidationResult:
    by_id = {d.doc_id: d for d in docs}
    problems = list(golden.problems)
    for item in resolved:
        problems.extend(item.problems)
        problems.extend(mention_problems(item, by_id, golden.path))
        if item.item.needs is not None and item.spans and len(item.passage_groups) < 2:
            problems.append(Problem(golden.path, item.item.line, "needs", "the evidence is one "
                                    "passage (one place: same document, no blank line between "
                                    "its spans), so `needs` changes nothing", "warning"))
    problems.extend(conflict_problems(resolved, docs, golden.path))
    problems.sort(key=lambda p: (p.line, p.severity != "error", p.field))
    return ValidationResult(problems, len(golden.items))


def cap_problems(problems: Sequence[Problem], per_item: int = 5, total: int = 200
                 ) -> tuple[list[Problem], list[str]]:
    """The problems to print and one note per cut: at most ``per_item`` per golden line and
    ``total`` in all (``per_item=0``: everything). The counts in the summary stay complete."""
    if per_item <= 0:
        return list(problems), []
    shown: list[Problem] = []
    notes: list[str] = []
    by_item: dict[tuple[str, int], list[Problem]] = {}
    for p in problems:
        by_item.setdefault((p.file, p.line), []).append(p)
    for (file, line), group in by_item.items():
        shown.extend(group[:per_item])
        if len(group) > per_item:
            where = f"{file}:{line}" if line else file
            notes.append(f"{where}: ... and {len(group) - per_item} more problems for this "
                         "item (--all shows every one)")
    if len(shown) > total:
        rest = len(problems) - total
        return shown[:total], [f"... and {rest} more problems (--all shows every one)"]
    return shown, notes


# --------------------------------------------------------------------------- conflicting numbers

# A number with its optional "$" and unit ("$15", "30 days", "15%"); public because the
# labelling page (label.checks) suggests answer mentions with the same rule.
NUMBER = re.compile(
    r"(?<![\w.])(\$)?(\d+(?:[.,]\d+)?)[ \t]*\n?[ \t]*"
    r"(%|(?:(?:business|working|calendar)\s+)?[A-Za-z]+)?")
# Only these make a number comparable across documents. Any word after a number used to
# count ("00000 fits" vs "00050 fits"), which flooded a generated corpus with 10^6 warnings.
UNITS = frozenset(word for group in (
    "second seconds sec secs minute minutes min mins hour hours hr hrs day days night nights",
    "week weeks month months year years yr yrs",
    "dollar dollars usd eur euro euros gbp pound pounds cent cents percent",
    "b kb mb gb tb kib mib gib tib byte bytes bit bits kbps mbps gbps",
    "mm cm m km inch inches ft foot feet mile miles meter meters metre metres",
    "mg g kg lb lbs oz ton tons tonne tonnes ml l litre litres liter liters",
    "hz khz mhz ghz v w kw kwh mah rpm mph kmh",
    "item items order orders attempt attempts time times device devices user users seat seats",
    "character characters page pages request requests",
) for word in group.split())
_WORDS = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class NumberMention:
    doc_id: str
    start: int
    value: str
    unit: str
    key: tuple[str, ...]  # the two content words before the number
    context: frozenset[str]  # content words around it, in the same paragraph

    @property
    def phrase(self) -> str:
        if self.unit == "$":
            return f"${self.value}"
        return f"{self.value}{self.unit}" if self.unit == "%" else f"{self.value} {self.unit}"


def number_mentions(doc: Document, window: int = 5) -> list[NumberMention]:
    """Numbers with a unit (``30 days``, ``15%``, ``$15``) and the words around them."""
    from sweep.retrieval.bm25 import ENGLISH_STOPWORDS

    out = []
    text = doc.text
    for m in NUMBER.finditer(text):
        dollar, value, unit = m.group(1), m.group(2), (m.group(3) or "").lower()
        unit = "$" if dollar else " ".join(unit.split())
        if unit not in ("$", "%") and unit.rsplit(" ", 1)[-1] not in UNITS:
            continue
        para_start = text.rfind("\n\n", 0, m.start()) + 1
        para_end = text.find("\n\n", m.end())
        para_end = len(text) if para_end < 0 else para_end
        before = [w.lower() for w in _WORDS.findall(text, para_start, m.start())]
        after = [w.lower() for w in _WORDS.findall(text, m.end(), para_end)]
        before = [w for w in before if w not in ENGLISH_STOPWORDS][-window:]
        after = [w for w in after if w not in ENGLISH_STOPWORDS][:window]
        out.append(NumberMention(doc.doc_id, m.start(), value.replace(",", "."), unit,
                                 tuple(before[-2:]), frozenset(before + after)))
    return out


def _similar(a: NumberMention, b: NumberMention, min_overlap: float) -> bool:
    """Most of the words around the two numbers are shared: at least five words and
    ``min_overlap`` of the smaller context, or the same two words right before the numbers
    ("restocking fee of 10%" / "restocking fee of 15%")."""
    if len(a.key) == 2 and a.key == b.key:
        return True
    shared = len(a.context & b.context)
    smaller = min(len(a.context), len(b.context)) or 1
    return shared >= 5 and shared / smaller >= min_overlap


@dataclass(frozen=True)
class Conflict:
    """A number in some evidence (``mine``) and a near-duplicate passage in another document
    that states a different value (``other``)."""

    mine: NumberMention
    other: NumberMention


class NumberIndex:
    """Every number with a unit in a corpus, built once, to check evidence spans against.

    Shared by `sweep validate` (whole golden set) and `sweep label` (one selection at a time).
    """

    def __init__(self, docs: Sequence[Document], min_overlap: float = 0.6) -> None:
        self.min_overlap = min_overlap
        self.by_doc = {d.doc_id: d for d in docs}
        self.mentions = {d.doc_id: number_mentions(d) for d in docs}
        self.by_unit: dict[str, list[NumberMention]] = {}
        for ms in self.mentions.values():
            for mention in ms:
                self.by_unit.setdefault(mention.unit, []).append(mention)

    def conflicts(self, doc_id: str, start: int, end: int,
                  reported: set[tuple[str, int]] | None = None) -> list[Conflict]:
        """Numbers inside ``[start, end)`` of ``doc_id`` contradicted elsewhere; a passage
        already in ``reported`` (updated in place) is not reported twice."""
        reported = set() if reported is None else reported
        out = []
        for mine in self.mentions.get(doc_id, []):
            if not start <= mine.start < end:
                continue
            for other in self.by_unit.get(mine.unit, []):
                if (other.doc_id == doc_id or other.value == mine.value
                        or (other.doc_id, other.start) in reported
                        or not _similar(mine, other, self.min_overlap)):
                    continue
                reported.add((other.doc_id, other.start))
                out.append(Conflict(mine, other))
        return out

    def describe(self, conflict: Conflict) -> str:
        """``says '30 days' (a.md) but a near-duplicate passage in faq.md:23 says '14 days'``"""
        mine, other = conflict.mine, conflict.other
        odoc = self.by_doc[other.doc_id]
        line = odoc.text.count("\n", 0, other.start) + 1
        return (f"says {mine.phrase!r} ({self.by_doc[mine.doc_id].source}) but a near-duplicate "
                f"passage in {odoc.source}:{line} says {other.phrase!r}")


def conflict_problems(resolved: Sequence[ResolvedItem], docs: Sequence[Document], file: str,
                      min_overlap: float = 0.6) -> list[Problem]:
    """Evidence that states a number which a near-duplicate passage elsewhere contradicts.

    The classic labelling find: the refund policy says 30 days, an old FAQ says 14. A number
    in an item's evidence is compared with every number of the same unit in OTHER documents;
    when the words around them match (see `_similar`) and the values differ, the item gets a warning naming both places.
    """
    index = NumberIndex(docs, min_overlap)
    problems = []
    for item in resolved:
        reported: set[tuple[str, int]] = set()
        for i, (doc_id, start, end) in enumerate(item.spans):
            for conflict in index.conflicts(doc_id, start, end, reported):
                problems.append(Problem(
                    file, item.item.line, f"evidence[{i}]" if item.source == "evidence"
                    else "relevant_chunk_ids", index.describe(conflict), "warning"))
    return problems
