"""`sweep validate`: check a golden set against a corpus before spending a sweep on it."""

from __future__ import annotations

from dataclasses import dataclass

from .corpus import Document
from .golden import GoldenSet, Problem
from .relevance import ResolvedItem


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


def mention_problems(resolved: ResolvedItem, docs: dict[str, Document], file: str
                     ) -> list[Problem]:
    """``answer_must_mention`` strings that occur in none of the item's evidence text."""
    texts = [docs[d].text[s:e].lower() for d, s, e in resolved.spans]
    if not texts:
        return []
    return [
        Problem(file, resolved.item.line, f"answer_must_mention[{i}]",
                f"{mention!r} occurs in none of the item's evidence", "warning")
        for i, mention in enumerate(resolved.item.answer_must_mention)
        if not any(mention.lower() in t for t in texts)
    ]


def check_golden(golden: GoldenSet, resolved: list[ResolvedItem], docs: list[Document]
                 ) -> ValidationResult:
    by_id = {d.doc_id: d for d in docs}
    problems = list(golden.problems)
    for item in resolved:
        problems.extend(item.problems)
        problems.extend(mention_problems(item, by_id, golden.path))
    problems.sort(key=lambda p: (p.line, p.severity != "error", p.field))
    return ValidationResult(problems, len(golden.items))
