"""The labelling page's state and operations, without HTTP: search, checks, save, list.

Everything the page can do goes through `LabelApp`, so tests can call it directly and the
HTTP layer (`server.py`) only routes, checks headers and encodes.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from sweep.chunking.chunkers import Chunk, ChunkSpec
from sweep.chunking.reference import load_golden, load_reference
from sweep.common.errors import SweepError
from sweep.common.paths import resolve_user_path
from sweep.common.textcheck import clean_text, control_char
from sweep.config.specs import Bm25Spec, JobSpec
from sweep.data import drift
from sweep.data.corpus import Document, corpus_fingerprint
from sweep.data.golden import NEEDS, reference_path
from sweep.evaluation.relevance import CorpusIndex, resolve_item
from sweep.evaluation.validate import NumberIndex, check_golden
from sweep.label import review
from sweep.label.checks import Span, label_warnings, occurrences, suggest_mentions, trim
from sweep.label.queue import LabelQueue
from sweep.label.store import Entry, GoldenFile, StaleError
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.ranking import lexical_search, tiebreak_order, top_k

log = logging.getLogger(__name__)

MAX_EVIDENCE = 50
MAX_MENTIONS = 50
MAX_TEXT = 10_000  # characters of a question, a note or a mention


def page_label(doc: Document, start: int, end: int) -> str:
    """"page 41" or "pages 41-42" for a span of a PDF document ("" for other formats): the
    page map comes from the parser (`Document.pages`), as in per_question.csv."""
    first = doc.page_at(start)
    if first is None:
        return ""
    last = doc.page_at(max(start, end - 1)) or first
    return f"page {first}" if last == first else f"pages {first}\u2013{last}"


@dataclass
class LabelSettings:
    """The page's settings: the `JobSpec` of the sweep's configuration (its corpus read as the
    sweep reads it, its chunking, BM25, caches and tracking store; nothing restated here) and
    the passages shown per retriever."""

    job: JobSpec
    top: int = 8
    # The chunking shown and used for chunk ids when the golden set has no sidecar yet: the
    # configuration's, without a header (chunk ids name spans, not vectors).
    chunk: ChunkSpec = field(init=False)

    def __post_init__(self) -> None:
        self.chunk = dataclasses.replace(self.job.chunking.spec, header="none")

    @property
    def corpus(self) -> str:
        return self.job.corpus.path

    @property
    def golden(self) -> str:
        return self.job.golden

    @property
    def tokenizer(self) -> str:
        return self.job.chunking.tokenizer

    @property
    def bm25(self) -> Bm25Spec:
        return self.job.retrieval.bm25

    @property
    def cache_dir(self) -> str | None:
        return str(self.job.cache.dir) if self.job.cache is not None else None

    @property
    def tracking_enabled(self) -> bool:
        return self.job.tracking.enabled

    @property
    def tracking_uri(self) -> str:
        return self.job.tracking.uri

    @property
    def experiment(self) -> str:
        return self.job.tracking.experiment


@dataclass
class DenseIndex:
    name: str
    vectors: np.ndarray
    encode_query: Callable[[str], np.ndarray]
    # False while the model that embeds the questions loads (every chunk vector can come from
    # the cache, so the first search is what loads it: a minute or two on a small machine).
    # The page asks /api/status and says so, instead of "searching…" alone.
    ready: Callable[[], bool] = lambda: True


@dataclass
class Hit:
    rank: int
    chunk: Chunk
    score: float


@dataclass
class SweepRanks:
    ok: bool
    note: str  # which sweep the ranks come from, or why there are none
    ranks: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ItemRow:
    entry: Entry
    resolves: str  # "yes", "doc", "no"
    resolves_text: str
    errors: list[str]
    warnings: list[str]
    rank: str
    rank_title: str
    pages: tuple[str, ...] = ()  # "book.pdf page 41" for each evidence span on a PDF


def _num(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def load_sweep_ranks(settings: LabelSettings, golden_path: Path) -> SweepRanks:
    """Per-question ranks from the best configuration of the last sweep in the store."""
    if not settings.tracking_enabled:
        return SweepRanks(False, "tracking is off (tracking.enabled=false), so there is no "
                          "sweep to read ranks from")
    from sweep.outputs.tracking import sqlite_path

    db = sqlite_path(settings.tracking_uri)
    if db is not None and not db.is_file():
        return SweepRanks(False, f"no tracking store at {db}: run a sweep first "
                          "(python -m sweep -m ...) from this folder, or set tracking.uri")
    from sweep.decide import runs as decide

    try:
        with tempfile.TemporaryDirectory(prefix="sweep-label-") as tmp:
            # Only the best run's ranks are shown: no verdicts, one per_question.csv.
            table = decide.ranked_table(settings.tracking_uri, settings.experiment or None,
                                        "latest", None, Path(tmp))
            best = table.rows[0]
            swept_golden = str(best["params"].get("golden.path", ""))
            if swept_golden and (resolve_user_path(swept_golden, "golden.path")
                                 != resolve_user_path(golden_path, "--golden")):
                return SweepRanks(False, f"the last sweep in experiment "
                                  f"{settings.experiment!r} used golden.path={swept_golden}, "
                                  "not this file")
            frame = decide.read_per_question(settings.tracking_uri, best["run_id"], Path(tmp))
    except SweepError as exc:
        return SweepRanks(False, f"no sweep to read ranks from: {exc}")
    if frame is None:
        return SweepRanks(False, f"the best run {best['run_id']} of the last sweep has no "
                          "per_question.csv artifact")
    ranks: dict[str, dict[str, Any]] = {}
    for rec in frame.to_dict("records"):
        ranks[str(rec.get("qid"))] = {
            "question": rec.get("question"), "status": rec.get("status"),
            "rank": _num(rec.get("first_relevant_rank")),
            "dense": _num(rec.get("dense_first_relevant_rank")),
            "bm25": _num(rec.get("bm25_first_relevant_rank")),
        }
    swept = ", ".join(f"{p}={best.get(p)}" for p in table.swept) or "one configuration"
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(table.parent["start_time"] / 1000))
    note = (f"last sweep {table.parent['run_id'][:8]} ({started}, experiment "
            f"{table.parent['experiment']!r}): best configuration by {table.metric} is run "
            f"{best['run_id'][:8]} ({swept}); rank = position of the first relevant chunk")
    return SweepRanks(True, note, ranks)


class LabelApp:
    """A corpus, its golden file, and the indexes the page searches."""

    def __init__(self, settings: LabelSettings, docs: list[Document], chunks: list[Chunk],
                 reference_from: str, dense: DenseIndex | None = None,
                 dense_note: str = "") -> None:
        self.settings = settings
        self.store = GoldenFile(settings.golden)
        self.corpus_root = resolve_user_path(settings.corpus, "--corpus")
        self.docs = docs
        self.fingerprint = corpus_fingerprint(docs)
        self.by_id = {d.doc_id: d for d in docs}
        # Only documents whose real file is inside the corpus folder are ever shown: a symlink
        # pointing elsewhere (a home folder, /etc) stays invisible to the page.
        self.hidden = {d.doc_id for d in docs if not self._inside(d)}
        self.servable = {d.source: d for d in docs if d.doc_id not in self.hidden}
        self.chunks = chunks
        self.reference_from = reference_from  # "sidecar" | "new" | "" (no chunk ids written)
        self.tiebreak = tiebreak_order([c.chunk_id for c in chunks])
        self.chunks_by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            self.chunks_by_doc.setdefault(c.doc_id, []).append(c)
        import bm25s  # noqa: F401  (it sets its own logger to DEBUG when imported)

        logging.getLogger("bm25s").setLevel(logging.WARNING)
        bm25 = settings.bm25
        self.bm25 = BM25Index([c.text for c in chunks], k1=bm25.k1, b=bm25.b, backend="bm25s",
                              stopwords=bm25.stopwords)
        self.dense = dense
        self.dense_note = dense_note
        self.numbers = NumberIndex(docs)
        self.token = secrets.token_urlsafe(24)
        self._search_lock = threading.Lock()
        self._ranks: tuple[tuple[float, int], SweepRanks] | None = None
        self._ranks_lock = threading.Lock()
        self.review_queue: Path | None = None  # `sweep label --review FILE` (label/review.py)
        self.queue: LabelQueue | None = None  # `sweep label --queue` (label/queue.py)

    def _inside(self, doc: Document) -> bool:
        try:
            return (self.corpus_root / doc.source).resolve().is_relative_to(self.corpus_root)
        except OSError:
            return False

    # ------------------------------------------------------------------ search

    def search(self, question: str) -> dict[str, list[Hit]]:
        question = question.strip()[:MAX_TEXT]
        out: dict[str, list[Hit]] = {"bm25": [], "dense": []}
        if not question:
            return out
        top = self.settings.top
        depth = top + 50  # room for hits of hidden documents, which are dropped
        with self._search_lock:
            rankings = {"bm25": lexical_search(self.bm25.scores(question), self.tiebreak, depth)}
            if self.dense is not None:
                qv = self.dense.encode_query(question)
                rankings["dense"] = top_k(self.dense.vectors @ qv, self.tiebreak, depth)
        for name, ranking in rankings.items():
            hits = []
            for i, s in zip(ranking.indices, ranking.scores, strict=True):
                chunk = self.chunks[i]
                if chunk.doc_id in self.hidden:
                    continue
                hits.append(Hit(len(hits) + 1, chunk, float(s)))
                if len(hits) == top:
                    break
            out[name] = hits
        return out

    def doc_by_source(self, source: str) -> Document | None:
        return self.servable.get(source)

    # ------------------------------------------------------------------ items being labelled

    def spans_from(self, evidence: Any) -> list[Span]:
        """Validated, trimmed, de-duplicated evidence spans from the page's JSON."""
        if not isinstance(evidence, list):
            raise SweepError("evidence must be a list")
        if len(evidence) > MAX_EVIDENCE:
            raise SweepError(f"at most {MAX_EVIDENCE} evidence passages per item")
        spans: list[Span] = []
        seen: set[tuple[str, int, int]] = set()
        for i, ev in enumerate(evidence):
            if not isinstance(ev, dict):
                raise SweepError(f"evidence {i + 1}: must be an object")
            doc_id, start, end = ev.get("doc_id"), ev.get("start"), ev.get("end")
            doc = self.by_id.get(doc_id) if isinstance(doc_id, str) else None
            if doc is None or doc.doc_id in self.hidden:
                raise SweepError(f"evidence {i + 1}: unknown document {doc_id!r}")
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end)):
                raise SweepError(f"evidence {i + 1}: start and end must be integers")
            a, b = trim(doc, start, end)
            if b <= a:
                raise SweepError(f"evidence {i + 1}: the selection is empty")
            if (doc.doc_id, a, b) in seen:
                continue
            seen.add((doc.doc_id, a, b))
            spans.append(Span(doc, a, b))
        return spans

    def chunk_ids_for(self, spans: Sequence[Span]) -> list[str]:
        """Reference chunks holding any part of the evidence, in evidence order."""
        out: dict[str, None] = {}
        for span in spans:
            for c in self.chunks_by_doc.get(span.doc.doc_id, []):
                if c.start < span.end and span.start < c.end:
                    out.setdefault(c.chunk_id, None)
        return list(out)

    def evidence_json(self, span: Span) -> dict[str, Any]:
        """``{path, quote}``, plus the offsets when the quote is not unique in its document
        (a quote alone would resolve to its first occurrence, maybe another passage)."""
        ev: dict[str, Any] = {"path": span.doc.source, "quote": span.quote}
        if span.doc.text.count(span.quote) > 1:
            ev.update(start=span.start, end=span.end)
        return ev

    @staticmethod
    def _strings(value: Any, name: str, limit: int) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SweepError(f"{name} must be a list of strings")
        if len(value) > limit:
            raise SweepError(f"at most {limit} {name}")
        return list(dict.fromkeys(v.strip()[:MAX_TEXT] for v in value if v.strip()))

    def build(self, payload: Any, base: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], list[Span]]:
        """The golden object for the page's ``payload`` (fields of ``base`` the page does
        not edit, such as tags, are kept)."""
        if not isinstance(payload, dict):
            raise SweepError("the request body must be a JSON object")
        question = payload.get("question")
        if not isinstance(question, str) or not question.strip():
            raise SweepError("type the question first")
        qid = payload.get("qid")
        if not isinstance(qid, str) or not qid.strip():
            # An edited item keeps its id; a new one gets the next free one.
            qid = str(base["qid"]) if base and "qid" in base else self.store.next_qid()
        if (bad := control_char(qid)) is not None:
            raise SweepError(f"qid: holds a control character or line break ({bad}); a qid "
                             "is one printable line")
        spans = self.spans_from(payload.get("evidence", []))
        if not spans:
            raise SweepError("add at least one evidence passage (select text, then "
                             "\"Add selection as evidence\")")
        mentions = self._strings(payload.get("answer_must_mention"), "answer_must_mention",
                                 MAX_MENTIONS)
        notes = payload.get("notes") or ""
        if not isinstance(notes, str):
            raise SweepError("notes must be a string")
        needs = payload.get("needs") or None
        if needs is not None and needs not in NEEDS:
            raise SweepError(f"needs must be one of {', '.join(NEEDS)}, got {needs!r}")
        obj = {k: v for k, v in (base or {}).items()
               if k not in ("qid", "question", "relevant_chunk_ids", "answer_must_mention",
                            "evidence", "notes", "needs")}
        # a NUL or an escape pasted with the question is dropped, as the import drops it
        obj = {"qid": qid.strip()[:200], "question": clean_text(question)[:MAX_TEXT],
               **({"relevant_chunk_ids": self.chunk_ids_for(spans)}
                  if self.reference_from else {}),
               **({"answer_must_mention": mentions} if mentions else {}),
               **obj,
               "evidence": [self.evidence_json(s) for s in spans],
               # with one passage there is nothing to choose between
               **({"needs": needs} if needs == "any" and len(spans) > 1 else {}),
               **({"notes": notes.strip()[:MAX_TEXT]} if notes.strip() else {})}
        if base is not None and review.is_pending(base):  # re-selected after a rebase
            obj["rebase"] = review.reviewed_record(base["rebase"], "reselected")
        return obj, spans

    def check(self, payload: Any) -> dict[str, Any]:
        """Normalised evidence, warnings, suggested mentions and the line a save would write."""
        if not isinstance(payload, dict):
            raise SweepError("the request body must be a JSON object")
        question = payload.get("question") if isinstance(payload.get("question"), str) else ""
        spans = self.spans_from(payload.get("evidence", []))
        mentions = self._strings(payload.get("answer_must_mention"), "answer_must_mention",
                                 MAX_MENTIONS)
        warnings = label_warnings(question, spans, mentions, self.docs, self.numbers)
        suggestions = [s for s in suggest_mentions(" ".join(s.quote for s in spans))
                       if s not in mentions]
        line = None
        if question.strip() and spans:
            from sweep.label.store import dump_line

            try:
                line = dump_line(self.build(payload)[0])
            except SweepError:
                line = None
        return {
            "evidence": [self.span_json(s) for s in spans],
            "warnings": [{"kind": w.kind, "message": w.message, "evidence": w.evidence}
                         for w in warnings],
            "suggestions": suggestions,
            "line": line,
        }

    def span_json(self, span: Span) -> dict[str, Any]:
        section = span.doc.section_at(span.start)
        return {"doc_id": span.doc.doc_id, "path": span.doc.source, "title": span.doc.title,
                "start": span.start, "end": span.end, "quote": span.quote,
                "heading_path": list(section.heading_path) if section else [],
                "page": page_label(span.doc, span.start, span.end),
                "chunk_ids": self.chunk_ids_for([span]),
                "occurrences": len(occurrences(self.docs, span.quote))}

    # ------------------------------------------------------------------ writing

    def _write_reference(self) -> None:
        """A new golden set gets the sidecar naming the chunking its chunk ids refer to."""
        ref = reference_path(self.store.path)
        if self.reference_from != "new" or ref.exists():
            return
        from sweep.common.files import atomic_write

        spec = self.settings.chunk
        text = ("# The chunking that the chunk ids in "
                f"{self.store.path.name} were labelled against (written by `sweep label`).\n"
                + yaml.safe_dump({"chunk": {"boundary": spec.boundary, "size": spec.size,
                                            "overlap": spec.overlap,
                                            "tokenizer": self.settings.tokenizer}},
                                 sort_keys=False))
        atomic_write(ref, text.encode("utf-8"))
        log.warning("wrote %s (the reference chunking of the new golden set)", ref)
        self.reference_from = "sidecar"

    def _write_record(self) -> None:
        """The corpus these labels are made against (`sweep.data.drift`): every document on
        the first save; later, only documents the record does not hold yet, so saving one
        item never hides that the others' documents changed."""
        existing = drift.read_record(self.store.path)
        recorded = (existing or {}).get("documents", {})
        if existing is not None and all(d.source in recorded for d in self.docs):
            return
        drift.write_record(self.store.path, self.docs, self.settings.corpus, "sweep label",
                           keep=recorded)

    def save_new(self, payload: Any, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Append a new item; ``extra`` adds fields the page does not edit (a queued
        candidate's source, source_ref and cid)."""
        obj, spans = self.build(payload)
        obj.update(extra or {})
        entry = self.store.append(obj)
        self._write_reference()
        self._write_record()
        return self._saved(entry, obj, spans, payload)

    def save_edit(self, qid: str, digest: str, payload: Any) -> dict[str, Any]:
        base = self._entry(qid, digest).obj or {}
        obj, spans = self.build(payload, base)
        entry = self.store.replace(qid, digest, obj)
        self._write_record()
        if self.review_queue is not None and review.is_pending(base):
            review.log_decision(self.review_queue, qid, "reselected", obj)
        return self._saved(entry, obj, spans, payload)

    def delete(self, qid: str, digest: str) -> dict[str, Any]:
        self.store.delete(qid, digest)
        return {"deleted": qid, "next_qid": self.store.next_qid()}

    def _saved(self, entry: Entry, obj: dict[str, Any], spans: list[Span], payload: Any
               ) -> dict[str, Any]:
        question = obj["question"]
        warnings = label_warnings(question, spans, obj.get("answer_must_mention", []),
                                  self.docs, self.numbers)
        return {"qid": entry.qid, "lineno": entry.lineno, "digest": entry.digest,
                "line": entry.raw.decode("utf-8"), "file": str(self.store.shown_path),
                "next_qid": self.store.next_qid(),
                "pages": [f"{s.doc.source} {page_label(s.doc, s.start, s.end)}"
                          for s in spans if s.doc.pages],
                "warnings": [w.message for w in warnings]}

    def _entry(self, qid: str, digest: str) -> Entry:
        for entry in self.store.entries():
            if entry.qid == qid and entry.digest == digest:
                return entry
        raise StaleError(f"item {qid!r} changed in {self.store.shown_path} since this page was "
                         "loaded; reload the page")

    # ------------------------------------------------------------------ editing an item

    def edit_state(self, qid: str) -> dict[str, Any]:
        """What the page needs to edit item ``qid``: its fields and its evidence as spans."""
        entry = next((e for e in self.store.entries() if e.qid == qid), None)
        if entry is None or entry.obj is None:
            raise SweepError(f"no item {qid!r} in {self.store.shown_path}")
        from sweep.data.golden import parse_golden_lines

        items, problems = parse_golden_lines(entry.raw.decode("utf-8"), "line")
        notes = [p.message for p in problems if p.severity == "error"]
        evidence: list[dict[str, Any]] = []
        if items:
            resolved = resolve_item(items[0], CorpusIndex(self.docs),
                                    {c.chunk_id: c for c in self.chunks}
                                    if self.reference_from else None)
            notes += [f"{p.field}: {p.message}" for p in resolved.problems
                      if p.severity == "error"]
            for doc_id, start, end in resolved.spans:
                if doc_id not in self.hidden:
                    evidence.append({"doc_id": doc_id, "start": start, "end": end})
            if resolved.source == "chunk_ids":
                notes.append("this item has no evidence quotes: its chunks are shown as "
                             "evidence; saving writes them as quotes")
        obj = entry.obj
        mentions = obj.get("answer_must_mention")
        return {"mode": "edit", "qid": qid, "digest": entry.digest, "lineno": entry.lineno,
                "question": obj.get("question") if isinstance(obj.get("question"), str) else "",
                "evidence": evidence,
                "answer_must_mention": [m for m in mentions if isinstance(m, str)]
                if isinstance(mentions, list) else [],
                "notes": obj.get("notes") if isinstance(obj.get("notes"), str) else "",
                "needs": obj.get("needs") if obj.get("needs") in NEEDS else "",
                "problems": notes}

    # ------------------------------------------------------------------ the list view

    def sweep_ranks(self, refresh: bool = False) -> SweepRanks:
        """Cached until the store file changes (or ``refresh``)."""
        from sweep.outputs.tracking import sqlite_path

        db = sqlite_path(self.settings.tracking_uri) if self.settings.tracking_enabled else None
        stamp = (db.stat().st_mtime, db.stat().st_size) if db is not None and db.is_file() \
            else (0.0, 0)
        with self._ranks_lock:
            if refresh or self._ranks is None or self._ranks[0] != stamp:
                self._ranks = (stamp, load_sweep_ranks(self.settings, self.store.path))
            return self._ranks[1]

    def rows(self, ranks: SweepRanks) -> tuple[list[ItemRow], list[str]]:
        """One row per line of the golden file, and file-level problems."""
        entries = self.store.entries()
        if not entries:
            return [], []
        try:
            golden = load_golden(self.store.path)
        except SweepError as exc:
            return [ItemRow(e, "no", "", [str(exc)], [], "—", "") for e in entries], [str(exc)]
        from sweep.pipeline.memo import resolve_golden

        # The reference chunks come from the sidecar, as in `sweep validate`.
        resolved = resolve_golden(golden, self.docs, self.fingerprint)
        result = check_golden(golden, resolved, self.docs)
        by_line = {r.item.line: r for r in resolved}
        ref_chunks = {c.chunk_id: c for c in self.chunks} if golden.reference else None
        rows = []
        for entry in entries:
            problems = [p for p in result.problems if p.line == entry.lineno]
            errors = [f"{p.field}: {p.message}" if p.field else p.message
                      for p in problems if p.severity == "error"]
            warnings = [f"{p.field}: {p.message}" if p.field else p.message
                        for p in problems if p.severity == "warning"]
            r = by_line.get(entry.lineno)
            if r is None or errors:
                resolves, text = "no", "does not resolve"
            elif r.level == "span":
                resolves = "yes"
                text = {"evidence": "evidence quotes", "chunk_ids": "reference chunk ids"
                        }.get(r.source, r.source)
                if ref_chunks is not None and r.item.relevant_chunk_ids and r.source == "evidence":
                    cover = self._covering(r.spans)
                    if cover and not set(cover) & set(r.item.relevant_chunk_ids):
                        warnings.append("relevant_chunk_ids: none of them holds the evidence, "
                                        f"which is in {', '.join(cover)} under the reference "
                                        "chunking")
            elif r.level == "doc":
                resolves, text = "doc", "documents only (no span)"
            else:
                resolves, text = "no", "orphan: nothing places its answer"
            rank, title = self._rank_cell(entry, ranks)
            pages = tuple(f"{self.by_id[d].source} {page_label(self.by_id[d], a, b)}"
                          for d, a, b in (r.spans if r is not None else ())
                          if d in self.by_id and self.by_id[d].pages)
            rows.append(ItemRow(entry, resolves, text, errors, warnings, rank, title, pages))
        return rows, []

    def _covering(self, spans: Sequence[tuple[str, int, int]]) -> list[str]:
        return self.chunk_ids_for([Span(self.by_id[d], s, e) for d, s, e in spans])

    @staticmethod
    def _rank_cell(entry: Entry, ranks: SweepRanks) -> tuple[str, str]:
        if not ranks.ok:
            return "—", ranks.note
        info = ranks.ranks.get(entry.qid or "")
        if info is None:
            return "—", "not in the last sweep (added since)"
        question = entry.obj.get("question") if entry.obj else None
        edited = " (question edited since the sweep)" if info["question"] != question else ""
        if info["status"] == "orphan":
            return "—", "orphan in the last sweep" + edited
        others = ", ".join(f"{k} retriever alone: {int(info[k])}"
                           for k in ("dense", "bm25") if info.get(k) is not None)
        if info["rank"] is None:
            return "not found", "no relevant chunk in the ranked list" + edited
        return f"{int(info['rank'])}", (f"first relevant chunk at rank {int(info['rank'])}"
                                        + (f"; {others}" if others else "") + edited)


def build_app(settings: LabelSettings, *, dense_spec: Any = None, cache_dir: str | None = None,
              say: Callable[[str], None] = print) -> LabelApp:
    """Load the corpus, chunk it with the reference chunking, index it for BM25 and (with
    ``dense_spec``, an `EmbeddingSpec`) for dense search, printing progress with ``say``."""
    # Imported here, as the page's other heavy parts: `sweep label --help` loads no pipeline.
    from sweep.application.corpus import open_corpus_view
    from sweep.pipeline.memo import reference_spec

    t0 = time.perf_counter()
    view = open_corpus_view(settings.job, reread=True)  # as the folder is now
    docs = view.docs
    store = GoldenFile(settings.golden)
    ref_file = reference_path(store.path)
    if ref_file.exists():
        from sweep.data.golden import GoldenSet

        reference = load_reference(ref_file)
        spec, tokenizer = reference_spec(GoldenSet(str(store.path), [], [], "", reference)) \
            or (settings.chunk, settings.tokenizer)
        reference_from = "sidecar"
        say(f"reference chunking (from {ref_file.name}): {spec.boundary}, {spec.size} tokens, "
            f"overlap {spec.overlap}")
    else:
        spec, tokenizer = settings.chunk, settings.tokenizer
        if store.entries():
            reference_from = ""
            say(f"warning: {store.shown_path} has no {ref_file.name}: items are saved with "
                "evidence quotes but without relevant_chunk_ids")
        else:
            reference_from = "new"
            say(f"new golden set: chunk ids will refer to {spec.boundary}/{spec.size}/"
                f"{spec.overlap}, recorded in {ref_file.name} on the first save")
    chunks = view.tiled(spec, tokenizer)
    say(f"indexed {len(docs)} documents, {len(chunks)} chunks for BM25 "
        f"({time.perf_counter() - t0:.1f}s)")
    dense = None
    note = "dense search is off (--no-dense)"
    if dense_spec is not None:
        from sweep.embedding.models import get_embedder

        t = time.perf_counter()
        say(f"indexing {len(chunks)} chunks for dense search with {dense_spec.name} "
            "(vectors come from the embedding cache when present)...")
        embedder = get_embedder(dense_spec)
        if cache_dir:
            from sweep.embedding.cache import get_cache

            embedder.cache = get_cache(cache_dir)
        before = embedder.encoded_texts
        vectors = embedder.encode([c.embed_text for c in chunks], progress=True)
        say(f"dense index ready: {embedder.encoded_texts - before} chunks encoded, the rest "
            f"from the cache ({time.perf_counter() - t:.1f}s)")
        lock = threading.Lock()  # one load, one query at a time: the server is threaded

        def encode_query(q: str) -> np.ndarray:
            with lock:
                return embedder.encode_uncached(q, query=True)

        def warm() -> None:  # load the model while the user types the first question
            try:
                encode_query("warm-up")
            except Exception as exc:  # the first real search reports it as one line
                log.warning("the embedding model %s did not load: %s", dense_spec.name, exc)

        dense = DenseIndex(dense_spec.name, vectors, encode_query,
                           ready=lambda: getattr(embedder, "loaded", True))
        if not dense.ready():
            say(f"loading the embedding model {dense_spec.name} for the questions (in the "
                "background; the page says so until it is ready)")
            threading.Thread(target=warm, name="label model warm-up", daemon=True).start()
        note = ""
    app = LabelApp(settings, docs, chunks, reference_from, dense, note)
    moved = drift.corpus_drift(store.path, docs)
    if moved is not None:
        say(f"warning: {moved.message}")
    if app.hidden:
        say(f"warning: {len(app.hidden)} documents are symlinks to files outside "
            f"{app.corpus_root} and are not shown: {', '.join(sorted(app.hidden)[:5])}")
    return app
