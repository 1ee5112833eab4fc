"""`open_corpus_view(JobSpec)`: one configuration's corpus, golden set, chunks, indexes and
search, each built on first use and kept.

The job (`application.job.run_job`), `sweep questions`, `sweep label`, `sweep estimate`,
`sweep validate`, the golden set's audit and the sweep's shared-work plan all read the chain
corpus -> chunks -> indexes -> search through this one view, so that each step is put
together in one place and every caller gets what a sweep would compute. Behind it, the
per-process memo (`sweep.pipeline.memo`) makes a second view of the same corpus or chunking
free: a command that opens two views pays once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from sweep.chunking.chunkers import Chunk, ChunkSpec
from sweep.common.errors import SweepError
from sweep.config.specs import JobSpec
from sweep.data.corpus import Document
from sweep.data.golden import GoldenSet
from sweep.evaluation.relevance import ResolvedItem
from sweep.pipeline.memo import (
    bm25_for,
    chunks_for,
    forget_corpus,
    load_corpus_cached,
    load_golden_cached,
    resolve_golden,
    token_starts,
)
from sweep.pipeline.run import Indexes, build_indexes, chunk_job, load_reranker, make_search
from sweep.retrieval.bm25 import BM25Index
from sweep.retrieval.rerank import CrossEncoderReranker, ServedReranker
from sweep.retrieval.search import ConfigSearch


@dataclass
class Chunking:
    """A configuration's chunks as its job cuts them, with what cutting cost: the texts
    embedded for an embedded boundary's cut (None for a tiling one) and the contextual
    headers' calls, tokens and cost."""

    chunks: list[Chunk]
    n_cut: float | None = None
    context_metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class CorpusView:
    """What ``job`` reads and searches; each piece is built when first asked for."""

    job: JobSpec
    progress: bool = True

    @cached_property
    def _loaded(self) -> tuple[list[Document], str]:
        return load_corpus_cached(self.job.corpus, self.job.cache)

    @property
    def docs(self) -> list[Document]:
        return self._loaded[0]

    @property
    def fingerprint(self) -> str:
        return self._loaded[1]

    @cached_property
    def golden(self) -> GoldenSet:
        return load_golden_cached(self.job.golden)

    def resolve(self, golden: GoldenSet | None = None) -> list[ResolvedItem]:
        """The items of ``golden`` (default: the job's golden set) located in this corpus."""
        docs, fingerprint = self._loaded  # the corpus first: its errors are said first
        return resolve_golden(self.golden if golden is None else golden, docs, fingerprint)

    @cached_property
    def chunking(self) -> Chunking:
        """The chunks as the job cuts them (an embedded boundary with its cutting model, a
        contextual header with its model)."""
        chunks, n_cut, metrics = chunk_job(self.job.chunking, self.job.embedding, self.job.cache,
                                           self.docs, self.fingerprint, self.progress)
        return Chunking(chunks, n_cut, metrics)

    @property
    def chunks(self) -> list[Chunk]:
        """The job's chunks; a corpus that gives none is bad input."""
        chunks = self.chunking.chunks
        if not chunks:
            raise SweepError(f"corpus {self.job.corpus.path} produced no chunks")
        return chunks

    def tiled(self, spec: ChunkSpec | None = None, tokenizer: str | None = None) -> list[Chunk]:
        """The chunks a tiling cut gives (no model asked): the job's chunking by default, or
        ``spec`` with ``tokenizer`` (e.g. the golden set's reference chunking). What can be
        known before any model runs: a sweep's plan, an estimate, the audit."""
        c = self.job.chunking
        return chunks_for(self.docs, self.fingerprint, spec or c.spec, tokenizer or c.tokenizer,
                          cache_dir=self.job.cache)

    def token_starts(self) -> list:
        """Each document's token starts under the job's tokenizer (after a chunking)."""
        return token_starts(self.fingerprint, self.job.chunking.tokenizer)

    def bm25(self, backend: str | None = None) -> BM25Index:
        """The BM25 index of the job's chunks (``backend`` other than the job's: the
        diagnosis-only and the queue's lists use bm25s)."""
        spec = self.job.retrieval.bm25
        cache = self.job.cache
        index, _ = bm25_for([c.embed_text for c in self.chunks], spec, backend or spec.backend,
                            cache.dir if cache is not None else None)
        return index

    @cached_property
    def reranker(self) -> CrossEncoderReranker | ServedReranker | None:
        """The reranker, loaded (with the stop words file) before anything is embedded: what
        can fail on bad input fails early."""
        return load_reranker(self.job.retrieval, self.job.rerank)

    def indexes(self, questions: list[str], timings: dict[str, float] | None = None) -> Indexes:
        """The chunks (and ``questions``) embedded and indexed as the job's method needs."""
        j = self.job
        return build_indexes(j.retrieval, j.embedding, j.cache, self.chunks, questions,
                             {} if timings is None else timings, progress=self.progress)

    def search(self, ix: Indexes, *, dense: bool = True, bm25: bool = True) -> ConfigSearch:
        """The job's search over ``ix`` (``dense``/``bm25`` False leave that retriever out,
        as the latency pass does for one the method does not use)."""
        j = self.job
        return make_search(self.chunks, j.retrieval, j.index, j.rerank.pool,
                           ix.chunk_vecs if dense else None, ix.bm25 if bm25 else None,
                           self.reranker)


def open_corpus_view(job: JobSpec, *, progress: bool = True, reread: bool = False
                     ) -> CorpusView:
    """The view of ``job``'s corpus: nothing is loaded until a piece is asked for.
    ``reread``: read the corpus folder again rather than this process's copy of it (the
    labelling page, whose corpus may have been edited since it was last opened)."""
    if reread:
        forget_corpus(job.corpus)
    return CorpusView(job, progress)
