"""The pipeline's side of the cutting and returning strategies (sweep.chunking.semantic,
sweep.retrieval.units): which model embeds for cutting, and the rankings of what is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from sweep.chunking.chunkers import Chunk
from sweep.config.schema import Config
from sweep.config.specs import cache_target, cut_model, unit_spec
from sweep.data.corpus import Document
from sweep.embedding.cache import get_cache
from sweep.embedding.models import Embedder, EmbeddingSpec, get_embedder
from sweep.endpoints.chat import ChatClient
from sweep.endpoints.spec import EndpointSpec
from sweep.generation.contextual import (
    ContextSpec,
    add_contexts,
    get_context_cache,
    plan_contexts,
)
from sweep.retrieval.ranking import Ranking
from sweep.retrieval.units import build_units, returned_ranking


def cut_embedder(cfg: Config, swept: Callable[[Config], Embedder]) -> Embedder:
    """The model the semantic/cluster boundary embeds with: ``chunk.<boundary>.model``, or the
    swept embedding (``swept(cfg)``) when that is empty. Its vectors go through the same
    embedding cache as the chunks'."""
    name = cut_model(cfg)
    if not name:
        return swept(cfg)
    embedder = get_embedder(EmbeddingSpec(name))
    target = cache_target(cfg)
    embedder.cache = get_cache(target) if target is not None else None
    return embedder


def contextual_chunks(cfg: Config, chunks: list[Chunk], docs: Sequence[Document],
                      starts: Sequence[np.ndarray], progress: bool
                      ) -> tuple[list[Chunk], dict[str, float]]:
    """``chunk.header=contextual``: the chunks with a model-written context in ``embed_text``
    (sweep.generation.contextual), and the calls, tokens and cost it took."""
    c = cfg.chunk.context
    client = ChatClient(EndpointSpec("chunk.context", c.base_url, c.api_key_env, c.timeout_s,
                                     c.max_retries, c.concurrency), c.model)
    spec = ContextSpec(c.max_doc_tokens, c.max_tokens, c.price_input_per_mtok,
                       c.price_output_per_mtok, c.dry_run)
    cache = get_context_cache(cfg.cache.dir) if cfg.cache.enabled else None
    plan = plan_contexts(chunks, docs, starts, c.model, spec, cache)
    if plan.messages and not c.dry_run:  # nothing to call: the endpoint may be down
        client.preflight()
    outcome = add_contexts(chunks, docs, starts, client, spec, cache, progress=progress)
    return outcome.chunks, outcome.metrics


def returned(cfg: Config, chunks: list[Chunk], docs: Sequence[Document],
             starts: Sequence[np.ndarray], rankings: list[Ranking],
             diagnostics: Mapping[str, Sequence[Ranking | None]]
             ) -> tuple[list[Chunk], list[Ranking], dict[str, list[Ranking | None]]]:
    """The units a configuration returns and the rankings of them, for the final and the
    diagnosis rankings alike; ``retrieval.unit=chunk`` returns its inputs unchanged."""
    spec = unit_spec(cfg)
    if spec.unit == "chunk":
        return chunks, rankings, {k: list(v) for k, v in diagnostics.items()}
    units, unit_of = build_units(chunks, docs, starts, spec)

    def remap(r: Ranking | None) -> Ranking | None:
        return None if r is None else returned_ranking(r, unit_of, units)

    return (units, [returned_ranking(r, unit_of, units) for r in rankings],
            {k: [remap(r) for r in v] for k, v in diagnostics.items()})
