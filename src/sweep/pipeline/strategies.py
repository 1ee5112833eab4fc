"""The pipeline's side of the cutting and returning strategies (sweep.chunking.semantic,
sweep.retrieval.units): which model embeds for cutting, and the rankings of what is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.common.store import CacheTarget
from sweep.config.specs import ContextJob
from sweep.data.corpus import Document
from sweep.embedding.cache import get_cache
from sweep.embedding.models import Embedder, EmbeddingSpec, get_embedder
from sweep.endpoints.chat import ChatClient
from sweep.generation.contextual import add_contexts, get_context_cache, plan_contexts
from sweep.retrieval.ranking import Ranking
from sweep.retrieval.units import UnitSpec, build_units, returned_ranking


def cut_embedder(model: str, cache: CacheTarget | None, swept: Callable[[], Embedder]
                 ) -> Embedder:
    """The model the semantic/cluster boundary embeds with: ``model``
    (``chunk.<boundary>.model``), or the swept embedding (``swept()``) when that is empty. Its
    vectors go through the same embedding cache as the chunks'."""
    if not model:
        return swept()
    embedder = get_embedder(EmbeddingSpec(model))
    embedder.cache = get_cache(cache) if cache is not None else None
    return embedder


def contextual_chunks(context: ContextJob, cache_target: CacheTarget | None, chunks: list[Chunk],
                      docs: Sequence[Document], starts: Sequence[np.ndarray], progress: bool
                      ) -> tuple[list[Chunk], dict[str, float]]:
    """``chunk.header=contextual``: the chunks with a model-written context in ``embed_text``
    (sweep.generation.contextual), and the calls, tokens and cost it took."""
    client = ChatClient(context.endpoint, context.model)
    spec = context.spec
    cache = get_context_cache(cache_target.dir) if cache_target is not None else None
    plan = plan_contexts(chunks, docs, starts, context.model, spec, cache)
    if plan.messages and not spec.dry_run:  # nothing to call: the endpoint may be down
        client.preflight()
    outcome = add_contexts(chunks, docs, starts, client, spec, cache, progress=progress)
    return outcome.chunks, outcome.metrics


def returned(spec: UnitSpec, chunks: list[Chunk], docs: Sequence[Document],
             starts: Sequence[np.ndarray], rankings: list[Ranking],
             diagnostics: Mapping[str, Sequence[Ranking | None]]
             ) -> tuple[list[Chunk], list[Ranking], dict[str, list[Ranking | None]]]:
    """The units a configuration returns and the rankings of them, for the final and the
    diagnosis rankings alike; ``retrieval.unit=chunk`` returns its inputs unchanged."""
    if spec.unit == "chunk":
        return chunks, rankings, {k: list(v) for k, v in diagnostics.items()}
    units, unit_of = build_units(chunks, docs, starts, spec)

    def remap(r: Ranking | None) -> Ranking | None:
        return None if r is None else returned_ranking(r, unit_of, units)

    return (units, [returned_ranking(r, unit_of, units) for r in rankings],
            {k: [remap(r) for r in v] for k, v in diagnostics.items()})
