"""Ctrl-C that is not lost.

Python raises KeyboardInterrupt wherever the main thread happens to be when SIGINT's handler
runs. If that is a garbage-collector callback or a ``__del__`` (SQLAlchemy's weakref callbacks
run often while MLflow logs a run), the exception is printed as "Exception ignored in ..." and
dropped, and the sweep goes on as if nothing was pressed: under load the Ctrl-C test saw it
run a stalled 60 s request to its timeout and exit 1 instead of 130. So the handler raises
and, until the interrupt has been handled (`handled`), sends SIGINT again every
``resend_s`` seconds from a daemon thread: a dropped one is followed by another."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

_pending = threading.Event()
_resender: threading.Thread | None = None


def _resend(resend_s: float) -> None:
    while _pending.is_set():
        time.sleep(resend_s)
        if _pending.is_set():
            os.kill(os.getpid(), signal.SIGINT)


def install(resend_s: float = 0.5) -> None:
    """Make SIGINT raise KeyboardInterrupt, and keep raising it until `handled` is called."""

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        global _resender
        _pending.set()
        if _resender is None or not _resender.is_alive():
            _resender = threading.Thread(target=_resend, args=(resend_s,), daemon=True)
            _resender.start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    # The dropped one would print "Exception ignored in ..." with a traceback; it is not an
    # error (the resend follows), so only other unraisable exceptions reach the default hook.
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if unraisable.exc_type is not KeyboardInterrupt:
            previous(unraisable)

    sys.unraisablehook = hook


def handled() -> None:
    """The interrupt reached the code that handles it: ignore further SIGINTs (the resent ones
    and the user's next key press) while it closes the sweep."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _pending.clear()
