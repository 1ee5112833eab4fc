"""Rows into candidates: redaction, normalisation, exact merging while the rows stream by,
then near-duplicates merged by embedding similarity.

Memory grows with the number of distinct questions, not with the file: a row is folded into
its candidate (counts, feedback, first and last time, a few phrasings) and dropped.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

import numpy as np

from sweep.common.secret import REDACTION_KINDS, redact_text
from sweep.common.textcheck import clean_text
from sweep.questions.rows import Row

MAX_VARIANTS = 5  # other phrasings kept on a candidate
_FORMS_KEPT = 32  # distinct raw phrasings counted per candidate while reading
_SEEN_MAX = 100_000  # distinct raw questions whose redaction and cid are remembered
MAX_RETRIEVED_CHARS = 500  # of each retrieved document's text kept in the queue
_CUT_MARGIN = 200  # read past the cut before redacting (a private-key line is 64 characters)
# The order in which a merged candidate takes its source: a real question beats a
# synthetic one that happens to read the same.
SOURCE_RANK = {"log": 0, "trace": 1, "synthetic": 2}

_QUOTES = "\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb"


def normalise(question: str) -> str:
    """The form exact duplicates share: NFKC, casefold, whitespace collapsed, surrounding
    quotes and trailing ``?!.`` stripped."""
    text = " ".join(unicodedata.normalize("NFKC", question).casefold().split())
    while True:
        before = text
        text = text.strip().strip(_QUOTES).rstrip("?!.").strip()
        if text == before:
            return text


def cid_of(question: str) -> str:
    return "c-" + hashlib.sha256(normalise(question).encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------- feedback

NEGATIVE_WORDS = frozenset({"down", "thumbs_down", "thumbsdown", "thumb_down", "negative",
                            "bad", "false", "no", "0", "-1", "\U0001f44e", ":-1:",
                            ":thumbsdown:", "unhelpful", "not_helpful", "dislike"})
POSITIVE_WORDS = frozenset({"up", "thumbs_up", "thumbsup", "thumb_up", "positive", "good",
                            "true", "yes", "+1", "\U0001f44d", ":+1:", ":thumbsup:",
                            "helpful", "like"})


def feedback_kind(value: Any) -> tuple[str | None, float | None]:
    """("negative" | "positive", None) for a word or boolean; (None, number) for a rating,
    judged at the end against the threshold; (None, None) when it is neither (counted)."""
    if isinstance(value, bool):
        return ("positive" if value else "negative"), None
    if isinstance(value, int | float):
        return (None, float(value)) if math.isfinite(float(value)) else (None, None)
    if value is None:
        return None, None
    text = re.sub(r"[\s-]+", "_", str(value).strip().casefold()).replace("\ufe0f", "")
    if text in ("0", "-1"):  # in the vocabulary: negative on any scale
        return "negative", None
    if text in NEGATIVE_WORDS:
        return "negative", None
    if text in POSITIVE_WORDS:
        return "positive", None
    # The number is read from the value as typed: float() takes "_" as a digit separator, so
    # the word form ("+49_1512_3456789", from "+49 1512 3456789") would read a phone number
    # as a rating of 4.9e12 and print it in the report.
    raw = str(value).strip()
    try:
        if "_" in raw:
            raise ValueError(raw)
        number = float(raw)
    except ValueError:
        return None, None
    return (None, number) if math.isfinite(number) else (None, None)


def default_negative_below(ratings_max: float | None) -> float:
    """The bottom of the scale the ratings use: 1 on a 1-5 (or 1-10) scale, 0 on a 0-1 one."""
    return 1.0 if ratings_max is not None and ratings_max > 1 else 0.0


# --------------------------------------------------------------------------- candidates

@dataclass(slots=True)  # slots: a log of many distinct questions holds one per question
class Candidate:
    """A question of the queue (the agreed format is `queue.candidate_json`)."""

    cid: str
    question: str
    count: int = 0
    source: str = "log"
    source_ref: str = ""
    negative_count: int = 0
    positive_count: int = 0
    trace_id: str | None = None
    variants: list[str] = field(default_factory=list)
    first_seen: str | None = None
    last_seen: str | None = None
    retrieved: list[dict[str, str | None]] = field(default_factory=list)
    passage: dict[str, Any] | None = None
    # While reading: phrasings with their counts, and ratings not yet judged.
    forms: Counter[str] = field(default_factory=Counter)
    ratings: Counter[float] = field(default_factory=Counter)
    existing: bool = False  # came from the queue file being added to
    # Filled by the priority step.
    priority: int = 0
    reason: str = ""

    @property
    def feedback(self) -> str | None:
        if self.negative_count:
            return "negative"
        return "positive" if self.positive_count else None

    def add_time(self, stamp: str | None) -> None:
        if stamp is None:
            return
        # ISO 8601 UTC strings with a Z sort as times when they have the same precision;
        # they are compared as datetimes to be safe.
        if self.first_seen is None or _t(stamp) < _t(self.first_seen):
            self.first_seen = stamp
        if self.last_seen is None or _t(stamp) > _t(self.last_seen):
            self.last_seen = stamp

    def absorb(self, other: Candidate, max_variants: int = MAX_VARIANTS) -> None:
        """Fold ``other`` (a duplicate) into this one."""
        had_negative = self.negative_count > 0
        self.count += other.count
        self.negative_count += other.negative_count
        self.positive_count += other.positive_count
        self.ratings.update(other.ratings)
        for form, n in other.forms.items():
            if form in self.forms or len(self.forms) < _FORMS_KEPT:
                self.forms[form] += n
        for v in [other.question, *other.variants]:
            self.add_variant(v, max_variants)
        self.add_time(other.first_seen)
        self.add_time(other.last_seen)
        if SOURCE_RANK.get(other.source, 9) < SOURCE_RANK.get(self.source, 9):
            self.source, self.source_ref = other.source, other.source_ref
        if self.trace_id is None or (other.negative_count and not had_negative
                                     and other.trace_id):
            self.trace_id = other.trace_id or self.trace_id
        self.retrieved = self.retrieved or other.retrieved
        self.passage = self.passage or other.passage

    def add_variant(self, text: str, max_variants: int = MAX_VARIANTS) -> None:
        if text != self.question and text not in self.variants \
                and len(self.variants) < max_variants:
            self.variants.append(text)


_ISO_Z = 20  # len("2024-05-01T10:00:00Z"): what rows.iso_time writes, comparable as text


def _t(stamp: str) -> Any:
    if len(stamp) == _ISO_Z and stamp.endswith("Z"):
        return stamp
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(
        UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Tally:
    """What reading and merging did, for the import report."""

    rows_read: int = 0
    rows_empty: int = 0
    rows_kept: int = 0
    merged_exact: int = 0
    merged_near: int = 0
    skipped_decided: int = 0
    redactions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REDACTION_KINDS,
                                                                              0))
    feedback_words: int = 0
    feedback_ratings: int = 0
    feedback_unrecognised: int = 0
    unrecognised_examples: list[str] = field(default_factory=list)
    ratings_max: float | None = None


class Merger:
    """Rows folded into candidates by normalised question, one row at a time."""

    def __init__(self, *, redact: bool = True, skip: Callable[[str], bool] = lambda c: False,
                 tally: Tally | None = None) -> None:
        self.redact = redact
        self.skip = skip  # a cid decided labelled/rejected: the row is counted, not kept
        self.tally = tally or Tally()
        self.by_cid: dict[str, Candidate] = {}
        self._seen: dict[str, tuple[str, str, tuple[tuple[str, int], ...]]] = {}

    def _clean(self, text: str) -> str:
        return redact_text(text, self.tally.redactions) if self.redact else text

    def clean_field(self, text: str) -> str:
        """Any other field the import writes or prints (a row's id in ``source_ref``, free
        text in the feedback column): on one line, and redacted like the question."""
        return self._clean(clean_text(text))

    def _cleaned(self, question: str) -> tuple[str, str]:
        """(redacted question, cid), remembered for the most recent distinct questions: a log
        asks the same things again and again, and the patterns cost ~20 us a row."""
        hit = self._seen.get(question)
        if hit is not None:
            text, cid, counts = hit
            for kind, n in counts:
                self.tally.redactions[kind] += n
            return text, cid
        before = dict(self.tally.redactions)
        text = self._clean(question)
        counts = tuple((k, n - before.get(k, 0)) for k, n in self.tally.redactions.items()
                       if n != before.get(k, 0))
        cid = cid_of(text)
        if len(self._seen) >= _SEEN_MAX:
            self._seen.clear()
        self._seen[question] = (text, cid, counts)
        return text, cid

    def add(self, row: Row) -> None:
        t = self.tally
        t.rows_read += 1
        # NUL, escapes and line breaks never reach a question, a cid or a qid made from it
        question = clean_text(row.question)
        if not question:
            t.rows_empty += 1
            return
        question, cid = self._cleaned(question)
        if self.skip(cid):
            t.skipped_decided += 1
            return
        t.rows_kept += 1
        # a log's id column may hold an e-mail or a phone number: source_ref reaches the
        # golden file, so it is redacted like the question
        source_ref = self.clean_field(row.source_ref) if row.source == "log" else \
            clean_text(row.source_ref)
        cand = self.by_cid.get(cid)
        if cand is None:
            cand = Candidate(cid=cid, question=question, source=row.source,
                             source_ref=source_ref, trace_id=row.trace_id,
                             retrieved=[self._doc(d) for d in row.retrieved],
                             passage=row.passage)
            self.by_cid[cid] = cand
        else:
            t.merged_exact += 1
            if SOURCE_RANK.get(row.source, 9) < SOURCE_RANK.get(cand.source, 9):
                cand.source, cand.source_ref = row.source, source_ref
            if not cand.retrieved and row.retrieved:
                cand.retrieved = [self._doc(d) for d in row.retrieved]
            cand.passage = cand.passage or row.passage
        cand.count += 1
        if question in cand.forms or len(cand.forms) < _FORMS_KEPT:
            cand.forms[question] += 1
        cand.add_time(row.time)
        negative = False
        for value in row.feedback:
            kind, number = feedback_kind(value)
            if kind is not None:
                t.feedback_words += 1
                negative = negative or kind == "negative"
                if kind == "negative":
                    cand.negative_count += 1
                else:
                    cand.positive_count += 1
            elif number is not None:
                t.feedback_ratings += 1
                cand.ratings[round(number, 4)] += 1
                t.ratings_max = number if t.ratings_max is None else max(t.ratings_max, number)
            else:
                t.feedback_unrecognised += 1
                if len(t.unrecognised_examples) < 5:
                    # free text typed as feedback: redacted whole, then cut (a cut first
                    # could leave half a phone number that no pattern sees)
                    t.unrecognised_examples.append(self.clean_field(str(value))[:40])
        if negative and row.trace_id and cand.negative_count == 1:
            cand.trace_id = row.trace_id  # the trace to look at is one that went wrong

    def _doc(self, doc: Mapping[str, str | None]) -> dict[str, str | None]:
        text = doc.get("text")
        # redacted with a margin, then cut: a key or a number across the cut is still seen
        # whole by the patterns, and no half of it is kept
        return {"doc_id": doc.get("doc_id"),
                "text": None if text is None else
                self._clean(text[:MAX_RETRIEVED_CHARS + _CUT_MARGIN])[:MAX_RETRIEVED_CHARS]}


def settle(cands: Iterable[Candidate], negative_below: float) -> None:
    """Judge the ratings against the threshold, and take as each candidate's question its
    most frequent phrasing (the others become variants)."""
    for c in cands:
        for value, n in c.ratings.items():
            if value <= negative_below:
                c.negative_count += n
            else:
                c.positive_count += n
        c.ratings.clear()
        if c.forms and not c.existing:
            ordered = [f for f, _ in c.forms.most_common()]
            c.question = ordered[0]
            for f in ordered[1:]:
                c.add_variant(f)
        c.forms.clear()


def merge_into(existing: Sequence[Candidate], new: Sequence[Candidate]
               ) -> tuple[list[Candidate], int]:
    """``new`` folded into the queue's ``existing`` candidates by cid; returns the merged list
    (existing first) and how many new ones matched an existing cid."""
    by_cid = {c.cid: c for c in existing}
    out = list(existing)
    matched = 0
    for c in new:
        if c.cid in by_cid:
            by_cid[c.cid].absorb(c)
            matched += 1
        else:
            by_cid[c.cid] = c
            out.append(c)
    return out, matched


def near_groups(vectors: np.ndarray, order: Sequence[int], threshold: float,
                fixed: Sequence[bool], block: int = 256) -> list[int]:
    """Leader clustering: candidates in ``order`` (most asked first); each joins the most
    similar earlier leader with cosine >= ``threshold``, else leads its own group. Candidates
    marked ``fixed`` (already in the queue) always lead, so two queued candidates are never
    merged. Returns, per candidate, the index of its leader (itself for a leader).

    Vectors are L2-normalised; the similarities are computed a block of candidates at a time,
    against every candidate (memory: ``block`` x n floats)."""
    n = vectors.shape[0]
    leader = list(range(n))
    is_leader = np.zeros(n, dtype=bool)
    pos = np.empty(n, dtype=np.int64)
    pos[np.asarray(order, dtype=np.int64)] = np.arange(n)
    ordered = np.asarray(order, dtype=np.int64)
    for lo in range(0, n, block):
        rows = ordered[lo:lo + block]
        sims = vectors[rows] @ vectors[ordered].T  # columns in processing order
        for r, i in enumerate(rows):
            p = lo + r
            if fixed[i]:
                is_leader[i] = True
                continue
            earlier = sims[r, :p]
            hits = np.flatnonzero((earlier >= threshold) & is_leader[ordered[:p]])
            if hits.size:
                best = hits[np.argmax(earlier[hits])]
                leader[i] = int(ordered[best])
            else:
                is_leader[i] = True
    return leader


def merge_near(cands: list[Candidate], vectors: np.ndarray, threshold: float
               ) -> tuple[list[Candidate], int]:
    """Near-duplicates folded into their leader (`near_groups`); returns the leaders and how
    many candidates were folded."""
    order = sorted(range(len(cands)), key=lambda i: (not cands[i].existing, -cands[i].count,
                                                     cands[i].cid))
    leader = near_groups(vectors, order, threshold, [c.existing for c in cands])
    merged = 0
    for i in order:
        if leader[i] != i:
            cands[leader[i]].absorb(cands[i])
            merged += 1
    return [c for i, c in enumerate(cands) if leader[i] == i], merged
