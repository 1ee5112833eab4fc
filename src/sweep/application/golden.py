"""A golden set across versions of its corpus (`sweep golden rebase | fingerprint`), over
plain requests: the corpora read as a sweep reads them, the evidence carried by
`sweep.evaluation.rebase`, the rebased set, its review queue, the report and the corpus
record written. The command (`sweep.cli.golden`) parses the options; lines go to ``say``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, read_bytes_regular
from sweep.common.paths import resolve_user_path
from sweep.data.corpus import Document, load_corpus


@dataclass(frozen=True)
class RebaseRequest:
    """The options of `sweep golden rebase` (the command's argument names)."""

    golden: str
    old: str
    out: str
    new: str | None = None
    corpus: str | None = None
    report: str | None = None
    force: bool = False
    diff_deadline: float | None = None
    diff_max_tokens: int | None = None
    overrides: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FingerprintRequest:
    """The options of `sweep golden fingerprint`."""

    golden: str | None = None
    corpus: str | None = None
    force: bool = False
    overrides: list[str] = field(default_factory=list)


def _load(folder: Path, cfg: Any) -> list[Document]:
    from sweep.config.specs import corpus_parsers

    return load_corpus(folder, extensions=tuple(cfg.corpus.extensions),
                       on_error=cfg.corpus.on_error, parsers=corpus_parsers(cfg),
                       cache_dir=cfg.cache.dir if cfg.cache.enabled else None,
                       max_file_mb=cfg.corpus.max_file_mb)


def _originals(path: Path) -> dict[int, dict[str, Any]]:
    """Line number -> the object on it (the golden set parsed cleanly before this is called)."""
    out = {}
    text = read_bytes_regular(path).decode("utf-8-sig").replace("\r\n", "\n")
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            out[lineno] = json.loads(line)
    return out


def review_line(result: Any, out: Path, corpus: str | None) -> dict[str, Any]:
    """One line of ``<out stem>.review.jsonl``: what the review page shows for an item."""
    return {"qid": result.qid, "question": result.obj.get("question"),
            "status": result.status, "reason": result.reason,
            "golden": str(resolve_user_path(out, "--out")),
            "corpus": corpus, "mentions_missing": result.mentions_missing,
            "passages": [c.as_dict() for c in result.passages],
            "candidates": (result.obj.get("rebase") or {}).get("candidates") or []}


def print_table(report: dict[str, Any], say: Callable[[str], None]) -> None:
    from sweep.evaluation.rebase import STATUSES

    counts = report["summary"]["items"]
    say("items:    " + "  ".join(f"{s} {counts[s]}" for s in STATUSES)
        + f"   (needs a human: {report['summary']['needs_review']})")
    passages = report["summary"]["passages"]
    say("passages: " + "  ".join(f"{s} {passages[s]}" for s in STATUSES))
    docs = report["summary"]["documents"]
    say(f"documents: {docs['old']} old, {docs['new']} new; {docs['unchanged']} unchanged, "
        f"{len(docs['renamed'])} renamed, {len(docs['gone'])} gone, {len(docs['added'])} added")
    for r in docs["renamed"]:
        say(f"  renamed: {r['old']} -> {r['new']} (word overlap {r['similarity']:.2f})")
    per_doc = report["summary"]["per_document"]
    if per_doc:
        width = max(len("document"), *(len(p) for p in per_doc))
        cols = STATUSES
        say(f"{'document':<{width}}  " + "  ".join(f"{c:>9}" for c in cols))
        for path, c in per_doc.items():
            say(f"{path:<{width}}  " + "  ".join(f"{c[s]:>9}" for s in cols))


def rebase(args: RebaseRequest, say: Callable[[str], None]) -> dict[str, Any]:
    """``sweep golden rebase``: the golden set's evidence carried to the new corpus; writes
    the rebased set, its review queue and the report; returns the report."""
    from sweep.chunking.reference import load_golden
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.data import drift
    from sweep.data.golden import dump_line, reference_path, require_valid
    from sweep.data.revisions import corpus_at
    from sweep.evaluation.rebase import (
        DiffLimits,
        Rebaser,
        check_landing,
        rebase_items,
        summary,
    )

    cfg = compose(list(args.overrides))
    check_config(cfg)
    golden_path, out = Path(args.golden), Path(args.out)
    if resolve_user_path(out, "--out") == resolve_user_path(golden_path, "--golden"):
        raise SweepError(f"--out {out}: is the golden file itself; write the rebased set to a "
                         "new file (nothing is overwritten)")
    review = out.with_name(out.stem + ".review.jsonl")
    report_path = Path(args.report) if args.report else out.with_name("rebase_report.json")
    if not args.force:
        for p in (out, review):
            if p.exists():
                raise SweepError(f"{p} exists (reviews done in it would be lost)",
                                 hint="pass --force to replace it, or choose another --out")
    golden = require_valid(load_golden(golden_path))
    if golden.pending:
        raise SweepError(f"{golden_path}: {len(golden.pending)} items still await review from "
                         "an earlier rebase (sweep label --review); review them before "
                         "rebasing again")
    if args.new is None and args.corpus is None and not any(
            o.startswith("corpus.path=") for o in args.overrides):
        # Otherwise the default corpus (the demo) would silently be "the new version".
        raise SweepError("--new: name the new corpus (a folder or a git revision), or the "
                         "corpus folder with --corpus DIR (its working tree is then the new "
                         "version)")
    corpus_dir = args.corpus or cfg.corpus.path
    with tempfile.TemporaryDirectory(prefix="sweep-rebase-") as tmp:
        old_src = corpus_at(args.old, corpus_dir, Path(tmp) / "old")
        new_src = corpus_at(args.new or str(corpus_dir), corpus_dir, Path(tmp) / "new")
        old_docs, new_docs = _load(old_src.folder, cfg), _load(new_src.folder, cfg)
    say(f"old: {old_src.label}: {len(old_docs)} documents; new: {new_src.label}: "
        f"{len(new_docs)} documents")
    record = drift.read_record(golden_path)
    if record is not None:
        moved = drift.compare(record, old_docs, str(drift.record_path(golden_path)))
        if moved.n_moved:
            say(f"warning: the --old corpus is not the one these labels were made against: "
                f"{moved.n_moved} of its documents differ from {moved.record}")
    reference_chunks = None
    if golden.reference is not None and any(i.relevant_chunk_ids for i in golden.items):
        from sweep.chunking.chunkers import chunk_corpus
        from sweep.chunking.tokenizers import load_chunk_tokenizer
        from sweep.pipeline.memo import reference_spec

        spec, tokenizer = reference_spec(golden)  # type: ignore[misc]
        reference_chunks = {c.chunk_id: c for c in
                            chunk_corpus(old_docs, spec, load_chunk_tokenizer(tokenizer))}
    limits = DiffLimits()
    limits = DiffLimits(args.diff_deadline or limits.deadline_s,
                        args.diff_max_tokens or limits.max_tokens)
    rebaser = Rebaser(old_docs, new_docs, limits)
    stamp = {"at": drift.now_iso(), "from": old_src.label, "to": new_src.label}
    results = rebase_items(golden.items, _originals(golden_path), rebaser, reference_chunks,
                           stamp, str(golden_path))
    check_landing(results, new_docs)

    by_line = {r.line: r for r in results}
    lines = [dump_line(by_line[ln].obj) for ln in sorted(by_line)]
    atomic_write(out, "\n".join(lines) + "\n")
    drift.write_record(out, new_docs, new_src.label, "sweep golden rebase")
    if golden.reference is not None:
        atomic_write(reference_path(out), read_bytes_regular(reference_path(golden_path)))
    corpus_for_review = (str(resolve_user_path(new_src.folder, "--new"))
                         if not new_src.revision else None)
    pending = [r for r in results if r.pending]
    atomic_write(review, "".join(json.dumps(review_line(r, out, corpus_for_review),
                                            ensure_ascii=False) + "\n" for r in pending))
    report = {"golden": str(golden_path), "out": str(out), "review": str(review),
              "old": old_src.label, "new": new_src.label, "at": stamp["at"],
              "summary": summary(results, rebaser),
              "items": [{"qid": r.qid, "status": r.status, "reason": r.reason,
                         "mentions_missing": r.mentions_missing,
                         "passages": [c.as_dict() for c in r.passages]} for r in results]}
    atomic_write(report_path, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print_table(report, say)
    say(f"wrote {out} ({len(results)} items, {len(pending)} to review), {review}, "
        f"{report_path}")
    if pending:
        say(f"review: sweep label --review {review}")
    return report


def fingerprint(args: FingerprintRequest, say: Callable[[str], None]) -> None:
    """``sweep golden fingerprint``: record the corpus the golden set was labelled against."""
    from sweep.config.checks import check_config
    from sweep.config.compose import compose
    from sweep.data import drift

    cfg = compose(list(args.overrides))
    check_config(cfg)
    golden_path = Path(args.golden or cfg.golden.path)
    if not golden_path.is_file():
        raise SweepError(f"golden file not found: {golden_path}")
    corpus = args.corpus or cfg.corpus.path
    docs = _load(Path(corpus), cfg)
    existing = drift.read_record(golden_path)
    if existing is not None and not args.force:
        moved = drift.compare(existing, docs, str(drift.record_path(golden_path)))
        if moved.n_moved:
            raise SweepError(f"{moved.message}: recording the corpus as it is now would hide "
                             "that", hint="rebase first, or pass --force if the labels were "
                             "checked against this version")
    path = drift.write_record(golden_path, docs, str(corpus), "sweep golden fingerprint",
                              keep=None if args.force else (existing or {}).get("documents"))
    say(f"wrote {path}: {len(docs)} documents of {corpus}")
