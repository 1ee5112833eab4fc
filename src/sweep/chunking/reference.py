"""The golden set's reference chunking: the ``*.reference.yaml`` sidecar checked against the
chunking stage's boundaries.

`sweep.data.golden` reads the sidecar and checks its shape; the boundary names are the
chunking registry's, and data imports no stage above it (issue 31), so that check is here.
The commands and the pipeline load a golden set with `load_golden` from this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.chunking.chunkers import ChunkSpec, local_boundaries
from sweep.common.errors import SweepError
from sweep.data import golden as _golden
from sweep.data.golden import GoldenSet


def check_reference(reference: dict[str, Any], ref_path: Path) -> None:
    """A sidecar's boundary (checked for its shape by `sweep.data.golden.load_reference`) is
    one of the chunking stage's; left out, it is `ChunkSpec`'s default."""
    boundary = reference["chunk"].get("boundary", ChunkSpec.boundary)
    allowed = local_boundaries()  # a reference chunking needs no embedding model
    if boundary not in allowed:
        raise SweepError(f"{ref_path}: chunk.boundary: {boundary!r} is not one of "
                         f"{', '.join(allowed)}")


def load_reference(ref_path: Path) -> dict[str, Any]:
    """Read and check a ``*.reference.yaml`` sidecar, its boundary included."""
    reference = _golden.load_reference(ref_path)
    check_reference(reference, ref_path)
    return reference


def load_golden(path: str | Path) -> GoldenSet:
    """`sweep.data.golden.load_golden` with the sidecar's boundary checked too."""
    return _golden.load_golden(path, check_reference)
