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

One module per source format (squad, beir, chroma, each ``convert_*`` + ``import_*``) and what
they share (common); this module holds the format registry (`IMPORTERS`), writing and
checking the output, and the summary.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.paths import resolve_user_path
from sweep.common.registry import Entry, Registry
from sweep.data.corpus import load_corpus
from sweep.data.golden import load_golden
from sweep.data.importers.beir import convert_beir, import_beir
from sweep.data.importers.chroma import convert_chroma, import_chroma
from sweep.data.importers.common import (
    EVIDENCE_FILE_NAME,
    ImportResult,
    OffsetMap,
    clean_text,
    must_mention,
    place,
    progress,
    safe_slug,
)
from sweep.data.importers.squad import convert_squad, import_squad

# The import formats (`sweep import FORMAT`), on the registry the config axes use: each entry's
# implementation reads that layout (`import_<format>(src, **params)`), its ``params`` are the
# options only it takes (with their defaults), its ``doc`` what `sweep import --help` says.
IMPORTERS: Registry[Callable[..., ImportResult]] = Registry("import.format", [
    Entry("squad", import_squad, doc="SQuAD v1.1 JSON, COVID-QA"),
    Entry("beir", import_beir, params={"split": "test", "evidence": None}, doc="BEIR folder"),
    Entry("chroma", import_chroma, doc="Chroma chunking-evaluation folder"),
])
FORMATS = IMPORTERS.names()

__all__ = [
    "EVIDENCE_FILE_NAME", "FORMATS", "IMPORTERS", "ImportResult", "OffsetMap", "clean_text",
    "convert_beir", "convert_chroma", "convert_squad", "import_beir", "import_chroma",
    "import_squad", "must_mention", "place", "run_import", "safe_slug", "summary",
    "verify_import", "write_import",
]


def _prepare_out(out: Path, source: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out {out} is a file, not a folder")
    corpus_dir = out / "corpus"
    src = resolve_user_path(source, "SRC")
    dest = resolve_user_path(corpus_dir, "--out")
    if src == dest or dest in src.parents:
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
    for rel, text in progress(result.documents, "writing documents"):
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
    if evidence is not None and fmt not in IMPORTERS.reading("evidence"):
        raise SweepError(f"--evidence is only for the {' and '.join(IMPORTERS.reading('evidence'))}"
                         " format")
    started = time.perf_counter()
    entry = IMPORTERS.get(fmt)
    if entry is None or entry.impl is None:
        raise SweepError(f"unknown import format {fmt!r} (allowed: {', '.join(IMPORTERS)})")
    given = {"split": split, "evidence": evidence}
    result = entry.impl(src, **{k: given[k] for k in entry.params})
    result.report["seconds"] = round(time.perf_counter() - started, 3)
    report = write_import(result, out, force=force)
    report["seconds"] = round(time.perf_counter() - started, 3)
    (Path(out) / "import_report.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return report
