"""Config -> plain specs: the one place where a stage's settings are read off a `Config`."""

from __future__ import annotations

from sweep.config.schema import Config
from sweep.embedding.models import EmbeddingSpec
from sweep.retrieval.index import IndexSpec


def embedding_spec(cfg: Config) -> EmbeddingSpec:
    e = cfg.embedding
    return EmbeddingSpec(e.name, e.family.value, e.distill_from, e.pca_dims, e.batch_size,
                         e.query_prefix, e.document_prefix)



def index_spec(cfg: Config) -> IndexSpec:
    i = cfg.index
    return IndexSpec(i.kind.value, i.M, i.ef_construction, i.ef_search, i.nlist, i.nprobe,
                     i.pq_m, i.quantizer.value, i.rescore, i.seed, i.host, i.port)
