"""Import public QA / retrieval data sets into a corpus folder and a golden set.

    sweep import squad  FILE.json  --out DIR      # SQuAD v1.1 layout (also COVID-QA)
    sweep import beir   FOLDER     --out DIR [--split test] [--evidence SPANS.jsonl]
    sweep import chroma FOLDER     --out DIR      # Chroma chunking-evaluation layout

(the command's options: sweep.cli.import_cmd; `run_import` is what it calls)

Each importer is split in two: ``convert_*`` turns already-read source data into an
`ImportResult` (documents as ``(relative_path, text)`` pairs, golden items as plain dicts and a
report dict) without touching the disk, and ``import_*`` reads the source files (any fault is a
one-line `SweepError` naming the file and line or record). `write_import` then writes
``DIR/corpus/``, ``DIR/golden.jsonl`` and ``DIR/import_report.json`` and checks the result the
way a sweep will read it: the corpus through `load_corpus`, every evidence span against the
text it quotes, the golden file through `load_golden`.

Document texts are written already normalised (`normalize_text`), so the offsets computed
here are the offsets the loader sees. Offsets given by the source against the raw text are
mapped through the normalisation; a label that is not at its stated offset is re-located to
the nearest occurrence of its text ("moved"), and one whose text does not occur is reported
("not placed"), never silently dropped.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import time
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from sweep.common.errors import SweepError
from sweep.data.corpus import load_corpus, normalize_text, slugify_path
from sweep.data.golden import load_golden

FORMATS = ("squad", "beir", "chroma")
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
class _Report:
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


class _Spans:
    """Evidence spans of one question: placed, counted, de-duplicated."""

    def __init__(self, report: _Report, qid: str) -> None:
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


def _item(qid: str, question: str, mention: list[str], doc_ids: list[str],
          evidence: list[dict[str, Any]]) -> dict[str, Any]:
    return {"qid": qid, "question": question, "relevant_chunk_ids": [],
            "answer_must_mention": mention, "relevant_doc_ids": doc_ids, "evidence": evidence}


def _finish(rep: _Report, documents: list[tuple[str, str]], items: list[dict[str, Any]]) -> None:
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


def _progress(iterable: Iterable[Any], desc: str, total: int | None = None) -> Iterator[Any]:
    # disable=None: a bar on a terminal, silence in logs and tests.
    return iter(tqdm(iterable, desc=desc, total=total, unit="", leave=False, disable=None))


def _one_line(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- reading helpers


def _read_bytes(path: Path, what: str) -> bytes:
    if not path.exists():
        raise SweepError(f"{what} not found: {path}")
    if path.is_dir():
        raise SweepError(f"{path}: is a folder, expected a {what}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SweepError(f"{path}: cannot read ({exc.strerror})") from None


def _decode(path: Path, data: bytes, *, keep_bom: bool = False) -> str:
    try:
        return data.decode("utf-8" if keep_bom else "utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SweepError(f"{path}:{line}: not valid UTF-8 (offset {exc.start})") from None


def _require_object(value: Any, where: str) -> None:
    if not isinstance(value, dict):
        raise SweepError(f"{where}: expected an object, got {type(value).__name__}")


def _read_json(path: Path, what: str) -> Any:
    text = _decode(path, _read_bytes(path, what))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SweepError(f"{path}:{exc.lineno}:{exc.colno}: malformed JSON ({exc.msg})") from None
    except RecursionError:
        raise SweepError(f"{path}: malformed JSON (nested too deeply)") from None


def _read_jsonl(path: Path, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    text = _decode(path, _read_bytes(path, what))
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


def _field(obj: dict[str, Any], key: str, where: str, kinds: tuple[type, ...],
           *, optional: bool = False) -> Any:
    """``obj[key]`` checked against ``kinds`` (bools are never ints), or a `SweepError`."""
    if key not in obj or obj[key] is None:
        if optional:
            return None
        raise SweepError(f"{where}: missing `{key}`")
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise SweepError(f"{where}: `{key}` must be {names}, got {_one_line(value)}")
    return value


def _id_field(obj: dict[str, Any], key: str, where: str) -> str:
    value = str(_field(obj, key, where, (str, int)))
    if not value.strip():
        raise SweepError(f"{where}: `{key}` is empty")
    return value


# --------------------------------------------------------------------------- SQuAD


def convert_squad(data: Any, source: str) -> ImportResult:
    """SQuAD v1.1 layout (``{"data": [{"title", "paragraphs": [{"context", "qas"}]}]}``).

    One document per article: its contexts joined by a blank line, answers shifted with them.
    COVID-QA's variant (``document_id`` on paragraphs, no title, integer ids) is covered.
    SQuAD v2's unanswerable questions (no answers) are reported and left out.
    """
    rep = _Report("squad", source)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SweepError(f"{source}: expected a JSON object with a `data` list (SQuAD layout)")
    slugs = SlugRegistry()
    documents: list[tuple[str, str]] = []
    items: list[dict[str, Any]] = []
    seen_qids: set[str] = set()
    articles = data["data"]
    for a_index, article in enumerate(_progress(articles, "articles")):
        where = f"{source}: data[{a_index}]"
        _require_object(article, where)
        paragraphs = _field(article, "paragraphs", where, (list,))
        title = article.get("title")
        if not isinstance(title, str | int) or isinstance(title, bool) or not str(title).strip():
            title = next((p.get("document_id") for p in paragraphs if isinstance(p, dict)
                          and p.get("document_id") not in (None, "")), None)
        title = str(title).strip() if title is not None else f"article-{a_index}"
        doc_id = slugs.unique(safe_slug(title, fallback=f"article-{a_index}"))

        contexts: list[tuple[str, OffsetMap]] = []
        for p_index, paragraph in enumerate(paragraphs):
            p_where = f"{where}.paragraphs[{p_index}]"
            _require_object(paragraph, p_where)
            raw = _field(paragraph, "context", p_where, (str,))
            contexts.append((raw, OffsetMap(raw)))
        bases, pos = [], 0
        for _, omap in contexts:
            bases.append(pos)
            pos += len(omap.clean) + 2
        doc_text = "\n\n".join(omap.clean for _, omap in contexts)
        if not doc_text.strip():
            n = sum(len(p.get("qas") or []) for p in paragraphs)
            rep.notes.append(f"data[{a_index}] ({title!r}): empty article, skipped with its "
                             f"{n} question(s)")
        else:
            documents.append((f"{doc_id}.txt", doc_text))

        for p_index, paragraph in enumerate(paragraphs):
            p_where = f"{where}.paragraphs[{p_index}]"
            raw, omap = contexts[p_index]
            for q_index, qa in enumerate(_field(paragraph, "qas", p_where, (list,))):
                q_where = f"{p_where}.qas[{q_index}]"
                _require_object(qa, q_where)
                rep.bump("questions_read")
                qid = _id_field(qa, "id", q_where)
                question = _field(qa, "question", q_where, (str,)).strip()
                answers = _field(qa, "answers", q_where, (list,))
                spans = _Spans(rep, qid)
                if doc_text.strip():
                    for an_index, answer in enumerate(answers):
                        an_where = f"{q_where}.answers[{an_index}]"
                        _require_object(answer, an_where)
                        text = _field(answer, "text", an_where, (str,))
                        start = _field(answer, "answer_start", an_where, (int,))
                        spans.add(doc_id, bases[p_index], omap.clean,
                                  clean_text(text), omap(start))
                reason = _drop_reason(qid, question, seen_qids, answers, spans, doc_text)
                if reason:
                    rep.bump("questions_dropped")
                    rep.drop("question", qid, question, reason)
                    continue
                seen_qids.add(qid)
                items.append(_item(qid, question, must_mention(spans.texts), [doc_id],
                                   spans.evidence))
    _finish(rep, documents, items)
    return ImportResult("squad", source, documents, items, rep.as_dict())


def _drop_reason(qid: str, question: str, seen: set[str], answers: list[Any], spans: _Spans,
                 doc_text: str) -> str | None:
    if qid in seen:
        return "duplicate qid"
    if not question:
        return "empty question"
    if not doc_text.strip():
        return "its article has no text"
    if not answers:
        return "no answers (unanswerable question)"
    if not spans.evidence:
        return "none of its answers could be placed"
    return None


def import_squad(src: str | Path) -> ImportResult:
    path = Path(src)
    return convert_squad(_read_json(path, "SQuAD JSON file"), str(path))


# --------------------------------------------------------------------------- BEIR


@dataclass(frozen=True)
class BeirDoc:
    doc_id: str  # the slug used in the golden set
    title_len: int  # characters before the `text` field in the written document (0 or title+2)
    text_map: OffsetMap  # the `text` field, raw -> normalised


def convert_beir(
    corpus: Iterable[tuple[str, dict[str, Any]]],
    queries: Iterable[tuple[str, dict[str, Any]]],
    qrels: Iterable[tuple[str, str, str, float]],
    evidence: Iterable[tuple[str, dict[str, Any]]] | None,
    source: str,
    *,
    split: str = "test",
    evidence_source: str | None = None,
) -> ImportResult:
    """BEIR layout. ``corpus``/``queries``/``evidence`` yield ``(where, object)`` (``where`` is
    ``file:line`` for messages), ``qrels`` yields ``(where, query_id, corpus_id, score)``."""
    rep = _Report("beir", source)
    rep.extra = {"split": split, "evidence_file": evidence_source}
    for key in ("queries_without_qrels", "qrels_read", "qrels_positive", "qrels_unknown_doc",
                "qrels_unknown_query", "documents_skipped_empty", "evidence_outside_split"):
        rep.counts[key] = 0
    documents, docs = _beir_documents(corpus, rep)
    query_text = _beir_queries(queries, rep)
    positive = _beir_positive(qrels, rep, query_text, docs)
    spans_by_query = _beir_evidence(evidence or (), rep, docs, positive)
    items = _beir_items(query_text, positive, spans_by_query, rep)
    _finish(rep, documents, items)
    rep.counts["questions_with_evidence"] = sum(1 for i in items if i["evidence"])
    return ImportResult("beir", source, documents, items, rep.as_dict())


def _beir_documents(corpus: Iterable[tuple[str, dict[str, Any]]], rep: _Report
                    ) -> tuple[list[tuple[str, str]], dict[str, BeirDoc]]:
    """The documents to write (title, a blank line, text; normalised) and each BEIR _id's
    slug and offset map; empty documents are reported, duplicate _ids keep the first."""
    slugs = SlugRegistry()
    documents: list[tuple[str, str]] = []
    docs: dict[str, BeirDoc] = {}
    renamed: dict[str, str] = {}
    for where, obj in _progress(corpus, "documents"):
        _id = _id_field(obj, "_id", where)
        text = _field(obj, "text", where, (str,), optional=True) or ""
        title = _field(obj, "title", where, (str,), optional=True) or ""
        if _id in docs:
            rep.notes.append(f"{where}: duplicate _id {_id!r}, the first one is kept")
            continue
        omap = OffsetMap(text)
        title = clean_text(title) if title.strip() else ""
        prefix = f"{title}\n\n" if title else ""
        body = prefix + omap.clean
        if not body.strip():
            rep.bump("documents_skipped_empty")
            rep.drop("document", None, _id, "empty document (no title, no text)")
            continue
        doc_id = slugs.unique(safe_slug(_id))
        if doc_id != _id:
            renamed[_id] = doc_id
        docs[_id] = BeirDoc(doc_id, len(prefix), omap)
        documents.append((f"{doc_id}.txt", body))
    if renamed:
        rep.extra["renamed_doc_ids"] = renamed
    return documents, docs


def _beir_queries(queries: Iterable[tuple[str, dict[str, Any]]], rep: _Report
                  ) -> dict[str, str]:
    query_text: dict[str, str] = {}
    for where, obj in queries:
        qid = _id_field(obj, "_id", where)
        if qid in query_text:
            rep.notes.append(f"{where}: duplicate query _id {qid!r}, the first one is kept")
            continue
        query_text[qid] = _field(obj, "text", where, (str,)).strip()
    return query_text


def _beir_positive(qrels: Iterable[tuple[str, str, str, float]], rep: _Report,
                   query_text: dict[str, str], docs: dict[str, BeirDoc]
                   ) -> dict[str, dict[str, None]]:
    """Each query's relevant documents (score > 0), as slugs in qrels order; a qrel naming an
    unknown query or document is reported."""
    positive: dict[str, dict[str, None]] = {}
    for _where, qid, cid, score in qrels:
        rep.bump("qrels_read")
        if score <= 0:
            continue
        rep.bump("qrels_positive")
        if qid not in query_text:
            rep.bump("qrels_unknown_query")
            rep.drop("qrel", qid, cid, f"query-id {qid!r} is not in queries.jsonl")
            continue
        positive.setdefault(qid, {})
        if cid not in docs:
            rep.bump("qrels_unknown_doc")
            rep.drop("qrel", qid, cid, f"corpus-id {cid!r} is not in corpus.jsonl (dropped)")
            continue
        positive[qid][docs[cid].doc_id] = None
    return positive


def _beir_evidence(evidence: Iterable[tuple[str, dict[str, Any]]], rep: _Report,
                   docs: dict[str, BeirDoc], positive: dict[str, dict[str, None]]
                   ) -> dict[str, _Spans]:
    """The evidence spans of the split's queries, placed in the written documents."""
    spans_by_query: dict[str, _Spans] = {}
    for where, obj in evidence:
        qid = _id_field(obj, "query_id", where)
        cid = _id_field(obj, "doc_id", where)
        start = _field(obj, "start", where, (int,))
        _field(obj, "end", where, (int,))
        text = _field(obj, "text", where, (str,))
        if qid not in positive:
            rep.bump("evidence_outside_split")
            continue
        spans = spans_by_query.setdefault(qid, _Spans(rep, qid))
        doc = docs.get(cid)
        if doc is None:
            rep.bump("spans_read")
            rep.bump("spans_not_placed")
            rep.drop("span", qid, text, f"{where}: doc_id {cid!r} is not in corpus.jsonl")
            continue
        if doc.doc_id not in positive[qid]:
            rep.notes.append(f"{where}: evidence in {cid!r}, which is not among query "
                             f"{qid!r}'s qrels; kept (the document counts as relevant)")
        spans.add(doc.doc_id, doc.title_len, doc.text_map.clean, clean_text(text),
                  doc.text_map(start), what="evidence")
    return spans_by_query


def _beir_items(query_text: dict[str, str], positive: dict[str, dict[str, None]],
                spans_by_query: dict[str, _Spans], rep: _Report) -> list[dict[str, Any]]:
    """One golden item per query with a relevant document, in queries.jsonl order."""
    items: list[dict[str, Any]] = []
    for qid, question in _progress(query_text.items(), "queries", total=len(query_text)):
        rep.bump("questions_read")
        if qid not in positive:
            rep.bump("queries_without_qrels")
            continue
        spans = spans_by_query.get(qid) or _Spans(rep, qid)
        doc_ids = list(positive[qid])
        doc_ids += [e["doc_id"] for e in spans.evidence if e["doc_id"] not in positive[qid]]
        reason = ("empty question" if not question else
                  "none of its relevant documents is in the corpus" if not doc_ids else None)
        if reason:
            rep.bump("questions_dropped")
            rep.drop("question", qid, question, reason)
            continue
        items.append(_item(qid, question, [], list(dict.fromkeys(doc_ids)), spans.evidence))
    return items


def _beir_qrels(path: Path) -> Iterator[tuple[str, str, str, float]]:
    text = _decode(path, _read_bytes(path, "qrels file"))
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        cols = line.split("\t") if "\t" in line else line.split()
        if lineno == 1 and [c.strip().lower() for c in cols[:2]] == ["query-id", "corpus-id"]:
            continue
        if len(cols) != 3:
            raise SweepError(f"{path}:{lineno}: expected 3 tab-separated columns "
                             f"(query-id corpus-id score), got {len(cols)}")
        qid, cid, score_text = (c.strip() for c in cols)
        try:
            score = float(score_text)
        except ValueError:
            raise SweepError(f"{path}:{lineno}: score must be a number, got "
                             f"{_one_line(score_text)}") from None
        if not qid or not cid:
            raise SweepError(f"{path}:{lineno}: empty query-id or corpus-id")
        yield f"{path}:{lineno}", qid, cid, score


def import_beir(src: str | Path, *, split: str = "test",
                evidence: str | Path | None = None) -> ImportResult:
    root = Path(src)
    if not root.is_dir():
        raise SweepError(f"BEIR folder not found: {root}" if not root.exists() else
                         f"{root}: expected a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)")
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.exists():
        found = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise SweepError(f"qrels file not found: {qrels_path}",
                         hint=f"splits present: {', '.join(found) or 'none'}; use --split")
    auto = False
    if evidence is None and (root / EVIDENCE_FILE_NAME).is_file():
        evidence, auto = root / EVIDENCE_FILE_NAME, True
    ev_path = Path(evidence) if evidence is not None else None
    if ev_path is not None and not ev_path.is_file():
        raise SweepError(f"evidence file not found: {ev_path}")

    def tagged(path: Path, what: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for lineno, obj in _read_jsonl(path, what):
            yield f"{path}:{lineno}", obj

    # Read everything before converting, so a malformed file fails before any work is shown.
    corpus = list(tagged(root / "corpus.jsonl", "BEIR corpus file"))
    queries = list(tagged(root / "queries.jsonl", "BEIR queries file"))
    qrels = list(_beir_qrels(qrels_path))
    ev_rows = list(tagged(ev_path, "evidence file")) if ev_path is not None else None
    result = convert_beir(corpus, queries, qrels, ev_rows, str(root), split=split,
                          evidence_source=None if ev_path is None else str(ev_path))
    result.report["evidence_auto_detected"] = auto
    return result


# --------------------------------------------------------------------------- Chroma


def convert_chroma(rows: Iterable[tuple[str, dict[str, str]]], corpora: dict[str, str],
                   source: str) -> ImportResult:
    """Chroma chunking-evaluation layout. ``rows`` yields ``(where, csv_row)``; ``corpora``
    maps each corpus_id to its file text as read by Python (UTF-8, universal newlines)."""
    rep = _Report("chroma", source)
    maps: dict[str, OffsetMap] = {}
    doc_ids: dict[str, str] = {}
    items: list[dict[str, Any]] = []
    for row_number, (where, row) in enumerate(_progress(rows, "questions"), start=1):
        rep.bump("questions_read")
        qid = f"chroma-{row_number}"
        corpus_id = (row.get("corpus_id") or "").strip()
        question = (row.get("question") or "").strip()
        try:
            refs = json.loads(row.get("references") or "")
        except json.JSONDecodeError as exc:
            raise SweepError(f"{where}: references: malformed JSON ({exc.msg} at column "
                             f"{exc.colno})") from None
        except RecursionError:
            raise SweepError(f"{where}: references: malformed JSON (nested too deeply)") \
                from None
        if not isinstance(refs, list):
            raise SweepError(f"{where}: references: expected a JSON list, got "
                             f"{type(refs).__name__}")
        if corpus_id not in corpora:
            raise SweepError(f"{where}: corpus_id {corpus_id!r} has no corpus file")
        if corpus_id not in maps:
            maps[corpus_id] = OffsetMap(corpora[corpus_id])
            doc_ids[corpus_id] = slugify_path(f"{corpus_id}.md")
        omap, doc_id = maps[corpus_id], doc_ids[corpus_id]
        spans = _Spans(rep, qid)
        for r_index, ref in enumerate(refs):
            r_where = f"{where}: references[{r_index}]"
            _require_object(ref, r_where)
            content = _field(ref, "content", r_where, (str,))
            start = _field(ref, "start_index", r_where, (int,))
            end = _field(ref, "end_index", r_where, (int,))
            if omap.raw[start:end] != content:
                rep.notes.append(f"{r_where}: text at {start}:{end} of {corpus_id} is not the "
                                 "excerpt; re-located")
            spans.add(doc_id, 0, omap.clean, clean_text(content), omap(start), what="excerpt")
        reason = ("empty question" if not question else
                  "no references" if not refs else
                  "none of its excerpts could be placed" if not spans.evidence else None)
        if reason:
            rep.bump("questions_dropped")
            rep.drop("question", qid, question, reason)
            continue
        items.append(_item(qid, question, [], [doc_id], spans.evidence))
    seen: dict[str, str] = {}
    for corpus_id, doc_id in doc_ids.items():
        if doc_id in seen:
            raise SweepError(f"{source}: corpora {seen[doc_id]!r} and {corpus_id!r} would get "
                             f"the same doc_id {doc_id!r}")
        seen[doc_id] = corpus_id
    documents = [(f"{cid}.md", maps[cid].clean) for cid in doc_ids]
    _finish(rep, documents, items)
    return ImportResult("chroma", source, documents, items, rep.as_dict())


_SAFE_CORPUS_ID = re.compile(r"^[^/\\.][^/\\]*$")


def import_chroma(src: str | Path) -> ImportResult:
    root = Path(src)
    if not root.is_dir():
        raise SweepError(f"Chroma folder not found: {root}" if not root.exists() else
                         f"{root}: expected a folder with questions_df.csv and corpora/")
    csv_path = root / "questions_df.csv"
    text = _decode(csv_path, _read_bytes(csv_path, "questions file"))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[tuple[str, dict[str, str]]] = []
    try:
        missing = [c for c in ("question", "references", "corpus_id")
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise SweepError(f"{csv_path}:1: missing column(s) {', '.join(missing)} "
                             f"(header: {_one_line(reader.fieldnames, 100)})")
        for n, row in enumerate(reader, start=1):
            if None in row or any(v is None for v in row.values()):
                raise SweepError(f"{csv_path}:{reader.line_num}: row {n}: wrong number of "
                                 "columns")
            rows.append((f"{csv_path}:{reader.line_num}: row {n}", row))
    except csv.Error as exc:
        raise SweepError(f"{csv_path}:{reader.line_num}: malformed CSV ({exc})") from None

    corpora: dict[str, str] = {}
    for where, row in rows:
        corpus_id = (row.get("corpus_id") or "").strip()
        if corpus_id in corpora:
            continue
        if not _SAFE_CORPUS_ID.match(corpus_id):
            raise SweepError(f"{where}: corpus_id {corpus_id!r} is not a plain file name")
        path = root / "corpora" / f"{corpus_id}.md"
        # Chroma reads corpora with open(path, encoding="utf-8"): universal newlines, BOM kept.
        raw = _decode(path, _read_bytes(path, "corpus file"), keep_bom=True)
        corpora[corpus_id] = raw.replace("\r\n", "\n").replace("\r", "\n")
    return convert_chroma(rows, corpora, str(root))


# --------------------------------------------------------------------------- writing


def _prepare_out(out: Path, source: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out {out} is a file, not a folder")
    corpus_dir = out / "corpus"
    src = source.resolve()
    if src == corpus_dir.resolve() or corpus_dir.resolve() in src.parents:
        raise SweepError(f"--out {out}: the source {source} is inside {corpus_dir}")
    if out.exists() and any(out.iterdir()):
        if not force:
            raise SweepError(f"--out {out} is not empty",
                             hint="pick a new folder, or --force to replace its corpus/, "
                                  "golden.jsonl and import_report.json")
        if corpus_dir.is_dir():
            shutil.rmtree(corpus_dir)
        elif corpus_dir.exists():
            corpus_dir.unlink()
    corpus_dir.mkdir(parents=True, exist_ok=True)


def verify_import(result: ImportResult, out: Path) -> None:
    """Read the written files back as a sweep will and check every label against them."""
    docs = load_corpus(out / "corpus")
    if len(docs) != len(result.documents):
        raise SweepError(f"{out / 'corpus'}: {len(docs)} documents load, "
                         f"{len(result.documents)} were written")
    by_id = {d.doc_id: d for d in docs}
    for item in result.items:
        for doc_id in item["relevant_doc_ids"]:
            if doc_id not in by_id:
                raise SweepError(f"{out}: item {item['qid']}: doc_id {doc_id!r} did not load")
        for ev in item["evidence"]:
            doc = by_id.get(ev["doc_id"])
            if doc is None or doc.text[ev["start"]:ev["end"]] != ev["quote"]:
                raise SweepError(f"{out}: item {item['qid']}: evidence {ev['doc_id']}:"
                                 f"{ev['start']}:{ev['end']} does not read back as its quote")
    golden = load_golden(out / "golden.jsonl")
    if golden.errors:
        raise SweepError(f"written golden file has errors: {golden.errors[0]}")
    if len(golden.items) != len(result.items):
        raise SweepError(f"{out / 'golden.jsonl'}: {len(golden.items)} items parse, "
                         f"{len(result.items)} were written")


def write_import(result: ImportResult, out: str | Path, *, force: bool = False) -> dict[str, Any]:
    """Write corpus, golden set and report into ``out``; check them; return the report."""
    out = Path(out)
    _prepare_out(out, Path(result.source), force)
    corpus_dir = out / "corpus"
    for rel, text in _progress(result.documents, "writing documents"):
        path = corpus_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    with (out / "golden.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for item in result.items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    verify_import(result, out)
    report = dict(result.report)
    report["out"] = str(out)
    (out / "import_report.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report


def summary(report: dict[str, Any]) -> str:
    c = report["counts"]
    lines = [
        f"imported {report['format']} from {report['source']} -> {report.get('out', '?')}",
        f"  documents: {c['documents']}",
        f"  questions: {c['questions_written']} written of {c['questions_read']} read"
        + (f" ({c['questions_dropped']} dropped, see import_report.json)"
           if c["questions_dropped"] else ""),
    ]
    if report["format"] == "beir":
        lines[-1] += (f"; {c['queries_without_qrels']} without a positive qrel in "
                      f"split {report['split']!r} skipped")
        lines.append(f"  qrels: {c['qrels_positive']} positive of {c['qrels_read']}; "
                     f"{c['qrels_unknown_doc']} with an unknown corpus-id, "
                     f"{c['qrels_unknown_query']} with an unknown query-id")
        ev = report.get("evidence_file")
        if ev:
            how = " (auto-detected)" if report.get("evidence_auto_detected") else ""
            lines.append(f"  evidence: {ev}{how}; {c['questions_with_evidence']} questions "
                         "with spans, the rest document-level only")
        else:
            lines.append("  evidence: none (document-level relevance only)")
    lines.append(
        f"  evidence spans: {c['spans_written']} written of {c['spans_read']} read "
        f"({c['spans_at_offset']} at the stated offset, {c['spans_moved']} re-located, "
        f"{c['spans_duplicate']} duplicates merged, {c['spans_not_placed']} not placed)")
    if report.get("seconds") is not None:
        lines.append(f"  took {report['seconds']:.1f} s")
    return "\n".join(lines)


def run_import(fmt: str, src: str | Path, out: str | Path, *, force: bool = False,
               split: str = "test", evidence: str | Path | None = None) -> dict[str, Any]:
    if fmt != "beir" and evidence is not None:
        raise SweepError("--evidence is only for the beir format")
    started = time.perf_counter()
    if fmt == "squad":
        result = import_squad(src)
    elif fmt == "beir":
        result = import_beir(src, split=split, evidence=evidence)
    elif fmt == "chroma":
        result = import_chroma(src)
    else:
        raise SweepError(f"unknown import format {fmt!r} (allowed: {', '.join(FORMATS)})")
    result.report["seconds"] = round(time.perf_counter() - started, 3)
    report = write_import(result, out, force=force)
    report["seconds"] = round(time.perf_counter() - started, 3)
    (Path(out) / "import_report.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report
