"""Chroma chunking-evaluation layout: questions_df.csv with references into corpora/."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.corpus import slugify_path
from sweep.data.importers.common import (
    ImportResult,
    OffsetMap,
    Report,
    Spans,
    clean_text,
    decode,
    finish_report,
    get_field,
    golden_item,
    mark_benchmark,
    one_line,
    progress,
    read_bytes,
    require_object,
)


def convert_chroma(rows: Iterable[tuple[str, dict[str, str]]], corpora: dict[str, str],
                   source: str) -> ImportResult:
    """Chroma chunking-evaluation layout. ``rows`` yields ``(where, csv_row)``; ``corpora``
    maps each corpus_id to its file text as read by Python (UTF-8, universal newlines)."""
    rep = Report("chroma", source)
    maps: dict[str, OffsetMap] = {}
    doc_ids: dict[str, str] = {}
    items: list[dict[str, Any]] = []
    for row_number, (where, row) in enumerate(progress(rows, "questions"), start=1):
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
        spans = Spans(rep, qid)
        for r_index, ref in enumerate(refs):
            r_where = f"{where}: references[{r_index}]"
            require_object(ref, r_where)
            content = get_field(ref, "content", r_where, (str,))
            start = get_field(ref, "start_index", r_where, (int,))
            end = get_field(ref, "end_index", r_where, (int,))
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
        items.append(golden_item(qid, question, [], [doc_id], spans.evidence))
    seen: dict[str, str] = {}
    for corpus_id, doc_id in doc_ids.items():
        if doc_id in seen:
            raise SweepError(f"{source}: corpora {seen[doc_id]!r} and {corpus_id!r} would get "
                             f"the same doc_id {doc_id!r}")
        seen[doc_id] = corpus_id
    documents = [(f"{cid}.md", maps[cid].clean) for cid in doc_ids]
    finish_report(rep, documents, items)
    mark_benchmark(items, source)
    return ImportResult("chroma", source, documents, items, rep.as_dict())


_SAFE_CORPUS_ID = re.compile(r"^[^/\\.][^/\\]*$")


def import_chroma(src: str | Path) -> ImportResult:
    root = Path(src)
    if not root.is_dir():
        raise SweepError(f"Chroma folder not found: {root}" if not root.exists() else
                         f"{root}: expected a folder with questions_df.csv and corpora/")
    csv_path = root / "questions_df.csv"
    text = decode(csv_path, read_bytes(csv_path, "questions file"))
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[tuple[str, dict[str, str]]] = []
    try:
        missing = [c for c in ("question", "references", "corpus_id")
                   if c not in (reader.fieldnames or [])]
        if missing:
            raise SweepError(f"{csv_path}:1: missing column(s) {', '.join(missing)} "
                             f"(header: {one_line(reader.fieldnames, 100)})")
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
        raw = decode(path, read_bytes(path, "corpus file"), keep_bom=True)
        corpora[corpus_id] = raw.replace("\r\n", "\n").replace("\r", "\n")
    return convert_chroma(rows, corpora, str(root))
