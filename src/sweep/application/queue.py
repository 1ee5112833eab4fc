"""What `sweep questions` reads of a corpus to rank the labelling queue: the corpus chunked
and indexed as a configuration says (disagreement between BM25 and dense, coverage by the
golden set), and a finished sweep's configuration searched again on the candidates. Both go
through `open_corpus_view`, so the chunks, vectors and BM25 index are a sweep's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweep.application.corpus import open_corpus_view
from sweep.chunking.reference import load_golden
from sweep.common.errors import SweepError
from sweep.config.axes import AXES
from sweep.config.specs import JobSpec
from sweep.data.golden import require_valid
from sweep.pipeline.run import embedder_for
from sweep.questions.locate import DEPTH, covered_places, first_chunks, signals_for


def _tiling_only(job: JobSpec, refusal: Callable[[str, str], str]) -> None:
    """The queue re-cuts without a model: a boundary that needs one, or a model-written
    header, is refused with ``refusal(boundary, header)``."""
    spec = job.chunking.spec
    if (AXES["chunk.boundary"].has(spec.boundary, "needs_embedder")
            or AXES["chunk.header"].has(spec.header, "remote")):
        raise SweepError(refusal(spec.boundary, spec.header))


def _queue_refusal(boundary: str, header: str) -> str:
    if AXES["chunk.boundary"].has(boundary, "needs_embedder"):
        return (f"chunk.boundary={boundary}: the queue's ranking chunks with a boundary that "
                "needs no model (e.g. chunk.boundary=recursive)")
    local = ", ".join(AXES["chunk.header"].having("remote", False))
    return f"chunk.header={header}: the queue's ranking uses chunk.header={local}"


class QueueCorpus:
    """The corpus chunked and indexed as the configuration says, for disagreement and
    coverage (BM25 and dense vectors come from the caches a sweep fills)."""

    def __init__(self, job: JobSpec, say: Callable[[str], None]) -> None:
        _tiling_only(job, _queue_refusal)
        self.job = job
        self.say = say
        view = open_corpus_view(job)
        self.docs, self.fingerprint = view.docs, view.fingerprint
        self.chunks = view.chunks
        self.bm25 = view.bm25("bm25s")

    def locate(self, golden: str | None, steps: dict[str, Any]) -> Callable[[list[Any]], Any]:
        covered = None
        if golden:
            resolved = open_corpus_view(self.job).resolve(require_valid(load_golden(golden)))
            spans = [s for r in resolved for s in r.spans]
            covered = covered_places(spans, self.docs)
            steps["coverage"] = {"ran": True, "golden": golden, "items": len(resolved),
                                 "documents_covered": len(covered[0]),
                                 "sections_covered": len(covered[1]),
                                 "documents": len(self.docs)}
        else:
            steps["coverage"] = {"ran": False, "why_not": "no --golden"}

        job = self.job

        def locate(cands: list[Any]) -> Any:
            embedder = embedder_for(job.embedding, job.cache)
            self.say(f"ranking: {len(cands)} questions through BM25 and {job.embedding.name} "
                     f"over {len(self.chunks)} chunks")
            chunk_vecs = embedder.encode([c.embed_text for c in self.chunks], progress=True)
            query_vecs = embedder.encode([c.question for c in cands], query=True,
                                         progress=True)
            tops = first_chunks([c.question for c in cands], self.chunks, self.bm25.scores,
                                chunk_vecs, query_vecs)
            steps["disagreement"] = {
                "ran": True, "corpus": job.corpus.path, "chunks": len(self.chunks),
                "chunking": f"{job.chunking.spec.boundary}/{job.chunking.spec.size}/"
                            f"{job.chunking.spec.overlap}",
                "dense": job.embedding.name, "bm25": "bm25s"}
            return signals_for(cands, tops, self.chunks, self.docs, covered)

        return locate


def config_places(job: JobSpec, questions: list[str], *, progress: bool = True
                  ) -> list[list[tuple[str, int, int]]]:
    """The places (doc_id, start, end) of the first chunks ``job`` retrieves for each
    question, as a sweep of that configuration would search (its chunking, model, method,
    index and reranker; through the same caches)."""
    _tiling_only(job, lambda boundary, header: (
        f"--against-sweep: chunk.boundary={boundary}, chunk.header={header} is not re-run for "
        "the queue (use a tiling boundary and no contextual header, or BM25 vs dense without "
        "--against-sweep)"))
    view = open_corpus_view(job, progress=progress)
    chunks = view.chunks
    ix = view.indexes(questions)
    search = view.search(ix)
    return [[(chunks[i].doc_id, chunks[i].start, chunks[i].end)
             for i in r.final.indices[:DEPTH]]
            for r in search.run_all(questions, ix.query_vecs)]
