"""One configuration, end to end: corpus -> chunks -> embeddings -> ranking -> metrics.

No Hydra and no MLflow here: `run_config` takes the typed `Config` and returns plain data.
Work that does not depend on the swept variables (loading the corpus and golden set, the
reference chunking, query embeddings) is memoised per process, so a sweep run by the basic
launcher pays for it once.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sweep.chunking.chunkers import (
    Chunk,
    ChunkSpec,
    chunk_corpus,
    chunk_stats,
    corpus_token_starts,
)
from sweep.chunking.tokenizers import load_chunk_tokenizer
from sweep.common.errors import SweepError
from sweep.common.sqlite import parts_key
from sweep.config.compose import to_container
from sweep.config.identity import config_hash
from sweep.config.schema import Config
from sweep.config.specs import embedding_spec, served_rerank_spec
from sweep.data.corpus import Document, corpus_fingerprint, load_corpus
from sweep.data.golden import (
    GoldenSet,
    load_golden,
    raise_first_error,
    reference_path,
    require_valid,
)
from sweep.embedding.cache import get_cache
from sweep.embedding.models import Embedder, get_embedder
from sweep.embedding.served import (
    get_served_reranker,
    served_usage_before,
    served_usage_metrics,
)
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.metrics import covered_chars
from sweep.evaluation.relevance import ChunkLocator, CorpusIndex, ResolvedItem, resolve_all
from sweep.generation.cache import get_judge_cache
from sweep.generation.run import (
    DIAGNOSES,
    ChatClient,
    ChatReader,
    Endpoint,
    ExtractiveReader,
    GenItem,
    Judge,
    Passage,
    Reader,
    cost_usd,
    run_generation,
)
from sweep.retrieval.bm25 import BM25Index, stopwords_for
from sweep.retrieval.ranking import Ranking
from sweep.retrieval.rerank import CrossEncoderReranker, RerankSpec, get_reranker
from sweep.retrieval.search import ConfigSearch, latency_summary

log = logging.getLogger(__name__)

@dataclass
class JobResult:
    report: dict[str, Any]
    rows: list[dict[str, Any]]
    chunks: list[Chunk] = field(repr=False)
    # What the generation half reuses: the resolved items and the final rankings.
    resolved: list[ResolvedItem] = field(default_factory=list, repr=False)
    rankings: list[Ranking] = field(default_factory=list, repr=False)


@dataclass
class _Memo:
    corpora: dict[tuple, tuple[list[Document], str]] = field(default_factory=dict)
    chunks: dict[tuple, list[Chunk]] = field(default_factory=dict)
    starts: dict[tuple, list[np.ndarray]] = field(default_factory=dict)
    bm25: dict[tuple, tuple[BM25Index, float]] = field(default_factory=dict)
    goldens: dict[str, GoldenSet] = field(default_factory=dict)
    resolved: dict[tuple, list[ResolvedItem]] = field(default_factory=dict)


_MEMO = _Memo()


def clear_memo() -> None:
    global _MEMO
    _MEMO = _Memo()


def load_corpus_cached(cfg: Config) -> tuple[list[Document], str]:
    key = (str(Path(cfg.corpus.path).resolve()), cfg.corpus.on_error, tuple(cfg.corpus.extensions))
    if key not in _MEMO.corpora:
        docs = load_corpus(cfg.corpus.path, extensions=cfg.corpus.extensions,
                           on_error=cfg.corpus.on_error)
        _MEMO.corpora[key] = (docs, corpus_fingerprint(docs))
    return _MEMO.corpora[key]


def chunks_for(docs: list[Document], fingerprint: str, spec: ChunkSpec,
               tokenizer: str) -> list[Chunk]:
    key = (fingerprint, spec, tokenizer)
    if key not in _MEMO.chunks:
        tok = load_chunk_tokenizer(tokenizer)
        if (fingerprint, tokenizer) not in _MEMO.starts:
            _MEMO.starts[(fingerprint, tokenizer)] = corpus_token_starts(docs, tok)
        _MEMO.chunks[key] = chunk_corpus(docs, spec, tok, _MEMO.starts[(fingerprint, tokenizer)])
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
                          stopwords=r.bm25_stopwords)
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


def make_search(chunks: list[Chunk], method: str, cfg: Config, chunk_vecs: np.ndarray | None,
                bm25: BM25Index | None, reranker: CrossEncoderReranker | None) -> ConfigSearch:
    r = cfg.retrieval
    return ConfigSearch(chunks, method, r.depth, chunk_vecs=chunk_vecs, bm25=bm25,
                        rrf_k=r.rrf_k, dense_weight=r.dense_weight, bm25_weight=r.bm25_weight,
                        reranker=reranker, pool=cfg.rerank.pool)


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
    try:
        spec = ChunkSpec(ref.get("boundary", "recursive"), ref.get("size", 256),
                         ref.get("overlap", 0), "none").validate()
    except SweepError as exc:
        raise SweepError(f"{reference_path(Path(golden.path))}: reference chunking is invalid "
                         f"({exc})") from None
    return spec, str(ref.get("tokenizer", "minilm"))


def resolve_golden(golden: GoldenSet, docs: list[Document], fingerprint: str
                   ) -> list[ResolvedItem]:
    key = (golden.fingerprint, fingerprint)
    if key not in _MEMO.resolved:
        ref = reference_spec(golden)
        reference_chunks = None
        if ref is not None:
            reference_chunks = {c.chunk_id: c for c in chunks_for(docs, fingerprint, *ref)}
        _MEMO.resolved[key] = resolve_all(golden.items, CorpusIndex(docs), reference_chunks,
                                          golden.path)
    return _MEMO.resolved[key]


def load_golden_cached(path: str) -> GoldenSet:
    key = str(Path(path).resolve())
    if key not in _MEMO.goldens:
        _MEMO.goldens[key] = require_valid(load_golden(path))
    return _MEMO.goldens[key]


def embedder_for(cfg: Config) -> Embedder:
    embedder = get_embedder(embedding_spec(cfg))
    embedder.cache = get_cache(cfg.cache.dir) if cfg.cache.enabled else None
    return embedder


def run_config(cfg: Config, *, progress: bool = True) -> JobResult:
    """Evaluate one configuration. Raises `SweepError` for bad input."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    plain = to_container(cfg)

    docs, corpus_fp = load_corpus_cached(cfg)
    golden = load_golden_cached(cfg.golden.path)
    resolved = resolve_golden(golden, docs, corpus_fp)
    raise_first_error([p for r in resolved for p in r.problems])
    timings["load_s"] = time.perf_counter() - t0

    t = time.perf_counter()
    spec = ChunkSpec(cfg.chunk.boundary.value, cfg.chunk.size, cfg.chunk.overlap,
                     cfg.chunk.header.value)
    chunks = chunks_for(docs, corpus_fp, spec, cfg.chunk.tokenizer)
    if not chunks:
        raise SweepError(f"corpus {cfg.corpus.path} produced no chunks")
    timings["chunk_s"] = time.perf_counter() - t

    method = cfg.retrieval.method.value
    uses_dense = method in ("dense", "hybrid")
    uses_bm25 = method in ("bm25", "hybrid")
    texts = [c.embed_text for c in chunks]
    questions = [r.item.question for r in resolved]
    index_metrics: dict[str, float] = {}

    # What can fail on bad input is loaded before the expensive embedding step.
    if uses_bm25 or cfg.retrieval.diagnose:
        stopwords_for(cfg.retrieval.bm25_stopwords)
    reranker = None
    if cfg.rerank.method.value == "cross_encoder":
        r = cfg.rerank
        reranker = get_reranker(RerankSpec(r.model, r.batch_size, r.max_length))
    elif cfg.rerank.method.value == "cohere":
        reranker = get_served_reranker(served_rerank_spec(cfg))
    served = served_usage_before(reranker)

    embedder = chunk_vecs = query_vecs = None
    truncated = 0.0
    if uses_dense or cfg.retrieval.diagnose:
        t = time.perf_counter()
        embedder = embedder_for(cfg)
        served.update(served_usage_before(embedder))
        encoded_before = embedder.encoded_texts
        chunk_vecs = embedder.encode(texts, progress=progress)
        query_vecs = embedder.encode(questions, query=True, progress=progress)
        timings["embed_s"] = time.perf_counter() - t
        index_metrics["n_texts_encoded"] = float(embedder.encoded_texts - encoded_before)
        index_metrics["index_bytes_dense"] = float(chunk_vecs.nbytes)

    t = time.perf_counter()
    if embedder is not None:
        truncated = truncation(embedder, texts, cfg.embedding.name)
    bm25 = None
    if uses_bm25 or cfg.retrieval.diagnose:
        # The diagnosis-only BM25 list uses bm25s: the same scores as rank-bm25 (tested on
        # SciFact), ~70x faster per question, and it never changes the metrics.
        backend = cfg.retrieval.bm25_backend.value if uses_bm25 else "bm25s"
        bm25, build_s = bm25_for(texts, cfg, backend)
        index_metrics["index_bytes_bm25"] = float(bm25.size_bytes())
        index_metrics["index_build_bm25_s"] = build_s
    timings["index_s"] = time.perf_counter() - t  # truncation check, BM25 index

    t = time.perf_counter()
    search = make_search(chunks, method, cfg, chunk_vecs, bm25, reranker)
    results = search.run_all(questions, query_vecs)
    rankings = [r.final for r in results]
    timings["search_s"] = time.perf_counter() - t
    t = time.perf_counter()
    latency = measure_latency(chunks, method, cfg, chunk_vecs if uses_dense else None,
                              bm25 if uses_bm25 else None, reranker, embedder, questions)
    timings["latency_s"] = time.perf_counter() - t

    t = time.perf_counter()
    espec = EvalSpec(tuple(cfg.eval.k), cfg.eval.prompt_k, cfg.eval.token_budget,
                     cfg.eval.min_overlap)
    diagnostics = {"dense": [r.dense for r in results], "bm25": [r.bm25 for r in results]}
    summary, rows = evaluate(resolved, chunks, rankings, espec, diagnostics)
    timings["eval_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - t0

    headline = cfg.eval.headline
    if headline not in summary:  # check_config vouches for the name; no question scored it
        raise SweepError(f"eval.headline={headline!r}: no question could be scored for it "
                         f"({summary['n_orphans']} orphans, {summary['n_doc_only']} document-"
                         "level only)")

    metrics = dict(summary)
    metrics.update(chunk_stats(chunks))
    metrics.update(index_metrics)
    metrics.update(latency)
    if embedder is None or embedder.max_seq_length is not None:
        # behind an endpoint the model's max_seq_length is unknown: no figure rather than 0
        metrics["truncated_fraction"] = truncated
    metrics.update(served_usage_metrics(served, embedder, reranker))
    report = {
        "status": "FINISHED",
        "config": plain,
        "config_hash": config_hash(plain, corpus_fp, golden.fingerprint),
        "headline": {"metric": headline, "value": summary[headline]},
        "metrics": metrics,
        "timings_s": timings,
        "fingerprints": {"corpus": corpus_fp, "golden": golden.fingerprint,
                         "model": embedder.fingerprint if embedder else ""},
        "latency_note": "milliseconds per question, one question at a time, after a warm-up "
                        "(model loaded, index built, caches warm); query embedding is not "
                        "served from the embedding cache: it is timed once per embedding "
                        "setting and question in a sweep process and added to each configuration's "
                        "end-to-end time",
        "found_only_by": {k: [r["qid"] for r in rows if r.get("found_by") == f"{k}_only"]
                          for k in ("dense", "bm25")},
        "orphans": [{"qid": r["qid"], "reason": r.get("orphan_reason", "")}
                    for r in rows if r["status"] == "orphan"],
        "golden_warnings": [str(p) for p in golden.problems if p.severity == "warning"]
        + [str(p) for r in resolved for p in r.problems if p.severity == "warning"],
        "n_documents": len(docs),
    }
    return JobResult(report, rows, chunks, list(resolved), rankings)


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
    client = ChatClient(Endpoint("generation", g.base_url, g.model, g.api_key_env,
                                 g.timeout_s, g.max_retries, g.concurrency))
    client.preflight()
    return ChatReader(client, g.system_prompt, g.prompt, g.temperature, g.max_tokens)


def make_judge(cfg: Config) -> Judge | None:
    j = cfg.judge
    if j.method.value == "none":
        return None
    client = ChatClient(Endpoint("judge", j.base_url, j.model, j.api_key_env, j.timeout_s,
                                 j.max_retries, j.concurrency))
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
    costs = [cost_usd(outcome.usage["gen"], g.price_input_per_mtok, g.price_output_per_mtok)]
    if "judge" in outcome.usage:
        costs.append(cost_usd(outcome.usage["judge"], j.price_input_per_mtok,
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
