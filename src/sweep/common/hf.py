"""Hugging Face settings shared by every stage that loads a transformers model
(embedding.models, retrieval.rerank)."""

from __future__ import annotations


def quiet_transformers() -> None:
    """Silence transformers' load-time warnings and progress bars: a sweep loads the same
    models in every job, and the noise buries the one-line errors that matter."""
    try:
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
    except Exception:  # pragma: no cover - transformers missing or API moved
        pass
