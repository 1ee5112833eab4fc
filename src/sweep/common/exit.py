"""Ending a command without the interpreter's teardown.

At exit CPython finalises every module and frees every object one at a time. After MLflow,
SQLAlchemy and matplotlib have been imported that took 1.4-2 s (measured: the same work ending
with and without it), as long as a warm sweep's four jobs on a small corpus. Nothing a command
writes waits for it: files are closed by their ``with`` blocks, the SQLite caches run in
autocommit, and the exit handlers (logging's flush among them) still run here, in order.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def status_of(code: object) -> int:
    """The exit status `sys.exit` gives ``code``: None is 0, an int itself, anything else is
    printed to stderr and is 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_then_exit(main: Callable[[], object]) -> NoReturn:
    """Run a program's ``main``, then end the process with its status: exit handlers, flushed
    streams, no teardown. An exception other than SystemExit propagates as usual."""
    try:
        main()
        status = 0
    except SystemExit as exc:
        status = status_of(exc.code)
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    join_threads = getattr(threading, "_shutdown", None)
    if run_handlers is None or join_threads is None:  # not CPython: the ordinary exit
        sys.exit(status)
    # CPython's own order: first the threads (and the hooks of `threading._register_atexit`,
    # where concurrent.futures and joblib's loky tell their worker processes to stop), then
    # the exit handlers. Handlers alone hung a joblib sweep: multiprocessing's handler waited
    # for loky workers that no one had told to stop.
    join_threads()
    run_handlers()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe or stream: nothing left to say
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)
