"""BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv, optional evidence spans."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.importers.common import (
    EVIDENCE_FILE_NAME,
    ImportResult,
    OffsetMap,
    Report,
    SlugRegistry,
    Spans,
    clean_text,
    decode,
    finish_report,
    get_field,
    get_id,
    golden_item,
    mark_benchmark,
    one_line,
    progress,
    read_bytes,
    read_jsonl,
    safe_slug,
)


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
    rep = Report("beir", source)
    rep.extra = {"split": split, "evidence_file": evidence_source}
    for key in ("queries_without_qrels", "qrels_read", "qrels_positive", "qrels_unknown_doc",
                "qrels_unknown_query", "documents_skipped_empty", "evidence_outside_split"):
        rep.counts[key] = 0
    documents, docs = _beir_documents(corpus, rep)
    query_text = _beir_queries(queries, rep)
    positive = _beir_positive(qrels, rep, query_text, docs)
    spans_by_query = _beir_evidence(evidence or (), rep, docs, positive)
    items = _beir_items(query_text, positive, spans_by_query, rep)
    finish_report(rep, documents, items)
    rep.counts["questions_with_evidence"] = sum(1 for i in items if i["evidence"])
    mark_benchmark(items, source)
    return ImportResult("beir", source, documents, items, rep.as_dict())


def _beir_documents(corpus: Iterable[tuple[str, dict[str, Any]]], rep: Report
                    ) -> tuple[list[tuple[str, str]], dict[str, BeirDoc]]:
    """The documents to write (title, a blank line, text; normalised) and each BEIR _id's
    slug and offset map; empty documents are reported, duplicate _ids keep the first."""
    slugs = SlugRegistry()
    documents: list[tuple[str, str]] = []
    docs: dict[str, BeirDoc] = {}
    renamed: dict[str, str] = {}
    for where, obj in progress(corpus, "documents"):
        _id = get_id(obj, "_id", where)
        text = get_field(obj, "text", where, (str,), optional=True) or ""
        title = get_field(obj, "title", where, (str,), optional=True) or ""
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


def _beir_queries(queries: Iterable[tuple[str, dict[str, Any]]], rep: Report
                  ) -> dict[str, str]:
    query_text: dict[str, str] = {}
    for where, obj in queries:
        qid = get_id(obj, "_id", where)
        if qid in query_text:
            rep.notes.append(f"{where}: duplicate query _id {qid!r}, the first one is kept")
            continue
        query_text[qid] = get_field(obj, "text", where, (str,)).strip()
    return query_text


def _beir_positive(qrels: Iterable[tuple[str, str, str, float]], rep: Report,
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


def _beir_evidence(evidence: Iterable[tuple[str, dict[str, Any]]], rep: Report,
                   docs: dict[str, BeirDoc], positive: dict[str, dict[str, None]]
                   ) -> dict[str, Spans]:
    """The evidence spans of the split's queries, placed in the written documents."""
    spans_by_query: dict[str, Spans] = {}
    for where, obj in evidence:
        qid = get_id(obj, "query_id", where)
        cid = get_id(obj, "doc_id", where)
        start = get_field(obj, "start", where, (int,))
        get_field(obj, "end", where, (int,))
        text = get_field(obj, "text", where, (str,))
        if qid not in positive:
            rep.bump("evidence_outside_split")
            continue
        spans = spans_by_query.setdefault(qid, Spans(rep, qid))
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
                spans_by_query: dict[str, Spans], rep: Report) -> list[dict[str, Any]]:
    """One golden item per query with a relevant document, in queries.jsonl order."""
    items: list[dict[str, Any]] = []
    for qid, question in progress(query_text.items(), "queries", total=len(query_text)):
        rep.bump("questions_read")
        if qid not in positive:
            rep.bump("queries_without_qrels")
            continue
        spans = spans_by_query.get(qid) or Spans(rep, qid)
        doc_ids = list(positive[qid])
        doc_ids += [e["doc_id"] for e in spans.evidence if e["doc_id"] not in positive[qid]]
        reason = ("empty question" if not question else
                  "none of its relevant documents is in the corpus" if not doc_ids else None)
        if reason:
            rep.bump("questions_dropped")
            rep.drop("question", qid, question, reason)
            continue
        items.append(golden_item(qid, question, [], list(dict.fromkeys(doc_ids)), spans.evidence))
    return items


def _beir_qrels(path: Path) -> Iterator[tuple[str, str, str, float]]:
    text = decode(path, read_bytes(path, "qrels file"))
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
                             f"{one_line(score_text)}") from None
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
        for lineno, obj in read_jsonl(path, what):
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
