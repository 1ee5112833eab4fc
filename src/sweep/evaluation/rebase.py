"""Carry a golden set's evidence from one version of a corpus to the next (`sweep golden rebase`).

Every item is first placed in the OLD corpus exactly as a sweep places it (quotes in levels,
chunk ids through the reference chunking; `sweep.evaluation.relevance`), which gives each
evidence passage as a span of old document text. Then, per passage:

1. its document is matched in the new corpus: by path, else by content (a renamed or moved
   file is a rename, not a deletion: the most similar unmatched new document by word
   overlap, Dice >= `RENAME_MIN`, one to one);
2. the two texts are diffed with diff-match-patch (lines first, then words inside each changed
   block, then its semantic clean-up: deterministic, and seconds for the 130 kB manpage where a
   character diff without a timeout takes minutes);
3. the passage is classified:

   - ``unchanged``: no edit touches it and it sits at the same offsets of the same path;
   - ``moved``: no edit touches it, or its exact text occurs once elsewhere in the new corpus
     (a section moved, a page merged): the new span holds exactly the old text;
   - ``edited``: an edit falls inside it; the text the diff maps it to is proposed beside the
     old one (also: the same words only at the whitespace-normalised or loose quote level, or
     an exact copy that is not unique);
   - ``removed``: nothing is left of it (its document is gone and the text is nowhere, or less
     than `MIN_KEPT` of its characters survive the diff).

A passage is never moved onto different words: ``moved`` means the new span's text equals the
old span's text, character for character (the test checks it on the real Homebrew pair), and
the rewritten evidence is resolved again in the new corpus to prove it lands there. An item
takes the status of its worst passage. A proposal that lacks an ``answer_must_mention`` string
found in the old evidence (a "30 days" that became "14 days") is never ``edited``: the item is
``removed`` when its passage's place was deleted and the proposal is another passage, else
``unplaced``; either way the nearest candidates of the new version (those holding the mention
first) are listed for the reviewer.

The diff has limits (`DiffLimits`): a changed block too large to diff word by word, or a
document whose diff runs past its deadline, is not guessed at: its passages are looked for by
the quote search, and what that cannot find is ``unplaced`` with candidates.

Everything here is a pure function over documents and parsed items; reading folders, git
revisions and writing files is `sweep.application.golden`'s job.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from diff_match_patch import diff_match_patch

from sweep.chunking.chunkers import Chunk
from sweep.data.corpus import Document
from sweep.data.golden import GoldenItem, parse_golden_lines
from sweep.data.quotes import QuoteIndex
from sweep.evaluation.relevance import CorpusIndex, ResolvedItem, resolve_item
from sweep.retrieval.bm25 import tokenize

STATUSES = ("unchanged", "moved", "edited", "removed", "unplaced")
_WORST = {s: i for i, s in enumerate(STATUSES)}
RENAME_MIN = 0.5  # Dice overlap of two documents' words for a rename
MIN_KEPT = 0.25  # share of a passage's characters the diff must keep for a proposal...
MIN_SIMILAR = 0.3  # ...or the word overlap of a rewritten passage with what replaced it
# A reworded passage found away from its place (the diff paired it with nothing): in its own
# document, and in any document when its own is gone. Measured on the Homebrew pair: below
# 0.35 the best-scoring sentences were unrelated ones sharing "analytics" or "brew".
MIN_SIMILAR_NEARBY = 0.35
MIN_SIMILAR_ANYWHERE = 0.5
# A touched passage is looked for elsewhere only when it is long enough to be one place: a
# short quote ("brew update") occurs in many contexts, and moving it to another would be a guess.
MIN_RELOCATE_CHARS = 40
# Passages of the new version listed for a reviewer when no proposal can be trusted.
CANDIDATES = 3

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
EQUAL, DELETE, INSERT = 0, -1, 1


@dataclass(frozen=True)
class Passage:
    path: str
    start: int
    end: int
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "start": self.start, "end": self.end, "text": self.text}


@dataclass(frozen=True)
class Carried:
    """One evidence passage in the new corpus: ``new`` is the span (unchanged, moved) or the
    proposal (edited); None when removed."""

    status: str
    old: Passage
    new: Passage | None
    reason: str = ""
    # Its place in the new version was deleted (or its document is gone): a proposal, if
    # any, is another passage found by word overlap, not the passage edited in place.
    displaced: bool = field(default=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "old": self.old.as_dict(),
                "new": self.new.as_dict() if self.new else None}


@dataclass(frozen=True)
class DocMatch:
    old: Document
    new: Document | None
    how: str  # "path" | "content" | "" (no counterpart)
    similarity: float = 1.0


# ---------------------------------------------------------------------------- documents


def _words(text: str) -> Counter[str]:
    """Content words (BM25's tokenisation, English stop words out): "the", "you", "is" make
    two unrelated sentences look alike."""
    return Counter(tokenize(text))


def _dice(a: Counter[str], b: Counter[str]) -> float:
    total = sum(a.values()) + sum(b.values())
    return 2 * sum((a & b).values()) / total if total else 0.0


def match_documents(old_docs: Sequence[Document], new_docs: Sequence[Document]
                    ) -> dict[str, DocMatch]:
    """Each old document (by source path) and its counterpart in the new corpus."""
    new_by_path = {d.source: d for d in new_docs}
    old_paths = {d.source for d in old_docs}
    out = {d.source: DocMatch(d, new_by_path[d.source], "path")
           for d in old_docs if d.source in new_by_path}
    left = [d for d in old_docs if d.source not in out]
    free = [d for d in new_docs if d.source not in old_paths]
    bags = {d.source: _words(d.text) for d in [*left, *free]}
    pairs = sorted(((_dice(bags[o.source], bags[n.source]), o.source, n.source)
                    for o in left for n in free), key=lambda p: (-p[0], p[1], p[2]))
    taken: set[str] = set()
    by_path = {d.source: d for d in old_docs}
    for score, o, n in pairs:
        if score < RENAME_MIN:
            break
        if o in out or n in taken:
            continue
        out[o] = DocMatch(by_path[o], new_by_path[n], "content", round(score, 3))
        taken.add(n)
    for d in left:
        out.setdefault(d.source, DocMatch(d, None, "", 0.0))
    return out


# ---------------------------------------------------------------------------- the diff


@dataclass(frozen=True)
class Segment:
    op: int
    a0: int  # old text [a0, a1)
    a1: int
    b0: int  # new text [b0, b1)
    b1: int


class DiffLimits:
    """How much work the diff may do: a wall-clock ``deadline_s`` per document and, for each
    block the line diff found changed, at most ``max_tokens`` word tokens on its two sides
    together (the word diff is quadratic in the worst case: a 400 kB document rewritten
    end to end ran for minutes). A block over the size limit is not diffed word by word, and a
    document whose diff passes its deadline is not diffed at all: their passages are looked
    for by the quote search, and what it cannot find is ``unplaced`` (never guessed).
    The size limit is deterministic; the deadline is a safety net for the rest, so the same
    texts give the same result unless it is hit (and then the result says so)."""

    def __init__(self, deadline_s: float = 60.0, max_tokens: int = 60_000) -> None:
        self.deadline_s = deadline_s
        self.max_tokens = max_tokens


class DiffGaveUp(Exception):
    """The diff of one document ran past its deadline."""


def _token_diff(dmp: diff_match_patch, a: str, b: str, limits: DiffLimits | None = None,
                deadline: float = 0.0) -> list[tuple[int, str]] | None:
    """diff-match-patch over word tokens (its line-mode trick, with words for lines); None
    when the block has more tokens than ``limits`` allow."""
    codes: dict[str, int] = {}
    table: list[str] = []

    def encode(text: str) -> str:
        out = []
        for tok in _TOKEN.findall(text):
            if tok not in codes:
                codes[tok] = len(table)
                table.append(tok)
            out.append(chr(codes[tok] + 0x100))
        return "".join(out)

    ea, eb = encode(a), encode(b)
    if limits is not None and len(ea) + len(eb) > limits.max_tokens:
        return None
    if len(table) + 0x100 >= 0xD800:  # more distinct tokens than code points below surrogates
        return [(DELETE, a), (INSERT, b)]
    _arm(dmp, deadline)
    diffs = dmp.diff_main(ea, eb, False)
    _check(deadline)
    return [(op, "".join(table[ord(c) - 0x100] for c in s)) for op, s in diffs]


def _arm(dmp: diff_match_patch, deadline: float) -> None:
    """Give diff-match-patch what is left of ``deadline`` (0: none); past it, it returns a
    coarser diff, which `_check` then refuses."""
    if deadline:
        dmp.Diff_Timeout = max(1e-9, deadline - time.monotonic())


def _check(deadline: float) -> None:
    if deadline and time.monotonic() >= deadline:
        raise DiffGaveUp


def text_diff(old: str, new: str, limits: DiffLimits | None = None,
              coarse: list[tuple[int, int]] | None = None) -> list[tuple[int, str]]:
    """``[(op, text)]`` turning ``old`` into ``new`` (op: 0 equal, -1 delete, 1 insert).

    With ``limits``: a changed block over the size limit is left as one deletion and one
    insertion, and its old offsets are added to ``coarse``; past the deadline `DiffGaveUp`."""
    dmp = diff_match_patch()
    dmp.Diff_Timeout = 0  # no deadline of its own: the same texts always give the same diff
    deadline = time.monotonic() + limits.deadline_s if limits is not None else 0.0
    la, lb, lines = dmp.diff_linesToChars(old, new)
    _arm(dmp, deadline)
    diffs = dmp.diff_main(la, lb, False)
    _check(deadline)
    dmp.diff_charsToLines(diffs, lines)
    out: list[tuple[int, str]] = []
    i = pos = 0
    while i < len(diffs):
        if diffs[i][0] == EQUAL:
            out.append(diffs[i])
            pos += len(diffs[i][1])
            i += 1
            continue
        deleted, inserted = [], []
        while i < len(diffs) and diffs[i][0] != EQUAL:
            (deleted if diffs[i][0] == DELETE else inserted).append(diffs[i][1])
            i += 1
        a, b = "".join(deleted), "".join(inserted)
        words = _token_diff(dmp, a, b, limits, deadline) if a and b else None
        if words is not None:
            out.extend(words)
        elif a and b:
            out.extend([(DELETE, a), (INSERT, b)])
            if coarse is not None:
                coarse.append((pos, pos + len(a)))
        else:
            out.append((DELETE, a) if a else (INSERT, b))
        pos += len(a)
    dmp.diff_cleanupSemantic(out)
    return [d for d in out if d[1]]


class DocDiff:
    """The diff of two versions of one document, as segments with offsets on both sides.
    ``coarse``: old ranges the diff did not resolve word by word (over `DiffLimits`); the
    whole text when it gave up (``gave_up`` says why)."""

    def __init__(self, old: str, new: str, limits: DiffLimits | None = None) -> None:
        self.old, self.new = old, new
        self.segments: list[Segment] = []
        self.coarse: list[tuple[int, int]] = []
        self.gave_up = ""
        try:
            diffs = text_diff(old, new, limits, self.coarse)
        except DiffGaveUp:
            assert limits is not None
            diffs = [(DELETE, old), (INSERT, new)]
            self.coarse = [(0, len(old))]
            self.gave_up = f"the diff ran past its deadline of {limits.deadline_s:g} s"
        a = b = 0
        for op, text in diffs:
            n = len(text)
            if op == EQUAL:
                self.segments.append(Segment(op, a, a + n, b, b + n))
                a, b = a + n, b + n
            elif op == DELETE:
                self.segments.append(Segment(op, a, a + n, b, b))
                a += n
            else:
                self.segments.append(Segment(op, a, a, b, b + n))
                b += n

    def unresolved(self, start: int, end: int) -> str:
        """Why ``[start, end)`` lies in text the diff did not resolve, or ""."""
        if not any(a < end and b > start for a, b in self.coarse):
            return ""
        return self.gave_up or "its changed block is over the diff's size limit"

    def touched(self, start: int, end: int) -> bool:
        """Whether an edit falls inside ``[start, end)`` (an insertion at either edge does not)."""
        for s in self.segments:
            if s.op == DELETE and s.a0 < end and s.a1 > start:
                return True
            if s.op == INSERT and start < s.a0 < end:
                return True
        return False

    def kept(self, start: int, end: int) -> int:
        """Characters of ``[start, end)`` that the diff keeps."""
        return sum(max(0, min(end, s.a1) - max(start, s.a0))
                   for s in self.segments if s.op == EQUAL)

    def map_start(self, pos: int) -> int:
        """Where old offset ``pos`` starts in the new text (after an insertion at ``pos``); in
        deleted text that was replaced, where the replacement starts."""
        for i, s in enumerate(self.segments):
            if s.a0 <= pos < s.a1:
                if s.op == EQUAL:
                    return s.b0 + (pos - s.a0)
                if i > 0 and self.segments[i - 1].op == INSERT:
                    return self.segments[i - 1].b0
                return s.b0
        return len(self.new)

    def map_end(self, pos: int) -> int:
        """Where an old span ending at ``pos`` ends in the new text (before an insertion at
        ``pos``); in deleted text that was replaced, where the replacement ends."""
        if pos <= 0:
            return 0
        for i, s in enumerate(self.segments):
            if s.a0 <= pos - 1 < s.a1:
                if s.op == EQUAL:
                    return s.b0 + (pos - s.a0)
                if i + 1 < len(self.segments) and self.segments[i + 1].op == INSERT:
                    return self.segments[i + 1].b1
                return s.b0
        return len(self.new)


_MARKUP_EDGE = "*_`"
_SENTENCE_END = re.compile(r"(?<=[.!?:])\s+|\n\s*\n")


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` grown to whole words and to the emphasis or code markup around them,
    without a dangling closing bracket at its start or surrounding whitespace."""
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in _MARKUP_EDGE) and (
            start < len(text) and (text[start].isalnum() or text[start] in _MARKUP_EDGE)):
        start -= 1
    while 0 < end < len(text) and (text[end - 1].isalnum() or text[end - 1] in _MARKUP_EDGE) \
            and (text[end].isalnum() or text[end] in _MARKUP_EDGE):
        end += 1
    while start < end and (text[start].isspace() or text[start] in ")]},;"):
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def similarity(a: str, b: str) -> float:
    """Dice overlap of the two texts' content words."""
    return _dice(_words(a), _words(b))


def _best_window(old: str, text: str, start: int, end: int) -> tuple[int, int]:
    """Inside ``text[start:end]`` (a replacement can be a whole rewritten section), the run
    of sentences most like ``old``: at most one sentence more than ``old`` has."""
    cuts = [start] + [m.end() for m in _SENTENCE_END.finditer(text, start, end)] + [end]
    bounds = [(a, b) for a, b in pairwise(cuts) if text[a:b].strip()]
    if len(bounds) <= 1:
        return start, end
    most = len(_SENTENCE_END.findall(old.strip())) + 2
    best = (start, end)
    best_score = similarity(old, text[start:end])
    for i in range(len(bounds)):
        for j in range(i, min(len(bounds), i + most)):
            a, b = bounds[i][0], bounds[j][1]
            score = similarity(old, text[a:b])
            if score > best_score:
                best, best_score = (a, b), score
    return best


# ---------------------------------------------------------------------------- passages


class Rebaser:
    """The two corpora, their document matches, and the diffs computed so far."""

    def __init__(self, old_docs: Sequence[Document], new_docs: Sequence[Document],
                 limits: DiffLimits | None = None) -> None:
        self.limits = limits or DiffLimits()
        self.old_docs = list(old_docs)
        self.new_docs = list(new_docs)
        self.old_by_id = {d.doc_id: d for d in old_docs}
        self.new_by_path = {d.source: d for d in new_docs}
        self.new_by_id = {d.doc_id: d for d in new_docs}
        self.matches = match_documents(old_docs, new_docs)
        self.new_quotes = QuoteIndex({d.source: d.text for d in new_docs})
        self._diffs: dict[str, DocDiff] = {}
        self._sentence_cache: dict[str, list[tuple[int, int, Counter[str]]]] = {}

    def same(self, old: Document) -> bool:
        """Whether ``old`` is in the new corpus at the same path with the same text."""
        new = self.matches[old.source].new
        return new is not None and new.source == old.source and new.text == old.text

    def diff(self, old: Document) -> DocDiff:
        match = self.matches[old.source]
        assert match.new is not None
        if old.source not in self._diffs:
            self._diffs[old.source] = DocDiff(old.text, match.new.text, self.limits)
        return self._diffs[old.source]

    def _relocate(self, text: str, near: tuple[str, int] | None, old: Passage
                  ) -> Carried | None:
        """The passage's text looked for anywhere in the new corpus, at the quote levels."""
        if len(text.strip()) < MIN_RELOCATE_CHARS:
            return None
        level, places = self.new_quotes.find(text)
        if level is None:
            return None

        def distance(p: Any) -> tuple[int, int]:
            if near is None:
                return (0, 0)
            return (0 if p.doc_id == near[0] else 1, abs(p.start - near[1]))

        best = min(places, key=distance)
        doc_text = self.new_by_path[best.doc_id].text
        a, b = (best.start, best.end) if level == "exact" else _widen(doc_text, best.start,
                                                                      best.end)
        new = Passage(best.doc_id, a, b, doc_text[a:b])
        if level == "exact" and len(places) == 1:
            where = "another file" if best.doc_id != old.path else "another place"
            return Carried("moved", old, new, f"an edit touched its old place; its exact text "
                           f"is in {where} ({best.doc_id})")
        if level == "exact":
            return Carried("edited", old, new, f"the exact text occurs {len(places)} times in "
                           "the new version: confirm which one (the nearest is proposed)")
        return Carried("edited", old, new, f"the same words only at the {level} quote level "
                       "(whitespace or markup changed)")

    def carry(self, old_doc: Document, start: int, end: int) -> Carried:
        text = old_doc.text[start:end]
        old = Passage(old_doc.source, start, end, text)
        match = self.matches[old_doc.source]
        new_doc = match.new
        renamed = f" (file renamed to {new_doc.source})" if new_doc and match.how == "content" \
            else ""
        if new_doc is not None:
            if new_doc.text == old_doc.text:
                dd = None
                ns = start
            else:
                dd = self.diff(old_doc)
                ns = dd.map_start(start) if not dd.touched(start, end) else -1
            if ns >= 0:
                new = Passage(new_doc.source, ns, ns + len(text), new_doc.text[ns:ns + len(text)])
                assert new.text == text, "an untouched passage must map onto its own text"
                if new_doc.source == old_doc.source and ns == start:
                    return Carried("unchanged", old, new, "")
                return Carried("moved", old, new, f"same text, offsets {start}->{ns}{renamed}")
            assert dd is not None
            relocated = self._relocate(text, (new_doc.source, dd.map_start(start)), old)
            if relocated is not None:
                return relocated
            why = dd.unresolved(start, end)
            if why:
                # Not guessed from a block the diff could not resolve: a human places it
                # (the candidates of `candidates` are listed beside it).
                return Carried("unplaced", old, None, f"{new_doc.source}: {why}, and the quote "
                               f"search did not find the passage{renamed}")
            ns, ne = dd.map_start(start), dd.map_end(end)
            kept = dd.kept(start, end) / max(1, end - start)
            if ne > ns:
                ns, ne = _widen(new_doc.text, *_best_window(text, new_doc.text, ns, ne))
            like = similarity(text, new_doc.text[ns:ne]) if ne > ns else 0.0
            if ne <= ns or (kept < MIN_KEPT and like < MIN_SIMILAR):
                near = self._most_similar(old, [new_doc], MIN_SIMILAR_NEARBY)
                if near is not None:
                    return replace(near, displaced=True)
                return Carried("removed", old, None, f"deleted: {kept:.0%} of the passage is left "
                               f"in {new_doc.source}{renamed}", True)
            new = Passage(new_doc.source, ns, ne, new_doc.text[ns:ne])
            return Carried("edited", old, new, f"rewritten ({kept:.0%} of its characters kept, "
                           f"word overlap {like:.2f} with the proposal){renamed}")
        relocated = self._relocate(text, None, old)
        if relocated is not None:
            return relocated
        near = self._most_similar(old, self.new_docs, MIN_SIMILAR_ANYWHERE)
        if near is not None:
            return replace(near, displaced=True)
        return Carried("removed", old, None, f"{old_doc.source} is gone from the new version "
                       "and the passage is nowhere in it", True)

    def _windows(self, docs: Sequence[Document], span: int
                 ) -> Iterator[tuple[Document, int, int, Counter[str]]]:
        """Every run of 1 to ``span`` consecutive sentences of ``docs``: its document, start,
        end and word bag (the bag grows in place as the run does: read it before the next)."""
        for doc in docs:
            sentences = self._sentences(doc)
            for i in range(len(sentences)):
                bag: Counter[str] = Counter()
                for j in range(i, min(len(sentences), i + span)):
                    bag += sentences[j][2]
                    yield doc, sentences[i][0], sentences[j][1], bag

    def _sentences(self, doc: Document) -> list[tuple[int, int, Counter[str]]]:
        if doc.source not in self._sentence_cache:
            cuts = [0] + [m.end() for m in _SENTENCE_END.finditer(doc.text)] + [len(doc.text)]
            # Headings are left out: a heading's words next to the sentence would win the
            # overlap without being part of the answer.
            self._sentence_cache[doc.source] = [
                (a, b, _words(doc.text[a:b])) for a, b in pairwise(cuts)
                if doc.text[a:b].strip() and not doc.text[a:b].lstrip().startswith("#")]
        return self._sentence_cache[doc.source]

    def _most_similar(self, old: Passage, docs: Sequence[Document], least: float
                      ) -> Carried | None:
        """A reworded passage that also moved (the diff pairs it with nothing): the run of
        sentences of ``docs`` most like it, proposed when their words overlap by ``least``."""
        text = old.text
        want = _words(text)
        if not want:
            return None
        span = len(_SENTENCE_END.findall(text.strip())) + 2
        # A line of two words ("brew upgrade") can share half of a sentence's words: a
        # proposal must be at least half as long as what it replaces.
        least_words = sum(want.values()) / 2
        best: tuple[float, str, int, int] | None = None
        for doc, a, b, bag in self._windows(docs, span):
            if sum(bag.values()) < least_words:
                continue
            score = _dice(want, bag)
            if best is None or score > best[0]:
                best = (score, doc.source, a, b)
        if best is None or best[0] < least:
            return None
        score, source, a, b = best
        doc_text = self.new_by_path[source].text
        a, b = _widen(doc_text, a, b)
        return Carried("edited", old, Passage(source, a, b, doc_text[a:b]),
                       f"not found in place; the most similar passage of the new version is "
                       f"proposed ({source}, word overlap {score:.2f})")


    def candidates(self, old: Passage, mentions: Sequence[str], near: str | None,
                   k: int = CANDIDATES) -> list[dict[str, Any]]:
        """The ``k`` runs of sentences of the new version a reviewer should look at for
        ``old``: those holding every one of ``mentions`` first, then by word overlap; in the
        document ``near`` (the old one's counterpart) when there is one, else anywhere."""
        docs = ([self.new_by_path[near]] if near in self.new_by_path else self.new_docs)
        want = _words(old.text)
        span = len(_SENTENCE_END.findall(old.text.strip())) + 2
        low = [m.lower() for m in mentions]
        scored: list[tuple[bool, float, str, int, int]] = []
        for doc, a, b, bag in self._windows(docs, span):
            holds = bool(low) and all(m in doc.text[a:b].lower() for m in low)
            scored.append((holds, _dice(want, bag), doc.source, a, b))
        scored.sort(key=lambda x: (not x[0], -x[1], x[2], x[3], x[4]))
        out: list[dict[str, Any]] = []
        for holds, score, source, a, b in scored:
            text = self.new_by_path[source].text
            a, b = _widen(text, a, b)
            if b <= a or any(c["path"] == source and a < c["end"] and b > c["start"]
                             for c in out):
                continue  # an overlapping window says nothing new
            out.append({"path": source, "start": a, "end": b, "text": text[a:b],
                        "word_overlap": round(score, 2), "holds_mentions": holds})
            if len(out) == k:
                break
        return out


# ---------------------------------------------------------------------------- items


@dataclass
class ItemResult:
    qid: str
    status: str
    reason: str
    passages: list[Carried] = field(default_factory=list)
    mentions_missing: list[str] = field(default_factory=list)
    obj: dict[str, Any] = field(default_factory=dict)  # the line written to the new file
    line: int = 0

    @property
    def pending(self) -> bool:
        return self.status in ("edited", "removed", "unplaced")


def _mentions_in(mentions: Sequence[str], texts: Sequence[str]) -> list[str]:
    low = [t.lower() for t in texts]
    return [m for m in mentions if any(m.lower() in t for t in low)]


def evidence_json(doc: Document, start: int, end: int) -> dict[str, Any]:
    """``{path, quote}``, plus the offsets when the quote is not unique in its document, as
    the labelling page writes evidence."""
    quote = doc.text[start:end]
    ev: dict[str, Any] = {"path": doc.source, "quote": quote}
    if doc.text.count(quote) > 1:
        ev.update(start=start, end=end)
    return ev


def rebase_item(item: GoldenItem, original: Mapping[str, Any], resolved: ResolvedItem,
                rebaser: Rebaser, stamp: Mapping[str, Any]) -> ItemResult:
    """One item carried to the new corpus: its status and the object to write. ``stamp`` is
    added to the item's ``rebase`` record (when, from what, to what)."""
    obj = dict(original)
    errors = [p for p in resolved.problems if p.severity == "error"]
    if errors or resolved.level == "orphan":
        why = (f"{errors[0].field}: {errors[0].message}" if errors
               else resolved.orphan_reason or "nothing places its answer")
        obj["rebase"] = {**stamp, "status": "unplaced",
                         "reason": f"not placed in the old corpus either ({why})"}
        return ItemResult(item.qid, "unplaced", obj["rebase"]["reason"], obj=obj, line=item.line)

    doc_map: dict[str, str | None] = {}
    for doc_id in resolved.doc_ids:
        old = rebaser.old_by_id[doc_id]
        new = rebaser.matches[old.source].new
        doc_map[doc_id] = new.doc_id if new is not None else None
    passages = [rebaser.carry(rebaser.old_by_id[d], a, b) for d, a, b in resolved.spans]
    status = max((c.status for c in passages), key=_WORST.__getitem__, default="unchanged")
    reason = next((c.reason for c in passages if c.status == status), "")
    if not passages:  # documents only
        gone = [d for d, n in doc_map.items() if n is None]
        renamed = [d for d, n in doc_map.items() if n is not None and n != d]
        status = "removed" if gone else "moved" if renamed else "unchanged"
        reason = (f"document {gone[0]} is gone" if gone else
                  f"document {renamed[0]} renamed" if renamed else "")
    before = _mentions_in(item.answer_must_mention, [c.old.text for c in passages])
    after = _mentions_in(before, [c.new.text for c in passages if c.new is not None])
    missing = [m for m in before if m not in after]
    candidates: list[dict[str, Any]] = []
    if missing or status == "unplaced":
        # A proposal without the answer it must mention is no edit of the passage, whatever
        # the diff says: "removed" when the passage's place was deleted, else "unplaced"; the
        # reviewer gets the nearest candidates (those holding the mention first) instead.
        if missing and _WORST[status] <= _WORST["edited"]:
            # deleted: its place is gone and what was found elsewhere is no rewording of it
            gone = any(c.displaced and (c.new is None or similarity(c.old.text, c.new.text)
                                        < MIN_SIMILAR_ANYWHERE) for c in passages)
            status = "removed" if gone else "unplaced"
            reason = (f"answer_must_mention {missing[0]!r} is not in the proposed text"
                      + (" (its passage was deleted)" if gone else ""))
        for c in passages:
            lost = [m for m in missing if m.lower() in c.old.text.lower()]
            if lost or c.status == "unplaced":
                near = rebaser.matches[c.old.path].new
                candidates.extend(rebaser.candidates(c.old, lost, near.source if near else None))

    identical = all(rebaser.same(rebaser.old_by_id[d]) for d in resolved.doc_ids)
    result = ItemResult(item.qid, status, reason, passages, missing, obj, item.line)
    if status == "unchanged" and identical:
        return result  # every document it names is byte for byte the same: the line stays

    if passages:
        evidence = []
        for c, (d, a, b) in zip(passages, resolved.spans, strict=True):
            if c.new is not None:
                evidence.append(evidence_json(rebaser.new_by_path[c.new.path], c.new.start,
                                              c.new.end))
            else:  # kept as it was, so nothing is lost; the item is not scored
                evidence.append(evidence_json(rebaser.old_by_id[d], a, b))
        obj["evidence"] = evidence
    if "relevant_chunk_ids" in obj and passages:
        # Chunk ids name chunks of the old text; the evidence above now says where it is.
        obj.pop("relevant_chunk_ids")
    if "relevant_doc_ids" in obj and isinstance(obj["relevant_doc_ids"], list):
        obj["relevant_doc_ids"] = [doc_map.get(d) or d for d in obj["relevant_doc_ids"]]
    record: dict[str, Any] = {**stamp, "status": status}
    if reason:
        record["reason"] = reason
    if missing:
        record["mentions_missing"] = missing
    if candidates:
        record["candidates"] = candidates
    if "relevant_chunk_ids" in original and passages:
        record["old_chunk_ids"] = list(original["relevant_chunk_ids"])
    record["passages"] = [c.as_dict() for c in passages]
    obj["rebase"] = record
    return result


def rebase_items(items: Sequence[GoldenItem], originals: Mapping[int, Mapping[str, Any]],
                 rebaser: Rebaser, reference_chunks: Mapping[str, Chunk] | None,
                 stamp: Mapping[str, Any], file: str = "golden") -> list[ItemResult]:
    """Every item placed in the old corpus, then carried (``originals``: line -> object)."""
    corpus = CorpusIndex(rebaser.old_docs)
    out = []
    for item in items:
        resolved = resolve_item(item, corpus, reference_chunks, file)
        out.append(rebase_item(item, originals[item.line], resolved, rebaser, stamp))
    return out


def check_landing(results: Sequence[ItemResult], new_docs: Sequence[Document]) -> None:
    """Resolve every scored rewritten item in the new corpus, as a sweep will: its evidence
    must land on exactly the carried text. An item that does not is sent to review instead of
    being scored on a guess."""
    corpus = CorpusIndex(new_docs)
    for r in results:
        if r.pending or "rebase" not in r.obj:
            continue
        items, _ = parse_golden_lines(json.dumps(r.obj), "rebased")
        resolved = resolve_item(items[0], corpus, None) if items else None
        want = [(c.new.path, c.new.start, c.new.end) for c in r.passages if c.new]
        got = ([(corpus.by_id[d].source, a, b) for d, a, b in resolved.spans]
               if resolved is not None else [])
        if resolved is None or any(p.severity == "error" for p in resolved.problems) or (
                r.passages and got != want):
            r.status, r.reason = "edited", "the rewritten evidence does not land on the carried " \
                "text in the new corpus"
            r.obj["rebase"]["status"] = "edited"
            r.obj["rebase"]["reason"] = r.reason


def summary(results: Sequence[ItemResult], rebaser: Rebaser) -> dict[str, Any]:
    """Counts per status (items and passages), per old document, and the document matches."""
    items = Counter(r.status for r in results)
    passages = Counter(c.status for r in results for c in r.passages)
    per_doc: dict[str, Counter[str]] = {}
    for r in results:
        for c in r.passages:
            per_doc.setdefault(c.old.path, Counter())[c.status] += 1
    matches = rebaser.matches.values()
    return {
        "items": {s: items.get(s, 0) for s in STATUSES},
        "passages": {s: passages.get(s, 0) for s in STATUSES},
        "needs_review": sum(1 for r in results if r.pending),
        "per_document": {p: {s: c.get(s, 0) for s in STATUSES}
                         for p, c in sorted(per_doc.items())},
        "documents": {
            "old": len(rebaser.old_docs), "new": len(rebaser.new_docs),
            "same_path": sum(1 for m in matches if m.how == "path"),
            "unchanged": sum(1 for m in matches if m.how == "path" and m.new is not None
                             and m.new.text == m.old.text),
            "renamed": [{"old": m.old.source, "new": m.new.source, "similarity": m.similarity}
                        for m in matches if m.how == "content" and m.new is not None],
            "gone": sorted(m.old.source for m in matches if m.new is None),
            "added": sorted(set(rebaser.new_by_path) - {m.new.source for m in matches
                                                        if m.new is not None}),
        },
    }
