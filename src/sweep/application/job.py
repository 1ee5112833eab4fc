"""`run_job(JobSpec) -> JobResult`: one configuration, end to end (corpus -> chunks ->
embeddings -> ranking -> metrics).

No Hydra and no MLflow here: the job takes the `JobSpec` built once from the composed
configuration (`sweep.config.specs.build_job_spec`) and returns plain data. The chain it reads
(corpus, golden set, chunks, indexes, search) comes from `open_corpus_view`; each step is a
stage call of `sweep.pipeline.run`. Work that does not depend on the swept variables (loading
the corpus and golden set, the reference chunking, query embeddings) is memoised per process
(`sweep.pipeline.memo`), so a sweep run by the basic launcher pays for it once.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.application.corpus import CorpusView, open_corpus_view
from sweep.chunking.chunkers import Chunk, chunk_stats
from sweep.common.blas import one_blas_thread
from sweep.common.errors import SweepError
from sweep.common.files import folder_syncs_once
from sweep.config.identity import config_hash
from sweep.config.specs import JobSpec
from sweep.data.abstentions import Abstention, load_abstentions
from sweep.data.golden import raise_first_error
from sweep.endpoints.cost import served_usage_before, served_usage_metrics
from sweep.evaluation.abstention import separation
from sweep.evaluation.assembled import NAMES as ASSEMBLED_NAMES
from sweep.evaluation.assembled import score_assembled
from sweep.evaluation.content import add_content_column, content_metrics, score_by_content
from sweep.evaluation.evaluate import by_needs, by_needs_metrics, evaluate
from sweep.evaluation.relevance import ResolvedItem, quote_metrics
from sweep.evaluation.smell import mean_smell
from sweep.evaluation.sources import (
    add_source_columns,
    headline_names,
    score_by_source,
    source_metrics,
)
from sweep.pipeline.memo import (
    WORK_ROWS,
    golden_drift,
    item_smells_cached,
    keep_text,
    keep_work,
    parsing_summary,
    recall_text,
    recall_work,
)
from sweep.pipeline.run import (
    LATENCY_NOTE,
    Indexes,
    JobResult,
    MissAnalysis,
    abstention_rows,
    add_pages,
    embedder_for,
    embedding_work,
    index_report,
    latency_origin,
    measure_latency,
    miss_analysis,
    need_split_metrics,
    query_transform,
    row_lists,
    stage_timer,
    top1_score,
)
from sweep.pipeline.strategies import returned
from sweep.retrieval.ranking import Ranking
from sweep.retrieval.search import ConfigSearch, SearchResult
from sweep.retrieval.transform import fused_search, group_heads

__all__ = ["JobResult", "run_job"]


@dataclass
class _Searched:
    """The search half of a job: what the scoring half reads."""

    ix: Indexes
    search: ConfigSearch
    results: list[SearchResult]
    rankings: list[Ranking]
    abstentions: list[Abstention]
    abstained: list[Ranking]
    latency: dict[str, float]
    latency_source: str
    # How the scored questions were searched, given a search (the ANN tax's exact re-run).
    rerun: Callable[[ConfigSearch], list[SearchResult]] | None = None
    transform_metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class _Scored:
    """The scoring half: the summary, the rows and what they were scored on."""

    summary: dict[str, float]
    rows: list[dict[str, Any]]
    chunks: list[Chunk]  # what is returned (retrieval.unit): the chunks or their units
    searched: list[Chunk]  # the chunks searched
    rankings: list[Ranking]
    rankings_searched: list[Ranking]
    misses: MissAnalysis
    sources: dict[str, Any]


def run_job(job: JobSpec, *, progress: bool = True) -> JobResult:
    """Evaluate one configuration. Raises `SweepError` for bad input."""
    one_blas_thread()  # the same scores whatever the machine's core count
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    view = open_corpus_view(job, progress=progress)
    # A served model's usage before this configuration (the process-wide embedder serves every
    # job of a sweep): what this job sent is the difference. Taken before chunking, so the
    # requests of a semantic cut with the swept model count too. Building a served embedder
    # loads nothing.
    served_embedder = (embedder_for(job.embedding, job.cache)
                       if job.embedding.served is not None else None)
    served = served_usage_before(served_embedder)
    with stage_timer(timings, "load_s"):
        golden = view.golden
        resolved = view.resolve()
        raise_first_error([p for r in resolved for p in r.problems])
        drift = golden_drift(golden, view.docs, view.fingerprint)
    with stage_timer(timings, "chunk_s"):  # the cutting model and the headers' model included
        view.chunks  # noqa: B018  (cut now, inside the timer)
    key = _work_key(job)
    kept = recall_work(key, view.chunks) if key is not None else None
    if kept is not None:
        s, scored = _fresh(*kept, reused=True)
    else:
        s = _search(view, resolved, timings, served)
        with stage_timer(timings, "eval_s"):
            scored = _score(view, resolved, s)
        if key is not None and len(scored.rows) <= WORK_ROWS:
            # a copy: what follows adds to the rows and the views
            keep_work(key, view.chunks, _fresh(s, scored, reused=False), len(scored.rows))
    timings["total_s"] = time.perf_counter() - t0
    metrics = _headline_checked(job, scored.summary)
    split = by_needs(scored.rows, need_split_metrics(job.scoring.headline,
                                                     job.scoring.spec.prompt_k))
    metrics.update(by_needs_metrics(split))
    metrics.update(_other_metrics(view, resolved, s, scored, served, served_embedder))
    if not job.assembly.neutral:  # at the defaults the context is the top prompt_k, scored
        metrics.update(score_assembled(scored.rows, resolved, scored.chunks, scored.rankings,
                                       job.scoring.spec.prompt_k, job.assembly))
    by_content = None
    if job.scoring.by_content:
        add_content_column(scored.rows, [r.spans for r in resolved],
                           {d.doc_id: d.text for d in view.docs})
        by_content = score_by_content(scored.rows, [
            *headline_names(job.scoring.spec.k, job.scoring.spec.prompt_k,
                            job.scoring.headline), *ASSEMBLED_NAMES])
        metrics.update(content_metrics(by_content))
        for shown, row in zip(scored.misses.views, scored.rows, strict=True):
            shown["content_kind"] = row["content_kind"]  # the misses page shows it
    report = {
        "status": "FINISHED",
        "config": job.plain,
        "config_hash": config_hash(job.plain, view.fingerprint, golden.fingerprint),
        "headline": {"metric": job.scoring.headline,
                     "value": scored.summary[job.scoring.headline]},
        "by_needs": split,
        "metrics": metrics,
        "timings_s": timings,
        "fingerprints": {"corpus": view.fingerprint, "golden": golden.fingerprint,
                         "model": s.ix.embedder.fingerprint if s.ix.embedder else ""},
        "latency_note": LATENCY_NOTE,
        "latency_source": s.latency_source,
        **row_lists(scored.rows),
        "golden_warnings": [str(p) for p in golden.problems if p.severity == "warning"]
        + [str(p) for r in resolved for p in r.problems if p.severity == "warning"],
        "n_documents": len(view.docs),
        "parsing": parsing_summary(job.corpus),
        **embedding_work(job.cache, s.ix.metrics),
        # Not scored, and said so: items a rebase left for review, and a corpus that moved
        # since the labels were made (sweep.data.drift).
        "golden_pending_review": len(golden.pending),
        "golden_corpus_drift": drift.as_dict() if drift else None,
        "sources": scored.sources,
        **({"by_content": by_content} if by_content is not None else {}),
        **({"abstentions": abstention_rows(s.abstentions, s.abstained, scored.searched)}
           if s.abstentions else {}),
    }
    return JobResult(report, scored.rows, scored.chunks, list(resolved), scored.rankings,
                     scored.misses.views)


def _work_key(job: JobSpec) -> str | None:
    """What a job's search and scoring read apart from its chunks: two jobs of one process
    with the same key and equal chunks search and score alike (recursive and heading cut a
    corpus without headings the same). How the chunks were cut is left out, as the chunks are
    compared whole; so is what is read after the scoring (generation, judge, tracking). None
    where each job must run its own: a query transform counts its model calls per job."""
    if job.retrieval.transform is not None:
        return None
    c = job.chunking
    return repr((job.corpus, job.golden, c.tokenizer, c.cutting, c.context, job.embedding,
                 job.retrieval, job.index, job.rerank, job.scoring, job.cache, job.assembly))


def _fresh(s: _Searched, scored: _Scored, *, reused: bool) -> tuple[_Searched, _Scored]:
    """Copies of what a job adds to afterwards (metrics, rows, views); ``reused``: for a job
    that takes another's search, which embedded nothing and measured no latency itself."""
    metrics = dict(s.ix.metrics)
    source = s.latency_source
    if reused:
        # as a text already in this process's memory counts in neither
        metrics.update(n_texts_encoded=0.0, n_texts_from_cache=0.0)
        source = (f"{source} (taken with the search of an earlier configuration of this "
                  "process: the same chunks and settings)")
    searched = dataclasses.replace(s, ix=dataclasses.replace(s.ix, metrics=metrics),
                                   latency=dict(s.latency), latency_source=source,
                                   transform_metrics=dict(s.transform_metrics))
    misses = MissAnalysis(dict(scored.misses.counts), [dict(v) for v in scored.misses.views])
    return searched, dataclasses.replace(
        scored, summary=dict(scored.summary), rows=[dict(r) for r in scored.rows],
        misses=misses, sources=copy.deepcopy(scored.sources))


def _search(view: CorpusView, resolved: list[ResolvedItem], timings: dict[str, float],
            served: dict[str, Any]) -> _Searched:
    """Embed, index and search the scored questions and the abstentions; then the latency
    pass."""
    job = view.job
    retrieval = job.retrieval
    questions = [r.item.question for r in resolved]
    # Questions the corpus cannot answer are searched with the others (the same embedding
    # pass), then set apart: only their top-1 scores are read (evaluation/abstention.py).
    abstentions, _ = load_abstentions(job.golden)
    searched_questions = questions + [a.question for a in abstentions]
    reranker = view.reranker
    served.update(served_usage_before(reranker))
    # A query transform (retrieval.query_transform): the model writes each question's
    # queries first; what is embedded is those (HyDE's text, or the question and its
    # rewrites), while BM25 and the reranker read the question (sweep.retrieval.transform).
    transformed = query_transform(retrieval, job.cache, searched_questions, timings,
                                  progress=view.progress)
    groups = transformed.groups if transformed is not None else None
    ix = view.indexes([q for g in groups for q in g] if groups else searched_questions,
                      timings)
    rerun = None
    with stage_timer(timings, "search_s"):
        search = view.search(ix)
        if groups is not None and retrieval.transform.method == "multi_query":
            results = fused_search(search, groups, ix.query_vecs)
            scored_groups, all_vecs = groups[:len(questions)], ix.query_vecs
            n_scored = sum(len(g) for g in scored_groups)

            def rerun(s: ConfigSearch) -> list[SearchResult]:
                return fused_search(s, scored_groups,
                                    None if all_vecs is None else all_vecs[:n_scored])

            ix.query_vecs = group_heads(groups, ix.query_vecs)  # the questions' own vectors
        else:
            results = search.run_all(searched_questions, ix.query_vecs)
        abstained = [r.final for r in results[len(questions):]]
        results = results[:len(questions)]
        if ix.query_vecs is not None:
            ix.query_vecs = ix.query_vecs[:len(questions)]
        rankings = [r.final for r in results]
    uses_dense = retrieval.uses_dense
    counted = (ix.embedder.timed_now, ix.embedder.timed_from_cache) if ix.embedder else (0, 0)
    with stage_timer(timings, "latency_s"):
        latency = measure_latency(
            lambda: view.search(ix, dense=uses_dense, bm25=retrieval.uses_bm25),
            job.scoring.latency_sample, ix.embedder, questions)
    latency_source = latency_origin(job.scoring.latency_sample,
                                    ix.embedder if uses_dense else None, counted)
    return _Searched(ix, search, results, rankings, abstentions, abstained, latency,
                     latency_source, rerun,
                     transformed.metrics if transformed is not None else {})


def _score(view: CorpusView, resolved: list[ResolvedItem], s: _Searched) -> _Scored:
    """Score what is returned, the ANN tax, the pages, the misses and the sources."""
    job = view.job
    espec = job.scoring.spec
    docs = view.docs
    results = s.results
    diagnostics = {"dense": [r.dense for r in results], "bm25": [r.bm25 for r in results]}
    # Scored on what is returned (retrieval.unit): the chunks, or the units around them.
    searched, rankings_searched = view.chunks, s.rankings
    chunks, rankings, diagnostics = returned(
        job.retrieval.unit, searched, docs, view.token_starts(), s.rankings, diagnostics)
    texts = {d.doc_id: d.text for d in docs}
    summary, rows = evaluate(resolved, chunks, rankings, espec, diagnostics, texts)
    if chunks is searched:  # the ANN tax compares chunk rankings (retrieval.unit=chunk)
        s.ix.metrics.update(index_report(job.scoring.headline, s.search, results,
                                         s.ix.query_vecs, resolved, espec, summary, rows, texts,
                                         s.rerun))
    add_pages(rows, resolved, rankings, chunks, docs)
    misses = miss_analysis(resolved, rows, chunks, docs, rankings, diagnostics,
                           espec.prompt_k, s.ix.embedder if job.retrieval.uses_dense else None,
                           s.ix.truncated > 0)
    summary.update(misses.counts)
    add_source_columns(rows, resolved,
                       item_smells_cached(view.golden, view.fingerprint, resolved, texts))
    sources = score_by_source(rows, headline_names(espec.k, espec.prompt_k,
                                                   job.scoring.headline))
    return _Scored(summary, rows, chunks, searched, rankings, rankings_searched, misses,
                   sources)


def _headline_checked(job: JobSpec, summary: dict[str, float]) -> dict[str, float]:
    """The summary as the first metrics, once the headline is known to be in it."""
    headline = job.scoring.headline
    if headline not in summary:  # check_config vouches for the name; no question scored it
        raise SweepError(f"eval.headline={headline!r}: no question could be scored for it "
                         f"({summary['n_orphans']} orphans, {summary['n_doc_only']} document-"
                         "level only)")
    return dict(summary)


def _other_metrics(view: CorpusView, resolved: list[ResolvedItem], s: _Searched,
                   scored: _Scored, served: dict[str, Any], served_embedder: Any
                   ) -> dict[str, float]:
    """The metrics after the summary and its split by passages needed, in report order."""
    metrics: dict[str, float] = {}
    metrics.update(chunk_stats(scored.searched))
    if scored.chunks is not scored.searched:
        metrics["n_returned_units"] = len(scored.chunks)
    chunking = view.chunking
    metrics.update(chunking.context_metrics)
    if chunking.n_cut is not None:  # cache hits included: the cost of a cold cache
        metrics["n_texts_embedded_for_cutting"] = chunking.n_cut
    ix = s.ix
    metrics.update(s.transform_metrics)
    metrics.update(ix.metrics)
    metrics.update(quote_metrics(resolved))
    metrics.update(s.latency)
    if ix.embedder is None or ix.embedder.max_seq_length is not None:
        # behind an endpoint the model's max_seq_length is unknown: no figure rather than 0
        metrics["truncated_fraction"] = ix.truncated
    metrics.update(served_usage_metrics(served, served_embedder, view.reranker))
    smell, _ = mean_smell(r["smell"] for r in scored.rows)
    if smell is not None:
        metrics["smell_mean"] = smell
    metrics.update(source_metrics(scored.sources))
    metrics.update(separation(
        [top1_score(rk) for rk, row in zip(scored.rankings_searched, scored.rows, strict=True)
         if row["status"] == "scored"], [top1_score(rk) for rk in s.abstained]))
    return metrics


def write_job(job: JobSpec, result: JobResult, job_dir: Path, plain: dict[str, Any],
              name: str, *, multirun: bool) -> tuple[list[Path], SweepError | None]:
    """The job folder's files (report.json, per_question.csv, config.yaml, the misses views;
    a single run's golden-set audit), then generation when it runs, with the report written
    again. Returns the files for the run's artifacts and generation's error (the report then
    says FAILED, its retrieval metrics kept). An OSError (a full disk, a read-only or
    vanished folder) is left to the caller."""
    from sweep.application.audit import set_audit
    from sweep.decide.decision import audit_power
    from sweep.outputs import report as rp
    from sweep.outputs.misses_html import add_answers, write_views
    from sweep.pipeline.run import run_generation_for

    rep = result.report
    # A job that may share its work (`_work_key`) may have a twin in this process: the same
    # rows and views, so the same files but for the name. They are rendered once.
    twins = _work_key(job) is not None and len(result.rows) <= WORK_ROWS
    # Retrieval results are on disk before generation starts: a crash there loses nothing.
    # Each file goes to the disk while the next one's text is made (the fsyncs of a job's
    # files, one after another, were a tenth of a warm job).
    with folder_syncs_once(parallel=True):
        paths = [rp.write_report(job_dir, rep), _write_rows(job_dir, result.rows, twins),
                 rp.write_config(job_dir, plain)]
        miss_counts = {k: v for k, v in rep["metrics"].items() if k.startswith("n_miss")}
        paths += _write_views(job_dir, result.views, name, miss_counts, twins)
    if not multirun:  # a sweep audits its golden set once, at its end
        paths += set_audit(job, job_dir, audit_power(
            None, rep["headline"]["metric"], None, "one configuration: no pair to size it "
            "from; a sweep's audit.json has it, and `sweep audit` reads the latest sweep"))
    gen_error: SweepError | None = None
    if job.generation.method != "none":
        try:
            run_generation_for(job, result, progress=not multirun)
        except SweepError as exc:
            gen_error = exc
            rep["status"] = "FAILED"
            rep["error"] = f"{exc} (the retrieval metrics of this configuration are kept)"
        rp.write_report(job_dir, rep)
        rp.write_per_question(job_dir, result.rows)
        if gen_error is None:  # the misses page with each question's answer diagnosis
            add_answers(result.views, result.rows)
            write_views(job_dir, result.views, name, miss_counts)
    return paths, gen_error


def _write_rows(job_dir: Path, rows: list[dict[str, Any]], twins: bool) -> Path:
    """per_question.csv; with ``twins``, its text comes from an earlier job of this process
    whose cells were alike (`common.alike`: the same bytes), and is kept for a later one."""
    from sweep.common.csvcells import csv_text
    from sweep.outputs import report as rp

    if not twins:
        return rp.write_per_question(job_dir, rows)
    table = rp.per_question_table(rows)  # fresh tuples of immutable cells: kept as they are
    text = recall_text(rp.PER_QUESTION, table)
    if text is None:
        text = csv_text(*table)
        keep_text(rp.PER_QUESTION, table, text, len(rows))
    return rp.write_per_question(job_dir, rows, text=text)


def _write_views(job_dir: Path, views: list[dict[str, Any]], name: str,
                 counts: dict[str, float], twins: bool) -> list[Path]:
    """misses.json and misses.html; with ``twins``, all but their title come from an earlier
    job of this process whose views and counts were alike, and are kept for a later one."""
    from sweep.outputs.misses_html import render_untitled, write_views

    if not twins:
        return write_views(job_dir, views, name, counts)
    untitled = recall_text("misses", (views, counts))
    if untitled is None:
        untitled = render_untitled(views, counts)
        # Copies of the views: what a job adds afterwards (an answer, by_content's kind) goes
        # into a view itself, never into the lists it shares with the kept work.
        keep_text("misses", ([dict(v) for v in views], dict(counts)), untitled, len(views))
    return write_views(job_dir, views, name, counts, untitled=untitled)
