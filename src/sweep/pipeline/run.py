"""One configuration, end to end: corpus -> chunks -> embeddings -> ranking -> metrics.

No Hydra and no MLflow here: `run_config` takes the typed `Config` and returns plain data.
Work that does not depend on the swept variables (loading the corpus and golden set, the
reference chunking, query embeddings) is memoised per process, so a sweep run by the basic
launcher pays for it once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sweep.chunking.cache import get_starts_cache
from sweep.chunking.chunkers import (
    Chunk,
    ChunkSpec,
    chunk_corpus,
    chunk_stats,
    corpus_spans,
    corpus_token_starts,
)
from sweep.chunking.reference import load_golden
from sweep.chunking.semantic import SemanticParams, chunk_corpus_embedded
from sweep.chunking.tokenizers import DEFAULT_TOKENIZER, load_chunk_tokenizer
from sweep.common.errors import SweepError
from sweep.common.memory import release_free_memory
from sweep.common.progress import Progress
from sweep.common.sqlite import parts_key
from sweep.common.store import CacheTarget
from sweep.config.compose import to_container
from sweep.config.identity import config_hash
from sweep.config.schema import Config
from sweep.config.specs import (
    cache_target,
    chunk_spec,
    corpus_limits,
    corpus_parsers,
    embedding_spec,
    eval_spec,
    index_spec,
    rerank_spec,
    semantic_params,
    served_rerank_spec,
)
from sweep.data.abstentions import Abstention, load_abstentions
from sweep.data.corpus import Document, corpus_fingerprint, load_corpus
from sweep.data.drift import Drift, corpus_drift
from sweep.data.golden import (
    GoldenSet,
    raise_first_error,
    reference_path,
    require_valid,
)
from sweep.data.parsers import ParseRecord
from sweep.embedding.cache import get_cache
from sweep.embedding.models import Embedder, get_embedder
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.cost import chat_cost_usd, served_usage_before, served_usage_metrics
from sweep.endpoints.spec import EndpointSpec
from sweep.evaluation.abstention import separation
from sweep.evaluation.evaluate import EvalSpec, by_needs, by_needs_metrics, evaluate
from sweep.evaluation.metrics import covered_chars
from sweep.evaluation.misses import diagnose_misses, miss_views, truncation_cuts
from sweep.evaluation.relevance import (
    ChunkLocator,
    CorpusIndex,
    ResolvedItem,
    quote_metrics,
    resolve_all,
)
from sweep.evaluation.smell import mean_smell
from sweep.evaluation.sources import (
    add_source_columns,
    headline_names,
    item_smells,
    score_by_source,
    source_metrics,
)
from sweep.generation.cache import get_judge_cache
from sweep.generation.run import (
    DIAGNOSES,
    ChatReader,
    ExtractiveReader,
    GenItem,
    Judge,
    Passage,
    Reader,
    run_generation,
)
from sweep.pipeline.strategies import contextual_chunks, cut_embedder, returned
from sweep.retrieval.bm25 import BM25Index, stopwords_for
from sweep.retrieval.index import IndexSpec, VectorIndex, build_index, overlap_at_k
from sweep.retrieval.ranking import Ranking, tiebreak_order
from sweep.retrieval.rerank import (
    CrossEncoderReranker,
    ServedReranker,
    get_reranker,
    get_served_reranker,
)
from sweep.retrieval.search import ConfigSearch, SearchResult, latency_summary

log = logging.getLogger(__name__)

@dataclass
class JobResult:
    report: dict[str, Any]
    rows: list[dict[str, Any]]
    chunks: list[Chunk] = field(repr=False)
    # What the generation half reuses: the resolved items and the final rankings.
    resolved: list[ResolvedItem] = field(default_factory=list, repr=False)
    rankings: list[Ranking] = field(default_factory=list, repr=False)
    # The per-question view (misses.json / misses.html / `sweep show`).
    views: list[dict[str, Any]] = field(default_factory=list, repr=False)


@dataclass
class _Memo:
    corpora: dict[tuple, tuple[list[Document], str]] = field(default_factory=dict)
    parse_logs: dict[tuple, list[ParseRecord]] = field(default_factory=dict)
    chunks: dict[tuple, list[Chunk]] = field(default_factory=dict)
    starts: dict[tuple, list[np.ndarray]] = field(default_factory=dict)
    spans: dict[tuple, list[list[tuple[int, int]]]] = field(default_factory=dict)
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


_MEMO = _Memo()


def clear_memo() -> None:
    global _MEMO
    _MEMO = _Memo()


def _corpus_key(cfg: Config) -> tuple:
    return (str(Path(cfg.corpus.path).resolve()), cfg.corpus.on_error,
            tuple(cfg.corpus.extensions), tuple(sorted(corpus_parsers(cfg).items())),
            cfg.corpus.max_file_mb, corpus_limits(cfg))


def load_corpus_cached(cfg: Config) -> tuple[list[Document], str]:
    """The corpus and its fingerprint, loaded once per process for each parser choice; files
    that need a parser go through the on-disk parse cache (``cache.dir``) when it is on."""
    key = _corpus_key(cfg)
    if key not in _MEMO.corpora:
        records: list[ParseRecord] = []
        skipped: dict[str, str] = {}
        docs = load_corpus(cfg.corpus.path, extensions=cfg.corpus.extensions,
                           on_error=cfg.corpus.on_error, parsers=corpus_parsers(cfg),
                           cache_dir=cache_target(cfg),
                           parse_log=records, max_file_mb=cfg.corpus.max_file_mb,
                           limits=corpus_limits(cfg), skipped=skipped)
        if records:
            parsed = [r for r in records if not r.cached]
            log.info("parsed %d of %d files in %.1f s (%d from the parse cache)", len(parsed),
                     len(records), sum(r.seconds for r in records), len(records) - len(parsed))
        _MEMO.corpora[key] = (docs, corpus_fingerprint(docs))
        _MEMO.skipped[_MEMO.corpora[key][1]] = skipped
        _MEMO.parse_logs[key] = records
    return _MEMO.corpora[key]


def parsing_summary(cfg: Config) -> dict[str, Any]:
    """What reading the corpus cost, for report.json: per file and in total. The corpus is
    loaded once per process, so every job of a sweep process shows the same figures."""
    records = _MEMO.parse_logs.get(_corpus_key(cfg), [])
    return {
        "parsers": sorted({r.parser for r in records}),
        "n_files": len(records),
        "n_parsed": sum(not r.cached for r in records),
        "n_cached": sum(r.cached for r in records),
        "total_s": round(sum(r.seconds for r in records), 4),
        "documents": [r.as_dict() for r in records],
    }


def chunks_for(docs: list[Document], fingerprint: str, spec: ChunkSpec,
               tokenizer: str, params: SemanticParams | None = None,
               embedder: Embedder | None = None,
               cache_dir: str | CacheTarget | None = None) -> list[Chunk]:
    """The chunks of a corpus under ``spec``; the semantic and cluster boundaries also take
    their ``params`` and the ``embedder`` they cut with (memoised by its fingerprint). With
    ``cache_dir`` (a folder, or a `CacheTarget`), token starts come from (and go to) its
    cache."""
    key = (fingerprint, spec, tokenizer, params, embedder.fingerprint if embedder else "")
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
            _MEMO.chunks[key] = chunk_corpus(docs, spec, tok, starts, _MEMO.spans[cut])
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


def bm25_for(texts: list[str], cfg: Config, backend: str) -> tuple[BM25Index, float]:
    """The BM25 index of a chunking and the seconds its build took. Built once per process
    for each distinct list of chunk texts: two chunkings that cut the corpus identically (a
    heading split of a corpus without headings is a recursive split) share one index."""
    r = cfg.retrieval
    key = (parts_key(texts), backend, r.bm25_k1, r.bm25_b, r.bm25_stopwords)
    if key not in _MEMO.bm25:
        start = time.perf_counter()
        index = BM25Index(texts, k1=r.bm25_k1, b=r.bm25_b, backend=backend,
                          stopwords=r.bm25_stopwords, cache_dir=_cache_dir(cfg))
        _MEMO.bm25[key] = (index, time.perf_counter() - start)
    return _MEMO.bm25[key]


def truncation(embedder: Embedder, texts: list[str], name: str) -> float:
    """Fraction of chunks longer than the model's max_seq_length (silently cut by the model)."""
    lengths = embedder.token_lengths(texts)
    if lengths is None or not embedder.max_seq_length:
        return 0.0
    over = sum(n > embedder.max_seq_length for n in lengths)
    if over:
        log.warning("%d of %d chunks (%.0f%%) exceed %s's max_seq_length (%d tokens, special "
                    "tokens included) and are silently truncated by the model", over,
                    len(lengths), 100 * over / len(lengths), name, embedder.max_seq_length)
    return over / len(lengths)


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


def make_search(chunks: list[Chunk], method: str, cfg: Config, chunk_vecs: np.ndarray | None,
                bm25: BM25Index | None, reranker: CrossEncoderReranker | None) -> ConfigSearch:
    r = cfg.retrieval
    spec = index_spec(cfg)
    index = (index_for(spec, chunks, chunk_vecs)
             if chunk_vecs is not None and spec.kind != "exact" else None)
    return ConfigSearch(chunks, method, r.depth, chunk_vecs=chunk_vecs, bm25=bm25,
                        rrf_k=r.rrf_k, dense_weight=r.dense_weight, bm25_weight=r.bm25_weight,
                        reranker=reranker, pool=cfg.rerank.pool, index=index)


def index_report(cfg: Config, search: ConfigSearch, results: list[SearchResult],
                 query_vecs: np.ndarray | None, resolved: list[ResolvedItem], espec: EvalSpec,
                 summary: dict[str, float], rows: list[dict[str, Any]],
                 texts: dict[str, str] | None = None) -> dict[str, float]:
    """The ANN tax of an approximate index: the same configuration searched exactly over the
    same vectors (in memory already), scored the same way. Returns the index metrics and adds
    each question's exact and index rank of its first relevant chunk to ``rows``. Exact
    search is the reference and reports nothing."""
    index = search.index
    if index is None or search.chunk_vecs is None:
        return {}
    exact = dataclasses.replace(search, index=None).run_all(
        [r.item.question for r in resolved], query_vecs)
    exact_summary, exact_rows = evaluate(resolved, search.chunks, [r.final for r in exact],
                                         espec, texts=texts)
    out = overlap_at_k([r.dense for r in exact if r.dense is not None],
                       [r.dense for r in results if r.dense is not None], espec.k)
    for name in sorted({cfg.eval.headline, "mrr"}):
        if name in summary and name in exact_summary:
            out[f"ann_tax_{name}"] = exact_summary[name] - summary[name]
    out["index_build_ann_s"] = index.build_s
    if index.nbytes:  # not observable for a server-side index
        out["index_bytes_ann"] = float(index.nbytes)
    lost = gained = 0
    for row, ref in zip(rows, exact_rows, strict=True):
        if row["status"] != "scored":
            continue
        mine, theirs = row["first_relevant_rank"], ref["first_relevant_rank"]
        row["index_first_relevant_rank"] = mine
        row["exact_first_relevant_rank"] = theirs
        was, now = _in_top(theirs, espec.prompt_k), _in_top(mine, espec.prompt_k)
        row["ann_flip"] = "lost" if was and not now else "gained" if now and not was else ""
        lost += was and not now
        gained += now and not was
    out["ann_lost_at_prompt_k"] = float(lost)
    out["ann_gained_at_prompt_k"] = float(gained)
    return out


def _in_top(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def measure_latency(chunks: list[Chunk], method: str, cfg: Config,
                    chunk_vecs: np.ndarray | None, bm25: BM25Index | None,
                    reranker: CrossEncoderReranker | None, embedder: Embedder | None,
                    questions: list[str]) -> dict[str, float]:
    """p50/p95 per stage over up to ``eval.latency_sample`` questions, run one at a time with
    only the stages this method uses, after two warm-up questions. The query embedding is the
    uncached model call, timed once per embedding setting and question
    (`Embedder.timed_queries`)."""
    n = min(cfg.eval.latency_sample, len(questions))
    if n == 0:
        return {}
    search = make_search(chunks, method, cfg, chunk_vecs, bm25, reranker)
    sample = questions[:n]
    if chunk_vecs is not None and embedder is None:
        raise ValueError("dense latency needs the embedder")
    timed = (embedder.timed_queries(sample) if chunk_vecs is not None and embedder is not None
             else [(None, None)] * n)
    for q, (vec, _) in zip(sample[:2], timed, strict=False):
        search.run(q, vec)
    return latency_summary([search.run(q, vec, query_ms=ms).times_ms
                            for q, (vec, ms) in zip(sample, timed, strict=True)])


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


def load_golden_cached(path: str) -> GoldenSet:
    key = str(Path(path).resolve())
    if key not in _MEMO.goldens:
        _MEMO.goldens[key] = require_valid(load_golden(path))
    return _MEMO.goldens[key]


def _cache_dir(cfg: Config) -> str | None:
    return cfg.cache.dir if cfg.cache.enabled else None


def embedder_for(cfg: Config) -> Embedder:
    embedder = get_embedder(embedding_spec(cfg))
    target = cache_target(cfg)
    embedder.cache = get_cache(target) if target is not None else None
    return embedder


@contextmanager
def stage_timer(timings: dict[str, float], key: str) -> Iterator[None]:
    """Record the seconds the block took as ``timings[key]`` (only when it finishes)."""
    start = time.perf_counter()
    yield
    timings[key] = time.perf_counter() - start


@dataclass
class Indexes:
    """What one configuration searches with: the dense vectors and/or the BM25 index."""

    embedder: Embedder | None = None
    chunk_vecs: np.ndarray | None = None
    query_vecs: np.ndarray | None = None
    bm25: BM25Index | None = None
    truncated: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)


def build_indexes(cfg: Config, chunks: list[Chunk], questions: list[str],
                  timings: dict[str, float], *, progress: bool = True) -> Indexes:
    """Embed chunks and questions (``embed_s``) when the method or the diagnosis needs them,
    then check truncation and build the BM25 index (``index_s``)."""
    method = cfg.retrieval.method.value
    uses_dense = method in ("dense", "hybrid")
    uses_bm25 = method in ("bm25", "hybrid")
    texts = [c.embed_text for c in chunks]
    out = Indexes()
    if uses_dense or cfg.retrieval.diagnose:
        with stage_timer(timings, "embed_s"):
            # loading a model the first time (and exporting an ONNX one) takes minutes
            with Progress(f"load embedding model {cfg.embedding.name}", bar=False):
                out.embedder = embedder_for(cfg)
            encoded_before = out.embedder.encoded_texts
            read_before = out.embedder.read_from_cache
            out.chunk_vecs = out.embedder.encode(texts, progress=progress)
            out.query_vecs = out.embedder.encode(questions, query=True, progress=progress)
        release_free_memory()  # what the model's batches freed, before the BM25 build
        out.metrics["n_texts_encoded"] = float(out.embedder.encoded_texts - encoded_before)
        out.metrics["n_texts_from_cache"] = float(out.embedder.read_from_cache - read_before)
        out.metrics["index_bytes_dense"] = float(out.chunk_vecs.nbytes)
    with stage_timer(timings, "index_s"):  # truncation check, BM25 index
        if out.embedder is not None:
            with Progress(f"truncation check over {len(texts):,} chunks", bar=False):
                out.truncated = truncation(out.embedder, texts, cfg.embedding.name)
        if uses_bm25 or cfg.retrieval.diagnose:
            # The diagnosis-only BM25 list uses bm25s: the same scores as rank-bm25 (tested on
            # SciFact), ~70x faster per question, and it never changes the metrics.
            backend = cfg.retrieval.bm25_backend.value if uses_bm25 else "bm25s"
            with Progress(f"BM25 index over {len(texts):,} chunks", bar=False):
                out.bm25, build_s = bm25_for(texts, cfg, backend)
            out.metrics["index_bytes_bm25"] = float(out.bm25.size_bytes())
            out.metrics["index_build_bm25_s"] = build_s  # reading it back, when cached
            out.metrics["bm25_index_cached"] = float(out.bm25.from_cache)
    return out


def load_reranker(cfg: Config) -> CrossEncoderReranker | ServedReranker | None:
    """What can fail on bad input (stop words file, reranker model), loaded before the
    expensive embedding step."""
    if cfg.retrieval.method.value in ("bm25", "hybrid") or cfg.retrieval.diagnose:
        stopwords_for(cfg.retrieval.bm25_stopwords)
    if cfg.rerank.method.value == "cross_encoder":
        return get_reranker(rerank_spec(cfg))
    if cfg.rerank.method.value == "cohere":
        return get_served_reranker(served_rerank_spec(cfg))
    return None


@dataclass
class MissAnalysis:
    counts: dict[str, float]
    views: list[dict[str, Any]]


def miss_analysis(resolved: list[ResolvedItem], rows: list[dict[str, Any]], chunks: list[Chunk],
                  docs: list[Document], rankings: list[Ranking],
                  diagnostics: dict[str, list[Ranking | None]], prompt_k: int,
                  embedder: Embedder | None, any_truncated: bool) -> MissAnalysis:
    """Each question's miss cause (into its row), the counts, and the per-question view."""
    cuts: dict[str, int] = {}
    if embedder is not None and any_truncated:
        kept = embedder.kept_chars([c.embed_text for c in chunks])
        cuts = truncation_cuts(chunks, kept, len(embedder.spec.document_prefix))
    spans = [r.spans for r in resolved]
    counts = diagnose_misses(rows, spans, chunks, prompt_k, cuts, embedder is not None)
    texts = {d.doc_id: d.text for d in docs}
    pages = {d.doc_id: d.pages for d in docs if d.pages}
    views = miss_views(rows, spans, chunks, texts, rankings, diagnostics, prompt_k, cuts,
                       pages=pages)
    return MissAnalysis(counts, views)


def latency_origin(sample: int, embedder: Embedder | None, before: tuple[int, int]) -> str:
    """Where this run's latency figures come from, for report.json."""
    if sample == 0:
        return "skipped (eval.latency_sample=0)"
    if embedder is None:
        return "measured"
    now = embedder.timed_now - before[0]
    cached = embedder.timed_from_cache - before[1]
    if cached and not now:
        return "search measured; query embedding times cached (measured earlier on this machine)"
    if not cached and not now:  # every question's time is in memory from an earlier job
        return ("search measured; query embedding times reused from an earlier configuration "
                "of this process")
    return "measured" if not cached else (f"measured; {cached} of {cached + now} query "
                                          "embedding times cached from this machine")


def run_config(cfg: Config, *, progress: bool = True,
               plain: dict[str, Any] | None = None) -> JobResult:
    """Evaluate one configuration. Raises `SweepError` for bad input. ``plain`` is ``cfg`` as
    plain data (`to_container`) when the caller has it already: the Hydra job does, and
    converting the typed config again costs a structured OmegaConf copy."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    # A served model's usage before this configuration (the process-wide embedder serves every
    # job of a sweep): what this job sent is the difference. Taken before chunking, so the
    # requests of a semantic cut with the swept model count too. Building a served embedder
    # loads nothing.
    served_embedder = embedder_for(cfg) if cfg.embedding.family.value == "openai" else None
    served = served_usage_before(served_embedder)
    with stage_timer(timings, "load_s"):
        plain = to_container(cfg) if plain is None else plain
        docs, corpus_fp = load_corpus_cached(cfg)
        golden = load_golden_cached(cfg.golden.path)
        resolved = resolve_golden(golden, docs, corpus_fp)
        raise_first_error([p for r in resolved for p in r.problems])
        drift = golden_drift(golden, docs, corpus_fp)
    with stage_timer(timings, "chunk_s"):  # the cutting model and the headers' model included
        spec = chunk_spec(cfg)
        cut_texts = None
        if spec.boundary in ("semantic", "cluster"):
            cutter, params = cut_embedder(cfg, embedder_for), semantic_params(cfg)
            chunks = chunks_for(docs, corpus_fp, spec, cfg.chunk.tokenizer, params, cutter,
                                cache_dir=cache_target(cfg))
            cut_texts = _MEMO.cut_texts[(corpus_fp, spec, cfg.chunk.tokenizer, params,
                                         cutter.fingerprint)]
        else:
            chunks = chunks_for(docs, corpus_fp, spec, cfg.chunk.tokenizer,
                                cache_dir=cache_target(cfg))
        context_metrics: dict[str, float] = {}
        if spec.header == "contextual":
            chunks, context_metrics = contextual_chunks(
                cfg, chunks, docs, _MEMO.starts[(corpus_fp, cfg.chunk.tokenizer)], progress)
        if not chunks:
            raise SweepError(f"corpus {cfg.corpus.path} produced no chunks")

    method = cfg.retrieval.method.value
    questions = [r.item.question for r in resolved]
    # Questions the corpus cannot answer are searched with the others (the same embedding
    # pass), then set apart: only their top-1 scores are read (evaluation/abstention.py).
    abstentions, _ = load_abstentions(cfg.golden.path)
    searched_questions = questions + [a.question for a in abstentions]
    reranker = load_reranker(cfg)
    served.update(served_usage_before(reranker))
    ix = build_indexes(cfg, chunks, searched_questions, timings, progress=progress)
    with stage_timer(timings, "search_s"):
        search = make_search(chunks, method, cfg, ix.chunk_vecs, ix.bm25, reranker)
        results = search.run_all(searched_questions, ix.query_vecs)
        abstained = [r.final for r in results[len(questions):]]
        results = results[:len(questions)]
        if ix.query_vecs is not None:
            ix.query_vecs = ix.query_vecs[:len(questions)]
        rankings = [r.final for r in results]
    uses_dense = method in ("dense", "hybrid")
    counted = (ix.embedder.timed_now, ix.embedder.timed_from_cache) if ix.embedder else (0, 0)
    with stage_timer(timings, "latency_s"):
        latency = measure_latency(chunks, method, cfg, ix.chunk_vecs if uses_dense else None,
                                  ix.bm25 if method in ("bm25", "hybrid") else None,
                                  reranker, ix.embedder, questions)
    latency_source = latency_origin(cfg.eval.latency_sample,
                                    ix.embedder if uses_dense else None, counted)
    with stage_timer(timings, "eval_s"):
        diagnostics = {"dense": [r.dense for r in results], "bm25": [r.bm25 for r in results]}
        # Scored on what is returned (retrieval.unit): the chunks, or the units around them.
        searched, rankings_searched = chunks, rankings
        chunks, rankings, diagnostics = returned(
            cfg, chunks, docs, _MEMO.starts[(corpus_fp, cfg.chunk.tokenizer)], rankings,
            diagnostics)
        texts = {d.doc_id: d.text for d in docs}
        espec = eval_spec(cfg)
        summary, rows = evaluate(resolved, chunks, rankings, espec, diagnostics, texts)
        if chunks is searched:  # the ANN tax compares chunk rankings (retrieval.unit=chunk)
            ix.metrics.update(index_report(cfg, search, results, ix.query_vecs, resolved,
                                           espec, summary, rows, texts))
        add_pages(rows, resolved, rankings, chunks, docs)
        misses = miss_analysis(resolved, rows, chunks, docs, rankings, diagnostics,
                               cfg.eval.prompt_k, ix.embedder if uses_dense else None,
                               ix.truncated > 0)
        summary.update(misses.counts)
        smell_key = (golden.fingerprint, corpus_fp)
        if smell_key not in _MEMO.smells:  # ~24 ms on COVID-QA's 1,380 items: once a sweep
            _MEMO.smells[smell_key] = item_smells(resolved, texts)
        add_source_columns(rows, resolved, _MEMO.smells[smell_key])
        sources = score_by_source(rows, headline_names(espec.k, espec.prompt_k,
                                                       cfg.eval.headline))
    timings["total_s"] = time.perf_counter() - t0

    headline = cfg.eval.headline
    if headline not in summary:  # check_config vouches for the name; no question scored it
        raise SweepError(f"eval.headline={headline!r}: no question could be scored for it "
                         f"({summary['n_orphans']} orphans, {summary['n_doc_only']} document-"
                         "level only)")
    metrics = dict(summary)
    split = by_needs(rows, need_split_metrics(headline, cfg.eval.prompt_k))
    metrics.update(by_needs_metrics(split))
    metrics.update(chunk_stats(searched))
    if chunks is not searched:
        metrics["n_returned_units"] = len(chunks)
    metrics.update(context_metrics)
    if cut_texts is not None:  # cache hits included: the cost of a cold cache
        metrics["n_texts_embedded_for_cutting"] = float(cut_texts)
    metrics.update(ix.metrics)
    metrics.update(quote_metrics(resolved))
    metrics.update(latency)
    if ix.embedder is None or ix.embedder.max_seq_length is not None:
        # behind an endpoint the model's max_seq_length is unknown: no figure rather than 0
        metrics["truncated_fraction"] = ix.truncated
    metrics.update(served_usage_metrics(served, served_embedder, reranker))
    smell, _ = mean_smell(r["smell"] for r in rows)
    if smell is not None:
        metrics["smell_mean"] = smell
    metrics.update(source_metrics(sources))
    metrics.update(separation(
        [top1_score(rk) for rk, row in zip(rankings_searched, rows, strict=True)
         if row["status"] == "scored"], [top1_score(rk) for rk in abstained]))
    report = {
        "status": "FINISHED",
        "config": plain,
        "config_hash": config_hash(plain, corpus_fp, golden.fingerprint),
        "headline": {"metric": headline, "value": summary[headline]},
        "by_needs": split,
        "metrics": metrics,
        "timings_s": timings,
        "fingerprints": {"corpus": corpus_fp, "golden": golden.fingerprint,
                         "model": ix.embedder.fingerprint if ix.embedder else ""},
        "latency_note": LATENCY_NOTE,
        "latency_source": latency_source,
        **row_lists(rows),
        "golden_warnings": [str(p) for p in golden.problems if p.severity == "warning"]
        + [str(p) for r in resolved for p in r.problems if p.severity == "warning"],
        "n_documents": len(docs),
        "parsing": parsing_summary(cfg),
        **embedding_work(cfg, ix.metrics),
        # Not scored, and said so: items a rebase left for review, and a corpus that moved
        # since the labels were made (sweep.data.drift).
        "golden_pending_review": len(golden.pending),
        "golden_corpus_drift": drift.as_dict() if drift else None,
        "sources": sources,
        **({"abstentions": abstention_rows(abstentions, abstained, searched)}
           if abstentions else {}),
    }
    return JobResult(report, rows, chunks, list(resolved), rankings, misses.views)


def embedding_work(cfg: Config, metrics: dict[str, float]) -> dict[str, Any]:
    """What this job's embedding cost, for report.json: the texts it sent to a model
    (``texts_encoded``) beside those the cache answered (``texts_from_cache``; texts already
    in the process's memory from an earlier job count in neither), which cache that was, and
    the node that ran the job (a cluster's sweep sums them per node)."""
    return {
        "texts_encoded": int(metrics.get("n_texts_encoded", 0)),
        "texts_from_cache": int(metrics.get("n_texts_from_cache", 0)),
        "cache_backend": cfg.cache.backend if cfg.cache.enabled else "none",
        # $CHUNK_SWEEP_NODE names a node where several share one host (a local test cluster)
        "node": os.environ.get("CHUNK_SWEEP_NODE") or socket.gethostname(),
    }


def need_split_metrics(headline: str, prompt_k: int) -> list[str]:
    """What the report splits by the number of passages an answer needs: the headline, and
    recall, full recall and passages found at the prompt's k."""
    return list(dict.fromkeys([headline, f"recall_at_{prompt_k}",
                               f"full_recall_at_{prompt_k}", f"passages_found_at_{prompt_k}"]))


LATENCY_NOTE = ("milliseconds per question, one question at a time, after a warm-up "
                "(model loaded, index built, caches warm); query embedding is not "
                "served from the embedding cache: it is timed once per embedding "
                "setting, question and machine, kept with the cache, and added to each "
                "configuration's end-to-end time")


def top1_score(ranking: Ranking) -> float:
    """The top chunk's score; 0 when nothing matched (BM25: the question shares no word)."""
    return float(ranking.scores[0]) if ranking.scores else 0.0


def abstention_rows(abstentions: list[Abstention], rankings: list[Ranking],
                    chunks: list[Chunk]) -> dict[str, Any]:
    """What report.json says of each abstention: its top chunk and that chunk's score."""
    return {
        "measure": "top-1 retrieval score of questions the corpus cannot answer against that "
                   "of the scored golden items (abstention_auroc, abstention_caught_at_95; "
                   "docs/labelling-queue.md)",
        "questions": [{"qid": a.qid, "question": a.question, "source": a.source,
                       "top_chunk": chunks[rk.indices[0]].chunk_id if rk.indices else None,
                       "top1_score": top1_score(rk)}
                      for a, rk in zip(abstentions, rankings, strict=True)],
    }


def row_lists(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The questions only one retriever found, and the orphans with their reasons."""
    return {
        "found_only_by": {k: [r["qid"] for r in rows if r.get("found_by") == f"{k}_only"]
                          for k in ("dense", "bm25")},
        "orphans": [{"qid": r["qid"], "reason": r.get("orphan_reason", "")}
                    for r in rows if r["status"] == "orphan"],
    }


def add_pages(rows: list[dict[str, Any]], resolved: list[ResolvedItem],
              rankings: list[Ranking], chunks: list[Chunk], docs: list[Document]) -> None:
    """For PDFs, the page of each question's first evidence span, of its top chunk and of
    its first relevant chunk (the one ``first_relevant_rank`` counts), so per_question.csv
    can say "page 41"."""
    by_id = {d.doc_id: d for d in docs if d.pages}
    if not by_id:
        return
    for row, res, ranking in zip(rows, resolved, rankings, strict=True):
        if res.spans and res.spans[0][0] in by_id:
            row["evidence_page"] = by_id[res.spans[0][0]].page_at(res.spans[0][1])
        if ranking.indices and chunks[ranking.indices[0]].doc_id in by_id:
            top = chunks[ranking.indices[0]]
            row["top_chunk_page"] = by_id[top.doc_id].page_at(top.start)
        relevant = set(str(row.get("relevant_ids") or "").split())
        first = next((chunks[i] for i in ranking.indices if chunks[i].chunk_id in relevant),
                     None)
        if first is not None and first.doc_id in by_id:
            row["first_relevant_page"] = by_id[first.doc_id].page_at(first.start)


def gen_items(result: JobResult, prompt_k: int, docs: list[Document], limit: int = 0
              ) -> list[GenItem]:
    """The scorable questions with their oracle context (every chunk of this configuration
    that holds evidence, in document order) and live context (the top ``prompt_k``)."""
    chunks = result.chunks
    position = {c.chunk_id: i for i, c in enumerate(chunks)}  # chunk_corpus keeps doc order
    locator = ChunkLocator(chunks)
    text = {d.doc_id: d.text for d in docs}
    items = []
    for row, res, ranking in zip(result.rows, result.resolved, result.rankings, strict=True):
        if row["status"] != "scored":
            continue
        # Every chunk that holds any evidence character, not only those over min_overlap:
        # the oracle must hand over all of the evidence.
        oracle = sorted({position[c.chunk_id] for d, a, b in res.spans
                         for c in locator.overlapping(d, a, b)})
        live = list(ranking.indices[:prompt_k])
        covered, total = covered_chars(res.spans, [(chunks[i].doc_id, chunks[i].start,
                                                    chunks[i].end) for i in live])
        items.append(GenItem(
            qid=res.item.qid, question=res.item.question,
            mentions=tuple(res.item.answer_must_mention),
            reference="\n".join(f"- {text[d][a:b]}" for d, a, b in res.spans),
            oracle=tuple(passage(chunks[i]) for i in oracle),
            live=tuple(passage(chunks[i]) for i in live),
            evidence_in_live=covered == total))
        if limit and len(items) == limit:
            break
    return items


def passage(chunk: Chunk) -> Passage:
    return Passage(" > ".join(chunk.heading_path) or chunk.doc_id, chunk.text)


def make_reader(cfg: Config) -> Reader:
    g = cfg.generation
    if g.method.value == "extractive":
        return ExtractiveReader(embedder_for(cfg).encode, g.max_chars, g.max_sentences)
    client = ChatClient(EndpointSpec("generation", g.base_url, g.api_key_env, g.timeout_s,
                                     g.max_retries, g.concurrency), g.model)
    client.preflight()
    return ChatReader(client, g.system_prompt, g.prompt, g.temperature, g.max_tokens)


def make_judge(cfg: Config) -> Judge | None:
    j = cfg.judge
    if j.method.value == "none":
        return None
    client = ChatClient(EndpointSpec("judge", j.base_url, j.api_key_env, j.timeout_s,
                                     j.max_retries, j.concurrency), j.model)
    client.preflight()
    return Judge(client, get_judge_cache(cfg.cache.dir) if cfg.cache.enabled else None)


def run_generation_for(cfg: Config, result: JobResult, *, progress: bool = True) -> None:
    """The generation half on a finished retrieval result: adds its metrics to the report and
    its columns to the rows, in place. Raises `SweepError` (endpoint down, key refused): the
    caller keeps the retrieval numbers."""
    if cfg.generation.method.value == "none":
        return
    t = time.perf_counter()
    docs, _ = load_corpus_cached(cfg)
    items = gen_items(result, cfg.eval.prompt_k, docs, cfg.generation.limit)
    reader = make_reader(cfg)
    judge = make_judge(cfg)
    outcome = run_generation(items, reader, judge, progress=progress)
    metrics = result.report["metrics"]
    metrics.update(outcome.summary)
    g, j = cfg.generation, cfg.judge
    costs = [chat_cost_usd(outcome.usage["gen"], g.price_input_per_mtok, g.price_output_per_mtok)]
    if "judge" in outcome.usage:
        costs.append(chat_cost_usd(outcome.usage["judge"], j.price_input_per_mtok,
                              j.price_output_per_mtok))
    if any(c is not None for c in costs):
        metrics["cost_estimate_usd"] = sum(c or 0.0 for c in costs)
    for row in result.rows:
        row.update(outcome.rows.get(row["qid"], {}))
    result.report["timings_s"]["generate_s"] = time.perf_counter() - t
    result.report["generation"] = {
        "reader": reader.name, "judge": cfg.judge.method.value,
        "questions": len(items),
        "diagnosis": {d: int(outcome.summary[f"n_{d}"]) for d in DIAGNOSES},
        "note": "accuracy over questions graded on both sides; ungraded ones are counted in "
                "ungraded_count, never as wrong",
    }
