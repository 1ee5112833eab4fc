"""chunk-sweep: measure which chunking and embedding setup retrieves best on your corpus."""

from __future__ import annotations

__version__ = "0.1.0"
