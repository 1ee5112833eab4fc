"""Config -> plain specs: the one place where a stage's settings are read off a `Config`."""

from __future__ import annotations

from sweep.config.schema import Config
from sweep.embedding.models import EmbeddingSpec


def embedding_spec(cfg: Config) -> EmbeddingSpec:
    e = cfg.embedding
    return EmbeddingSpec(e.name, e.family.value, e.distill_from, e.pca_dims, e.batch_size,
                         e.query_prefix, e.document_prefix)



def corpus_parsers(cfg: Config) -> dict[str, str]:
    """Format -> parser name, as `sweep.data.corpus.load_corpus` takes it."""
    c = cfg.corpus
    return {"pdf": c.pdf_parser.value, "html": c.html_parser.value, "docx": c.docx_parser.value}
