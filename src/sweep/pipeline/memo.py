"""The process memo: work that does not depend on the swept variables, done once per process.

Loading the corpus and the golden set, resolving the golden set's evidence, tokenising, the
cuts of a chunking, a BM25 index, the last approximate index: a sweep run by the basic
launcher runs many jobs in one process and pays for each of these once. Keys are specs and
fingerprints, never a `Config`. (Not the gate's memo: that is `sweep.decide.memo`, which reuses
whole finished runs across processes.)
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sweep.chunking.cache import get_starts_cache
from sweep.chunking.chunkers import (
    Chunk,
    ChunkSpec,
    chunk_corpus,
    corpus_spans,
    corpus_token_starts,
)
from sweep.chunking.reference import load_golden
from sweep.chunking.semantic import SemanticParams, chunk_corpus_embedded
from sweep.chunking.tokenizers import DEFAULT_TOKENIZER, load_chunk_tokenizer
from sweep.common.alike import alike
from sweep.common.errors import SweepError
from sweep.common.memory import release_free_memory
from sweep.common.paths import resolve_user_path
from sweep.common.progress import Progress
from sweep.common.sqlite import parts_key
from sweep.common.store import CacheTarget
from sweep.config.specs import Bm25Spec, CorpusSpec
from sweep.data.corpus import Document, corpus_fingerprint, load_corpus
from sweep.data.drift import Drift, corpus_drift
from sweep.data.golden import GoldenSet, reference_path, require_valid
from sweep.data.parsers import ParseRecord
from sweep.embedding.embedder import Embedder
from sweep.evaluation.relevance import CorpusIndex, ResolvedItem, resolve_all
from sweep.evaluation.sources import item_smells
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.index import IndexSpec, VectorIndex, build_index
from sweep.retrieval.ranking import tiebreak_order

log = logging.getLogger(__name__)


@dataclass
class _Memo:
    corpora: dict[tuple, tuple[list[Document], str]] = field(default_factory=dict)
    parse_logs: dict[tuple, list[ParseRecord]] = field(default_factory=dict)
    chunks: dict[tuple, list[Chunk]] = field(default_factory=dict)
    starts: dict[tuple, list[np.ndarray]] = field(default_factory=dict)
    spans: dict[tuple, list[list[tuple[int, int]]]] = field(default_factory=dict)
    # cut -> the first cut of the same corpus, tokenizer, size and overlap that gave equal
    # spans (a heading split of a corpus without headings is a recursive split); the chunks
    # made from a cut's spans, by (that first cut, header): cut alike, chunked once.
    same_cut: dict[tuple, tuple] = field(default_factory=dict)
    made: dict[tuple, list[Chunk]] = field(default_factory=dict)
    bm25: dict[tuple, tuple[BM25Index, float]] = field(default_factory=dict)
    goldens: dict[str, GoldenSet] = field(default_factory=dict)
    resolved: dict[tuple, list[ResolvedItem]] = field(default_factory=dict)
    drift: dict[tuple, Drift | None] = field(default_factory=dict)
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)  # fingerprint -> skipped
    smells: dict[tuple, list[float | None]] = field(default_factory=dict)
    cut_texts: dict[tuple, int] = field(default_factory=dict)  # texts embedded for cutting
    # The last approximate index built (the scored pass and the latency pass share it);
    # one only, as an index can be as large as the vectors.
    ann: dict[tuple, VectorIndex] = field(default_factory=dict)
    # The search and scoring of the last few jobs, oldest first: (their settings apart from
    # how the chunks were cut, their chunks, the work, its rows) (`recall_work`, `keep_work`).
    work: list[tuple[str, list[Chunk], Any, int]] = field(default_factory=list)
    # What the last few such jobs wrote, by kind of file, oldest first: (what the text was
    # made from, the text, its rows) (`recall_text`, `keep_text`).
    texts: dict[str, list[tuple[Any, Any, int]]] = field(default_factory=dict)


_MEMO = _Memo()
# Jobs whose work is kept: duplicates come close together in a grid (the boundary axis next to
# the header axis). Each holds every question's rows, rankings and miss views (~20 MB for
# COVID-QA's 1,380 questions), so the questions kept in all are bounded too: a golden set
# larger than that is never kept, and its twins run their own.
WORK_KEPT = 4
WORK_ROWS = 8192


def clear_memo() -> None:
    global _MEMO
    _MEMO = _Memo()


def recall_work(key: str, chunks: list[Chunk]) -> Any | None:
    """What `keep_work` kept under ``key`` for these very chunks (equal, chunk by chunk), or
    None."""
    for kept_key, kept_chunks, work, _ in reversed(_MEMO.work):
        # (chunks of another length, or another first text, differ at the first look)
        if kept_key == key and kept_chunks == chunks:
            return work
    return None


def keep_work(key: str, chunks: list[Chunk], work: Any, rows: int) -> None:
    """Keep ``work`` (a job's search and scoring, ``rows`` questions) for a later job of this
    process whose settings give ``key`` and whose chunks equal ``chunks``; the oldest are let
    go beyond `WORK_KEPT` jobs or `WORK_ROWS` questions in all."""
    _keep_bounded(_MEMO.work, (key, chunks, work, rows))


def recall_text(kind: str, made_from: Any) -> Any | None:
    """The text `keep_text` kept for a ``kind`` of file made from what is `alike` to
    ``made_from`` (the same bytes again: a twin's per_question.csv), or None."""
    for kept_from, text, _ in reversed(_MEMO.texts.get(kind, ())):
        if alike(kept_from, made_from):
            return text
    return None


def keep_text(kind: str, made_from: Any, text: Any, rows: int) -> None:
    """Keep the ``text`` of a ``kind`` of file, rendered from ``made_from`` (``rows``
    questions), for a later job of this process; bounded per kind as `keep_work` is. Nothing
    may change ``made_from`` afterwards: the caller hands over a copy, or values that are
    never edited in place."""
    _keep_bounded(_MEMO.texts.setdefault(kind, []), (made_from, text, rows))


def _keep_bounded(kept: list[tuple[Any, ...]], entry: tuple[Any, ...]) -> None:
    """Append ``entry`` (its last field: its rows) to ``kept``, letting the oldest go beyond
    `WORK_KEPT` entries or `WORK_ROWS` rows in all."""
    kept.append(entry)
    while kept and (len(kept) > WORK_KEPT or sum(k[-1] for k in kept) > WORK_ROWS):
        del kept[0]


def _corpus_key(corpus: CorpusSpec) -> tuple:
    # the folder resolved: `corpus.path=docs` and its absolute path are one corpus
    return (str(resolve_user_path(corpus.path, "corpus.path")), corpus.on_error, corpus.extensions,
            tuple(sorted(corpus.parsers)), corpus.max_file_mb, corpus.limits)


def load_corpus_cached(corpus: CorpusSpec, cache: CacheTarget | None
                       ) -> tuple[list[Document], str]:
    """The corpus and its fingerprint, loaded once per process for each parser choice; files
    that need a parser go through the on-disk parse cache (``cache``) when it is on."""
    key = _corpus_key(corpus)
    if key not in _MEMO.corpora:
        records: list[ParseRecord] = []
        skipped: dict[str, str] = {}
        docs = load_corpus(corpus.path, extensions=list(corpus.extensions),
                           on_error=corpus.on_error, parsers=corpus.parser_map,
                           cache_dir=cache, parse_log=records, max_file_mb=corpus.max_file_mb,
                           limits=corpus.limits, skipped=skipped)
        if records:
            parsed = [r for r in records if not r.cached]
            log.info("parsed %d of %d files in %.1f s (%d from the parse cache)", len(parsed),
                     len(records), sum(r.seconds for r in records), len(records) - len(parsed))
        _MEMO.corpora[key] = (docs, corpus_fingerprint(docs))
        _MEMO.skipped[_MEMO.corpora[key][1]] = skipped
        _MEMO.parse_logs[key] = records
    return _MEMO.corpora[key]


def forget_corpus(corpus: CorpusSpec) -> None:
    """Drop this process's copy of ``corpus``: the next load reads the folder as it is now
    (a long-lived page whose corpus is edited between two openings)."""
    _MEMO.corpora.pop(_corpus_key(corpus), None)
    _MEMO.parse_logs.pop(_corpus_key(corpus), None)


def parsing_summary(corpus: CorpusSpec) -> dict[str, Any]:
    """What reading the corpus cost, for report.json: per file and in total. The corpus is
    loaded once per process, so every job of a sweep process shows the same figures."""
    records = _MEMO.parse_logs.get(_corpus_key(corpus), [])
    return {
        "parsers": sorted({r.parser for r in records}),
        "n_files": len(records),
        "n_parsed": sum(not r.cached for r in records),
        "n_cached": sum(r.cached for r in records),
        "total_s": round(sum(r.seconds for r in records), 4),
        "documents": [r.as_dict() for r in records],
    }


def _chunks_key(fingerprint: str, spec: ChunkSpec, tokenizer: str,
                params: SemanticParams | None, embedder: Embedder | None) -> tuple:
    return (fingerprint, spec, tokenizer, params, embedder.fingerprint if embedder else "")


def chunks_for(docs: list[Document], fingerprint: str, spec: ChunkSpec,
               tokenizer: str, params: SemanticParams | None = None,
               embedder: Embedder | None = None,
               cache_dir: str | CacheTarget | None = None) -> list[Chunk]:
    """The chunks of a corpus under ``spec``; the semantic and cluster boundaries also take
    their ``params`` and the ``embedder`` they cut with (memoised by its fingerprint). With
    ``cache_dir`` (a folder, or a `CacheTarget`), token starts come from (and go to) its
    cache."""
    key = _chunks_key(fingerprint, spec, tokenizer, params, embedder)
    if key not in _MEMO.chunks:
        tok = load_chunk_tokenizer(tokenizer)
        if (fingerprint, tokenizer) not in _MEMO.starts:
            cache = get_starts_cache(cache_dir) if cache_dir else None
            with Progress(f"tokenise {len(docs):,} documents ({tokenizer})", bar=False):
                _MEMO.starts[(fingerprint, tokenizer)] = corpus_token_starts(docs, tok, cache)
            release_free_memory()
        starts = _MEMO.starts[(fingerprint, tokenizer)]
        if embedder is None or params is None:
            # The cuts do not depend on the header: chunk.header=none,path cut once.
            cut = (fingerprint, tokenizer, spec.boundary, spec.size, spec.overlap)
            if cut not in _MEMO.spans:  # offsets only: small beside the chunks kept above
                _MEMO.spans[cut] = corpus_spans(
                    docs, spec, tok, starts, get_starts_cache(cache_dir) if cache_dir else None)
                _MEMO.same_cut[cut] = _first_equal_cut(cut)
            made = (_MEMO.same_cut[cut], spec.header)
            if made not in _MEMO.made:
                # the boundary is no input of the chunks beyond their spans: equal spans,
                # size and header make equal chunks
                _MEMO.made[made] = chunk_corpus(docs, spec, tok, starts, _MEMO.spans[cut])
            _MEMO.chunks[key] = _MEMO.made[made]
        else:
            sent: list[int] = []
            # a semantic cut embeds every sentence window: 16 minutes on the Debian book
            cutting = Progress(f"chunk.boundary={spec.boundary} cut", bar=False)

            def embed(texts: list[str]) -> np.ndarray:
                sent.append(len(texts))
                cutting.note = f"{sum(sent):,} sentence texts embedded"
                return embedder.encode(texts, progress=False)

            with cutting:
                _MEMO.chunks[key] = chunk_corpus_embedded(docs, spec, params, starts, embed)
            _MEMO.cut_texts[key] = sum(sent)
    return _MEMO.chunks[key]


def _first_equal_cut(cut: tuple) -> tuple:
    """The first cut kept whose spans equal ``cut``'s, of the same corpus, tokenizer, size
    and overlap (``cut`` itself when none does)."""
    spans = _MEMO.spans[cut]
    for other, first in _MEMO.same_cut.items():
        if other == first and other[:2] == cut[:2] and other[3:] == cut[3:]:
            try:
                if _MEMO.spans[other] == spans:
                    return other
            except ValueError:  # a boundary of elsewhere that gives arrays: not compared
                continue
    return cut


def cut_texts(fingerprint: str, spec: ChunkSpec, tokenizer: str, params: SemanticParams,
              embedder: Embedder) -> int:
    """The texts an embedded boundary's cut sent to its model (cache hits included), once
    `chunks_for` has made that chunking."""
    return _MEMO.cut_texts[_chunks_key(fingerprint, spec, tokenizer, params, embedder)]


def token_starts(fingerprint: str, tokenizer: str) -> list[np.ndarray]:
    """Each document's token starts, once `chunks_for` has tokenised that corpus."""
    return _MEMO.starts[(fingerprint, tokenizer)]


def bm25_for(texts: list[str], params: Bm25Spec, backend: str,
             cache_dir: str | Path | None) -> tuple[BM25Index, float]:
    """The BM25 index of a chunking and the seconds its build took. Built once per process
    for each distinct list of chunk texts: two chunkings that cut the corpus identically (a
    heading split of a corpus without headings is a recursive split) share one index.
    ``backend`` may differ from ``params.backend`` (the diagnosis-only list uses bm25s)."""
    texts_key = parts_key(texts)
    key = (texts_key, backend, params.k1, params.b, params.stopwords)
    if key not in _MEMO.bm25:
        start = time.perf_counter()
        index = BM25Index(texts, k1=params.k1, b=params.b, backend=backend,
                          stopwords=params.stopwords, cache_dir=cache_dir, texts_key=texts_key)
        _MEMO.bm25[key] = (index, time.perf_counter() - start)
    return _MEMO.bm25[key]


def index_for(spec: IndexSpec, chunks: list[Chunk], chunk_vecs: np.ndarray) -> VectorIndex:
    """The approximate index of ``spec`` over these vectors, built once for both passes."""
    key = (spec, parts_key([c.chunk_id for c in chunks]),
           hashlib.sha256(np.ascontiguousarray(chunk_vecs).tobytes()).hexdigest())
    if key not in _MEMO.ann:
        _MEMO.ann.clear()
        tiebreak = tiebreak_order([c.chunk_id for c in chunks])
        # an HNSW build over 100k+ vectors is one FAISS call: only a heartbeat can say it runs
        with Progress(f"index.kind={spec.kind} build over {len(chunks):,} vectors", bar=False):
            _MEMO.ann[key] = build_index(spec, chunk_vecs, tiebreak)
    return _MEMO.ann[key]


def load_golden_cached(path: str) -> GoldenSet:
    key = str(resolve_user_path(path, "golden.path"))
    if key not in _MEMO.goldens:
        _MEMO.goldens[key] = require_valid(load_golden(path))
    return _MEMO.goldens[key]


def reference_spec(golden: GoldenSet) -> tuple[ChunkSpec, str] | None:
    """The chunking the golden set's chunk ids were labelled with, from its sidecar."""
    if golden.reference is None:
        return None
    ref = golden.reference["chunk"]  # types checked by golden.load_reference
    try:  # what the sidecar leaves out is ChunkSpec's default; no header (ids, not vectors)
        spec = ChunkSpec(**{k: ref[k] for k in ("boundary", "size", "overlap") if k in ref}
                         ).validate()
    except SweepError as exc:
        raise SweepError(f"{reference_path(Path(golden.path))}: reference chunking is invalid "
                         f"({exc})") from None
    return spec, str(ref.get("tokenizer", DEFAULT_TOKENIZER))


def resolve_golden(golden: GoldenSet, docs: list[Document], fingerprint: str
                   ) -> list[ResolvedItem]:
    key = (golden.fingerprint, fingerprint)
    if key not in _MEMO.resolved:
        ref = reference_spec(golden)
        reference_chunks = None
        # Only chunk ids need the reference chunking: a golden set of quotes alone does not
        # hold a second chunking of the corpus in memory (issue 14, item 3).
        if ref is not None and any(item.relevant_chunk_ids for item in golden.items):
            reference_chunks = {c.chunk_id: c for c in chunks_for(docs, fingerprint, *ref)}
        corpus = CorpusIndex(docs, _MEMO.skipped.get(fingerprint))
        _MEMO.resolved[key] = resolve_all(golden.items, corpus, reference_chunks, golden.path)
    return _MEMO.resolved[key]


def golden_drift(golden: GoldenSet, docs: list[Document], fingerprint: str) -> Drift | None:
    """The golden set's corpus record against ``docs``, warned about once per process (a
    sweep runs many jobs on one corpus), with the pending items' count."""
    key = (golden.fingerprint, fingerprint)
    if key not in _MEMO.drift:
        _MEMO.drift[key] = corpus_drift(golden.path, docs)
        if _MEMO.drift[key] is not None:
            log.warning("%s: %s", golden.path, _MEMO.drift[key].message)
        if golden.pending:
            log.warning("%s: %d items await review after `sweep golden rebase` and are not "
                        "scored (sweep label --review FILE)", golden.path, len(golden.pending))
    return _MEMO.drift[key]


def item_smells_cached(golden: GoldenSet, fingerprint: str, resolved: list[ResolvedItem],
                       texts: dict[str, str]) -> list[float | None]:
    """Each resolved item's smell (`item_smells`), once per golden set and corpus: ~24 ms on
    COVID-QA's 1,380 items, once a sweep."""
    key = (golden.fingerprint, fingerprint)
    if key not in _MEMO.smells:
        _MEMO.smells[key] = item_smells(resolved, texts)
    return _MEMO.smells[key]
