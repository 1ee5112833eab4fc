"""The steps of one configuration's job: corpus -> chunks -> embeddings -> ranking -> metrics.

No Hydra and no MLflow here: each step takes the spec pieces it needs (from the `JobSpec` built
once by `sweep.config.specs.build_job_spec`) and returns plain data. The application layer
strings them together (`sweep.application.job.run_job`, `sweep.application.corpus`). Work that
does not depend on the swept variables (loading the corpus and golden set, the reference
chunking, query embeddings) is memoised per process (`sweep.pipeline.memo`), so a sweep run by
the basic launcher pays for it once.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.common.files import DIGESTS_FOLDER
from sweep.common.memory import release_free_memory
from sweep.common.progress import Progress
from sweep.common.store import CacheTarget
from sweep.config.specs import (
    ChunkingSpec,
    GenerationSpec,
    JobSpec,
    JudgeSpec,
    RerankSetup,
    RetrievalSpec,
)
from sweep.data.abstentions import Abstention
from sweep.data.corpus import Document
from sweep.embedding.cache import get_cache
from sweep.embedding.models import Embedder, EmbeddingSpec, get_embedder
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.cost import chat_cost_usd
from sweep.evaluation.evaluate import EvalSpec, evaluate
from sweep.evaluation.metrics import covered_chars
from sweep.evaluation.misses import diagnose_misses, miss_views, truncation_cuts
from sweep.evaluation.relevance import ChunkLocator, ResolvedItem
from sweep.generation.cache import get_answer_cache, get_judge_cache
from sweep.generation.queries import (
    Transformed,
    get_transform_cache,
    open_client,
    transform_queries,
)
from sweep.generation.run import (
    DIAGNOSES,
    GENERATION,
    ChatReader,
    ExtractiveReader,
    GenItem,
    Judge,
    Passage,
    Reader,
    run_generation,
)
from sweep.pipeline.memo import (
    bm25_for,
    chunks_for,
    cut_texts,
    index_for,
    load_corpus_cached,
    token_starts,
)
from sweep.pipeline.strategies import contextual_chunks, cut_embedder
from sweep.retrieval.assembly import AssemblySpec, assemble
from sweep.retrieval.bm25 import BM25Index, stopwords_for
from sweep.retrieval.index import INDEX, IndexSpec, overlap_at_k
from sweep.retrieval.ranking import Ranking
from sweep.retrieval.rerank import RERANK, CrossEncoderReranker, ServedReranker
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


def truncation(embedder: Embedder, texts: list[str], name: str) -> float:
    """Fraction of chunks longer than the model's max_seq_length (silently cut by the model;
    none under ``embedding.long_text=window_mean``, which reads them a window at a time)."""
    lengths = embedder.token_lengths(texts)
    if lengths is None or not embedder.max_seq_length:
        return 0.0
    over = sum(n > embedder.max_seq_length for n in lengths)
    if over and embedder.spec.long_text == "window_mean":
        # read whole, a window at a time: nothing is cut, nothing to blame on a cut
        log.info("%d of %d chunks (%.0f%%) exceed %s's max_seq_length (%d tokens): each embedded "
                 "as the mean of its windows (embedding.long_text=window_mean)", over,
                 len(lengths), 100 * over / len(lengths), name, embedder.max_seq_length)
        return 0.0
    if over:
        log.warning("%d of %d chunks (%.0f%%) exceed %s's max_seq_length (%d tokens, special "
                    "tokens included) and are silently truncated by the model (smaller chunks, "
                    "embedding.long_text=window_mean or a model with a longer window read them "
                    "whole)", over,
                    len(lengths), 100 * over / len(lengths), name, embedder.max_seq_length)
    return over / len(lengths)


def make_search(chunks: list[Chunk], retrieval: RetrievalSpec, index_spec: IndexSpec,
                pool: int, chunk_vecs: np.ndarray | None, bm25: BM25Index | None,
                reranker: CrossEncoderReranker | ServedReranker | None) -> ConfigSearch:
    index = (index_for(index_spec, chunks, chunk_vecs)
             if chunk_vecs is not None and index_spec.kind != INDEX.off else None)
    r = retrieval
    return ConfigSearch(chunks, r.method, r.depth, chunk_vecs=chunk_vecs, bm25=bm25,
                        rrf_k=r.rrf_k, dense_weight=r.dense_weight, bm25_weight=r.bm25_weight,
                        reranker=reranker, pool=pool, index=index)


def index_report(headline: str, search: ConfigSearch, results: list[SearchResult],
                 query_vecs: np.ndarray | None, resolved: list[ResolvedItem], espec: EvalSpec,
                 summary: dict[str, float], rows: list[dict[str, Any]],
                 texts: dict[str, str] | None = None,
                 run: Callable[[ConfigSearch], list[SearchResult]] | None = None
                 ) -> dict[str, float]:
    """The ANN tax of an approximate index: the same configuration searched exactly over the
    same vectors (in memory already), scored the same way. Returns the index metrics and adds
    each question's exact and index rank of its first relevant chunk to ``rows``. Exact
    search is the reference and reports nothing. ``run``: how the job searched (a query
    transform's fused search), given the exact search; by default every question over
    ``query_vecs``."""
    index = search.index
    if index is None or search.chunk_vecs is None:
        return {}
    exact_search = dataclasses.replace(search, index=None)
    exact = (run(exact_search) if run is not None else
             exact_search.run_all([r.item.question for r in resolved], query_vecs))
    exact_summary, exact_rows = evaluate(resolved, search.chunks, [r.final for r in exact],
                                         espec, texts=texts)
    out = overlap_at_k([r.dense for r in exact if r.dense is not None],
                       [r.dense for r in results if r.dense is not None], espec.k)
    for name in sorted({headline, "mrr"}):
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


def measure_latency(search_for: Callable[[], ConfigSearch], sample: int,
                    embedder: Embedder | None, questions: list[str]) -> dict[str, float]:
    """p50/p95 per stage over up to ``sample`` (``eval.latency_sample``) questions, run one at
    a time with only the stages this method uses (``search_for()`` builds that search), after
    two warm-up questions. The query embedding is the uncached model call, timed once per
    embedding setting and question (`Embedder.timed_queries`)."""
    n = min(sample, len(questions))
    if n == 0:
        return {}
    search = search_for()
    dense = search.chunk_vecs is not None
    sample_questions = questions[:n]
    if dense and embedder is None:
        raise ValueError("dense latency needs the embedder")
    timed = (embedder.timed_queries(sample_questions) if dense and embedder is not None
             else [(None, None)] * n)
    for q, (vec, _) in zip(sample_questions[:2], timed, strict=False):
        search.run(q, vec)
    return latency_summary([search.run(q, vec, query_ms=ms).times_ms
                            for q, (vec, ms) in zip(sample_questions, timed, strict=True)])


def embedder_for(spec: EmbeddingSpec, cache: CacheTarget | None) -> Embedder:
    """The process's embedder of ``spec``, reading and writing the embedding cache of
    ``cache`` (none when the caches are off), which keeps its model files' digests too."""
    embedder = get_embedder(spec, cache.dir / DIGESTS_FOLDER if cache is not None else None)
    embedder.cache = get_cache(cache) if cache is not None else None
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


def _model_seconds(embedder: Embedder) -> tuple[float, float] | None:
    """(seconds inside the model's encode calls, seconds loading it) so far, for a local
    model; None for one behind an endpoint (its time is the server's)."""
    encode_s, load_s = getattr(embedder, "encode_s", None), getattr(embedder, "load_s", None)
    if not isinstance(encode_s, float) or not isinstance(load_s, float):
        return None
    return encode_s, load_s


def build_indexes(retrieval: RetrievalSpec, embedding: EmbeddingSpec, cache: CacheTarget | None,
                  chunks: list[Chunk], questions: list[str], timings: dict[str, float], *,
                  progress: bool = True) -> Indexes:
    """Embed chunks and questions (``embed_s``) when the method or the diagnosis needs them,
    then check truncation and build the BM25 index (``index_s``)."""
    texts = [c.embed_text for c in chunks]
    out = Indexes()
    if retrieval.uses_dense or retrieval.diagnose:
        with stage_timer(timings, "embed_s"):
            # loading a model the first time (and exporting an ONNX one) takes minutes
            with Progress(f"load embedding model {embedding.name}", bar=False):
                out.embedder = embedder_for(embedding, cache)
            encoded_before = out.embedder.encoded_texts
            read_before = out.embedder.read_from_cache
            inside = _model_seconds(out.embedder)
            out.chunk_vecs = out.embedder.encode(texts, progress=progress)
            out.query_vecs = out.embedder.encode(questions, query=True, progress=progress)
            after = _model_seconds(out.embedder)
        if inside is not None and after is not None:
            # Parts of embed_s: inside the model's encode calls, and loading it. The rest of
            # embed_s is the stage's own overhead (cache reads and writes, the token-length
            # pass), which `make bench` prints per 10,000 texts.
            timings["embed_encode_s"] = after[0] - inside[0]
            timings["embed_load_s"] = after[1] - inside[1]
        release_free_memory()  # what the model's batches freed, before the BM25 build
        out.metrics["n_texts_encoded"] = float(out.embedder.encoded_texts - encoded_before)
        out.metrics["n_texts_from_cache"] = float(out.embedder.read_from_cache - read_before)
        out.metrics["index_bytes_dense"] = float(out.chunk_vecs.nbytes)
    with stage_timer(timings, "index_s"):  # truncation check, BM25 index
        if out.embedder is not None:
            with Progress(f"truncation check over {len(texts):,} chunks", bar=False):
                out.truncated = truncation(out.embedder, texts, embedding.name)
        if retrieval.uses_bm25 or retrieval.diagnose:
            # The diagnosis-only BM25 list uses bm25s: the same scores as rank-bm25 (tested on
            # SciFact), ~70x faster per question, and it never changes the metrics.
            backend = retrieval.bm25.backend if retrieval.uses_bm25 else "bm25s"
            with Progress(f"BM25 index over {len(texts):,} chunks", bar=False):
                out.bm25, build_s = bm25_for(texts, retrieval.bm25, backend,
                                             cache.dir if cache is not None else None)
            out.metrics["index_bytes_bm25"] = float(out.bm25.size_bytes())
            out.metrics["index_build_bm25_s"] = build_s  # reading it back, when cached
            out.metrics["bm25_index_cached"] = float(out.bm25.from_cache)
    return out


def query_transform(retrieval: RetrievalSpec, cache: CacheTarget | None, questions: list[str],
                    timings: dict[str, float], *, progress: bool = True) -> Transformed | None:
    """``retrieval.query_transform``: each question's queries, written by the chat model
    (``transform_s``); None when it is off."""
    job = retrieval.transform
    if job is None:
        return None
    with stage_timer(timings, "transform_s"):
        client = open_client(job, cached=cache is not None)
        store = get_transform_cache(cache.dir) if cache is not None else None
        return transform_queries(job, questions, client, store, progress=progress)


def load_reranker(retrieval: RetrievalSpec, rerank: RerankSetup
                  ) -> CrossEncoderReranker | ServedReranker | None:
    """What can fail on bad input (stop words file, reranker model), loaded before the
    expensive embedding step."""
    if retrieval.uses_bm25 or retrieval.diagnose:
        stopwords_for(retrieval.bm25.stopwords)
    if rerank.spec is None:  # rerank.method=none
        return None
    return RERANK.impl(rerank.method)(rerank.spec)  # a local or a served cross-encoder


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


def chunk_job(chunking: ChunkingSpec, embedding: EmbeddingSpec, cache: CacheTarget | None,
              docs: list[Document], corpus_fp: str, progress: bool
              ) -> tuple[list[Chunk], float | None, dict[str, float]]:
    """The chunks of this configuration (cut with the cutting model for an embedded boundary,
    headed by a model for ``chunk.header=contextual``), the texts embedded for cutting (None
    for a tiling boundary) and the headers' calls, tokens and cost."""
    spec, tokenizer = chunking.spec, chunking.tokenizer
    n_cut = None
    if chunking.cutting is not None:
        cutter = cut_embedder(chunking.cutting.model, cache,
                              lambda: embedder_for(embedding, cache))
        params = chunking.cutting.params
        chunks = chunks_for(docs, corpus_fp, spec, tokenizer, params, cutter, cache_dir=cache)
        n_cut = float(cut_texts(corpus_fp, spec, tokenizer, params, cutter))
    else:
        chunks = chunks_for(docs, corpus_fp, spec, tokenizer, cache_dir=cache)
    context_metrics: dict[str, float] = {}
    if chunking.context is not None:
        chunks, context_metrics = contextual_chunks(
            chunking.context, cache, chunks, docs, token_starts(corpus_fp, tokenizer), progress)
    return chunks, n_cut, context_metrics


def embedding_work(cache: CacheTarget | None, metrics: dict[str, float]) -> dict[str, Any]:
    """What this job's embedding cost, for report.json: the texts it sent to a model
    (``texts_encoded``) beside those the cache answered (``texts_from_cache``; texts already
    in the process's memory from an earlier job count in neither), which cache that was, and
    the node that ran the job (a cluster's sweep sums them per node)."""
    return {
        "texts_encoded": int(metrics.get("n_texts_encoded", 0)),
        "texts_from_cache": int(metrics.get("n_texts_from_cache", 0)),
        "cache_backend": cache.backend if cache is not None else "none",
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


def gen_items(result: JobResult, prompt_k: int, docs: list[Document], limit: int = 0,
              assembly: AssemblySpec | None = None) -> list[GenItem]:
    """The scorable questions with their oracle context (every chunk of this configuration
    that holds evidence, in document order) and live context (the top ``prompt_k``, as
    ``assembly`` assembles them: `sweep.retrieval.assembly`)."""
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
        live = assemble(ranking.indices, chunks, prompt_k, assembly or AssemblySpec())
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


def make_reader(gen: GenerationSpec, embedding: EmbeddingSpec, cache: CacheTarget | None
                ) -> Reader:
    if GENERATION.has(gen.method, "needs_embedder"):  # the extractive reader
        return ExtractiveReader(embedder_for(embedding, cache).encode, gen.max_chars,
                                gen.max_sentences)
    client = ChatClient(gen.endpoint, gen.model)
    client.preflight()
    answers = None
    if gen.cache_answers and cache is not None:
        client.require_served("generation.cache_answers keys answers")
        answers = get_answer_cache(cache.dir)
    return ChatReader(client, gen.system_prompt, gen.prompt, gen.temperature, gen.max_tokens,
                      answers)


def make_judge(judge: JudgeSpec, cache: CacheTarget | None) -> Judge | None:
    if judge.method == "none":
        return None
    client = ChatClient(judge.endpoint, judge.model)
    client.preflight()
    return Judge(client, get_judge_cache(cache.dir) if cache is not None else None)


def run_generation_for(job: JobSpec, result: JobResult, *, progress: bool = True) -> None:
    """The generation half on a finished retrieval result: adds its metrics to the report and
    its columns to the rows, in place. Raises `SweepError` (endpoint down, key refused): the
    caller keeps the retrieval numbers."""
    g, j = job.generation, job.judge
    if g.method == "none":
        return
    t = time.perf_counter()
    docs, _ = load_corpus_cached(job.corpus, job.cache)
    items = gen_items(result, job.scoring.spec.prompt_k, docs, g.limit, job.assembly)
    reader = make_reader(g, job.embedding, job.cache)
    judge = make_judge(j, job.cache)
    outcome = run_generation(items, reader, judge, progress=progress)
    metrics = result.report["metrics"]
    metrics.update(outcome.summary)
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
        "reader": reader.name, "judge": j.method,
        "questions": len(items),
        "diagnosis": {d: int(outcome.summary[f"n_{d}"]) for d in DIAGNOSES},
        "note": "accuracy over questions graded on both sides; ungraded ones are counted in "
                "ungraded_count, never as wrong",
    }
