"""The one exception type users see: a one-line message naming what, where and how to fix."""

from __future__ import annotations

# Characters that end a line or drive a terminal: a file name holding one must not start a
# second line of output (a forged "error: ..." or "ok" line) or recolour the screen.
_BREAKERS = {c: f"\\x{c:02x}" for c in range(32) if chr(c) != "\t"} | {
    0x7F: "\\x7f", 0x85: "\\x85", 0x2028: "\\u2028", 0x2029: "\\u2029"}
_BREAKERS |= {0x0A: "\\n", 0x0D: "\\r"}


def one_line(text: str) -> str:
    """``text`` with line breaks and control characters written as escapes (``\\n``,
    ``\\x1b``): what names a file in a message is then on one line, whatever the name."""
    return text.translate(_BREAKERS)


class SweepError(Exception):
    """An error caused by input (files, config, environment), not by a bug.

    The entry points print ``str(error)`` as a single line and exit non-zero; no traceback
    unless ``--debug`` or ``HYDRA_FULL_ERROR=1``. Line breaks and control characters in the
    message (a file name can hold them) are escaped, so it is one line whatever it names.
    """

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        from sweep.common.secret import scrub_urls

        # A message may name a URL a user gave (a connection error, a bad setting): its
        # password, in the userinfo or the query string, is never printed.
        message = scrub_urls(one_line(message))
        hint = scrub_urls(one_line(hint)) if hint is not None else None
        self.message = message
        self.hint = hint
        super().__init__(message if not hint else f"{message} ({hint})")


class CacheUnusable(SweepError):
    """A cache (``cache.dir``) that cannot be written or read. It names the cache, never the
    input being cached, and is never a reason to skip that input (``corpus.on_error=skip``
    skips bad documents, not a read-only cache folder)."""


def model_load_error(setting: str, value: str, what: str, exc: BaseException,
                     offline_hint: str) -> SweepError:
    """The one-line error for a model that would not load; the hint applies offline only,
    where a hub id cannot work."""
    import os

    first = (str(exc).splitlines() or [""])[0][:120]
    hint = offline_hint if os.environ.get("HF_HUB_OFFLINE") == "1" else None
    return SweepError(f"{setting}={value!r}: cannot load {what} ({type(exc).__name__}: {first})",
                      hint=hint)
