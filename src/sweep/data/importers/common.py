"""What every importer shares: text clean-up and offset mapping, placing quotes, slugs, the
result and its report, and reading source files with one-line errors."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from sweep.common.errors import SweepError
from sweep.common.files import read_bytes_regular
from sweep.data.corpus import normalize_text

EVIDENCE_FILE_NAME = "evidence_spans.jsonl"
MAX_SLUG = 80

# --------------------------------------------------------------------------- text helpers

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`normalize_text`, plus what would stop the text from round-tripping through a file.

    Every leading BOM goes (the loader strips one), lone surrogates (possible in JSON) become
    U+FFFD and NUL becomes a space (the loader takes a file with NUL for binary). Both
    replacements keep the length, so they never move an offset.
    """
    text = normalize_text(_LONE_SURROGATE.sub("\ufffd", text).replace("\x00", " "))
    return text.lstrip("\ufeff")


class OffsetMap:
    """Map a code-point offset in ``raw`` to the same place in ``clean_text(raw)``.

    Offsets before the first character the normalisation changed stay where they are; later
    ones are mapped as the length of the normalised prefix (exact for BOMs, CRLFs and NFC
    changes that do not straddle the offset; the caller re-locates the text when it is not).
    """

    def __init__(self, raw: str, clean: str | None = None) -> None:
        self.raw = raw
        self.clean = clean_text(raw) if clean is None else clean
        self.unchanged = self.clean == raw
        self.prefix = len(raw) if self.unchanged else _common_prefix(raw, self.clean)

    def __call__(self, offset: int) -> int:
        offset = max(0, min(offset, len(self.raw)))
        if offset <= self.prefix:
            return offset
        return len(clean_text(self.raw[:offset]))


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # largest n with a[:n] == b[:n]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def place(text: str, quote: str, stated: int) -> tuple[int, bool] | None:
    """Where ``quote`` is in ``text``: ``(start, moved)``, or None when it does not occur.

    At ``stated`` when it is there (``moved`` False); otherwise the occurrence nearest to
    ``stated`` (the earlier one on a tie).
    """
    if not quote:
        return None
    if stated >= 0 and text.startswith(quote, stated):
        return stated, False
    best: int | None = None
    pos = text.find(quote)
    while pos >= 0:
        if best is None or abs(pos - stated) < abs(best - stated):
            best = pos
        elif pos > stated:
            break  # every later occurrence is farther still
        pos = text.find(quote, pos + 1)
    return None if best is None else (best, True)


def safe_slug(name: str, fallback: str = "doc") -> str:
    """A file-name stem that `slugify_path` keeps as it is: lowercase ASCII letters, digits,
    ``_`` and ``-`` (accents folded, anything else a ``-``), at most `MAX_SLUG` characters."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9_]+", "-", folded.lower()).strip("-")[:MAX_SLUG].strip("-")
    if not slug:
        slug = re.sub(r"[^a-z0-9_]+", "-", fallback.lower()).strip("-") or "doc"
    return slug


class SlugRegistry:
    """Hands out unique slugs (``name``, ``name-2``, ``name-3``...)."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def unique(self, slug: str) -> str:
        candidate, n = slug, 1
        while candidate in self.used:
            n += 1
            candidate = f"{slug}-{n}"
        self.used.add(candidate)
        return candidate


# --------------------------------------------------------------------------- result + report


@dataclass
class ImportResult:
    """What an importer produced, before anything is written."""

    format: str
    source: str
    documents: list[tuple[str, str]]  # (path relative to DIR/corpus, normalised text)
    items: list[dict[str, Any]]  # golden items, in file order
    report: dict[str, Any]


COUNT_KEYS = (
    "documents", "questions_read", "questions_written", "questions_dropped", "spans_read",
    "spans_at_offset", "spans_moved", "spans_not_placed", "spans_duplicate", "spans_written",
)


@dataclass
class Report:
    format: str
    source: str
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))
    not_placed: list[dict[str, Any]] = field(default_factory=list)
    moved: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def drop(self, kind: str, qid: Any, text: str, reason: str) -> None:
        self.not_placed.append({"kind": kind, "qid": None if qid is None else str(qid),
                                "text": text, "reason": reason})

    def bump(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "source": self.source, **self.extra,
                "counts": self.counts, "not_placed": self.not_placed, "moved": self.moved,
                "notes": self.notes}


class Spans:
    """Evidence spans of one question: placed, counted, de-duplicated."""

    def __init__(self, report: Report, qid: str) -> None:
        self.report, self.qid = report, qid
        self.evidence: list[dict[str, Any]] = []
        self.texts: list[str] = []  # the placed quotes, for answer_must_mention
        self._seen: set[tuple[str, int, int]] = set()

    def add(self, doc_id: str, base: int, region: str, quote: str, stated: int,
            what: str = "answer") -> bool:
        """Place ``quote`` in ``region`` (the part of the document that starts at offset
        ``base``) near the region offset ``stated``. Returns whether it was placed."""
        rep = self.report
        rep.bump("spans_read")
        if not quote.strip():
            rep.bump("spans_not_placed")
            rep.drop("span", self.qid, quote, f"empty {what} text")
            return False
        found = place(region, quote, stated)
        if found is None:
            rep.bump("spans_not_placed")
            rep.drop("span", self.qid, quote, f"{what} text does not occur in {doc_id}")
            return False
        start, moved = found
        start += base
        end = start + len(quote)
        if moved:
            rep.bump("spans_moved")
            rep.moved.append({"qid": self.qid, "doc_id": doc_id, "text": quote,
                              "stated_start": base + stated, "start": start,
                              "shift": start - base - stated})
        else:
            rep.bump("spans_at_offset")
        self.texts.append(quote)
        key = (doc_id, start, end)
        if key in self._seen:
            rep.bump("spans_duplicate")
            return True
        self._seen.add(key)
        self.evidence.append({"doc_id": doc_id, "start": start, "end": end, "quote": quote})
        return True


def must_mention(texts: Sequence[str]) -> list[str]:
    """The answer to require in a generated answer, from a question's answer texts.

    All equal (ignoring case and surrounding whitespace): that text. Otherwise the shortest
    text that occurs, case-insensitively, inside every other one. Otherwise nothing.
    """
    stripped = [t.strip() for t in texts if t.strip()]
    if not stripped:
        return []
    lowered = [t.lower() for t in stripped]
    if len(set(lowered)) == 1:
        return [stripped[0]]
    for i in sorted(range(len(stripped)), key=lambda j: (len(stripped[j]), j)):
        if all(lowered[i] in other for other in lowered):
            return [stripped[i]]
    return []


def golden_item(qid: str, question: str, mention: list[str], doc_ids: list[str],
          evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {"qid": qid, "question": question, "relevant_chunk_ids": [],
            "answer_must_mention": mention, "relevant_doc_ids": doc_ids, "evidence": evidence}


def mark_benchmark(items: list[dict[str, Any]], source: str) -> None:
    """Every imported item is a public benchmark's question (golden.SOURCES), with the file it
    came from: scored apart from a team's own questions when the two are mixed."""
    for item in items:
        item["source"] = "benchmark"
        item["source_ref"] = source


def finish_report(rep: Report, documents: list[tuple[str, str]], items: list[dict[str, Any]]) -> None:
    rep.counts["documents"] = len(documents)
    rep.counts["questions_written"] = len(items)
    # Spans of written items only: a dropped question (duplicate qid...) takes its spans along.
    rep.counts["spans_written"] = sum(len(item["evidence"]) for item in items)
    first: dict[str, str] = {}
    repeats = 0
    for item in items:
        key = " ".join(item["question"].lower().split())
        if key in first:
            repeats += 1
        else:
            first[key] = item["qid"]
    rep.counts["questions_repeated"] = repeats
    if repeats:
        rep.notes.append(f"{repeats} question(s) repeat the text of an earlier one (kept; "
                         "`sweep validate` warns about them)")


def progress(iterable: Iterable[Any], desc: str, total: int | None = None) -> Iterator[Any]:
    # disable=None: a bar on a terminal, silence in logs and tests.
    return iter(tqdm(iterable, desc=desc, total=total, unit="", leave=False, disable=None))


def one_line(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- reading helpers


def read_bytes(path: Path, what: str) -> bytes:
    if not path.exists():
        raise SweepError(f"{what} not found: {path}")
    if path.is_dir():
        raise SweepError(f"{path}: is a folder, expected a {what}")
    try:
        return read_bytes_regular(path)
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror})") from None


def decode(path: Path, data: bytes, *, keep_bom: bool = False) -> str:
    try:
        return data.decode("utf-8" if keep_bom else "utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SweepError(f"{path}:{line}: not valid UTF-8 (offset {exc.start})") from None


def require_object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise SweepError(f"{where}: expected an object, got {type(value).__name__}")


def read_json(path: Path, what: str) -> Any:
    text = decode(path, read_bytes(path, what))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SweepError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON ({exc.msg})") from None
    except RecursionError:
        raise SweepError(f"{path}: malformed JSON (nested too deeply)") from None


def read_jsonl(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    text = decode(path, read_bytes(path, what))
    # split on "\n" only: JSON strings may hold U+2028 and friends, which splitlines() breaks on
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SweepError(f"{path}:{lineno}: malformed JSON ({exc.msg} at column "
                             f"{exc.colno})") from None
        except RecursionError:
            raise SweepError(f"{path}:{lineno}: malformed JSON (nested too deeply)") from None
        if not isinstance(obj, dict):
            raise SweepError(f"{path}:{lineno}: expected a JSON object, got "
                             f"{type(obj).__name__}")
        yield lineno, obj


def get_field(obj: dict[str, Any], key: str, where: str, kinds: tuple[type, ...],
           *, optional: bool = False) -> Any:
    """``obj[key]`` checked against ``kinds`` (bools are never ints), or a `SweepError`."""
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise SweepError(f"{where}: missing `{key}`")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise SweepError(f"{where}: `{key}` must be {names}, got {one_line(value)}")
    return value


def get_id(obj: dict[str, Any], key: str, where: str) -> str:
    value = str(get_field(obj, key, where, (str, int)))
    if not value.strip():
        raise SweepError(f"{where}: `{key}` is empty")
    return value
