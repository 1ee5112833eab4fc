"""The one exception type users see: a one-line message naming what, where and how to fix."""

from __future__ import annotations


class SweepError(Exception):
    """An error caused by input (files, config, environment), not by a bug.

    The entry points print ``str(error)`` as a single line and exit non-zero; no traceback
    unless ``--debug`` or ``HYDRA_FULL_ERROR=1``.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message} ({hint})")
