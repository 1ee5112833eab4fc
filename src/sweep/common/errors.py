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


def model_load_error(setting: str, value: str, what: str, exc: BaseException,
                     offline_hint: str) -> SweepError:
    """The one-line error for a model that would not load; the hint applies offline only,
    where a hub id cannot work."""
    import os

    first = (str(exc).splitlines() or [""])[0][:120]
    hint = offline_hint if os.environ.get("HF_HUB_OFFLINE") == "1" else None
    return SweepError(f"{setting}={value!r}: cannot load {what} ({type(exc).__name__}: {first})",
                      hint=hint)
