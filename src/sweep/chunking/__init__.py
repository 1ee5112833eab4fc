"""Chunking: tokenizers that count, and boundaries that cut documents into spans."""

# The boundaries that cut by meaning register themselves on the chunk.boundary axis from
# their own module; importing it here makes the registry whole whichever chunking module is
# imported first (chunkers itself holds the axis and the boundaries that need no model).
from sweep.chunking import semantic as _semantic  # noqa: F401
