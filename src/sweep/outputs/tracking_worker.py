"""The MLflow calls of ``python -m sweep`` in a second process, on the other core.

A warm sweep's own work is single-threaded Python, and its MLflow set-up is the biggest fixed
cost: importing MLflow and its SQLAlchemy store takes about 3 s of CPU, opening a SQLite store
runs alembic's schema check. `start` forks a worker at the top of ``python -m sweep``, before
Hydra is even imported; the worker imports MLflow at once while this process composes the
configuration and starts the first job. `call` runs a function of `sweep.outputs.tracking`
there (by name; arguments and results are plain picklable data) and waits for its result;
`submit` queues one whose result nobody waits for, so that the next job starts at once;
`begin` sends one whose result is asked for later (the sweep's parent run, needed when the
first job's run is logged, not before that job runs). The worker runs the calls in the order
they were sent, so a queued call is done before any later one starts.

- A `SweepError` of the worker is raised here with the same message; any other exception of
  the worker is raised as a `RuntimeError` carrying its traceback. A queued call's error goes to
  its ``on_error`` at the next `call`, `submit` or `drain` of this process.
- Ctrl-C reaches the whole process group: the worker ignores SIGINT and goes on serving, so
  that this process can still close the parent run (``close_interrupted``) through it.
- The worker exits when its pipe closes (`stop`, at this process's exit) and is killed by the
  kernel when this process dies (``PR_SET_PDEATHSIG``), also while a call blocks: a killed sweep
  leaves no worker behind holding the store or its stdout.
- The runs' ``chunk_sweep.pid`` tag names this process, not the worker (`tracking.set_owner`):
  stale-run detection asks whether the sweep is still alive.
- Without fork (not Linux, threads already running, ``CHUNK_SWEEP_TRACKING_INPROC=1``), in any
  other process (a launcher's job process), and after the worker died, the functions run here.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from typing import Any

from sweep.common.errors import SweepError
from sweep.outputs import tracking

INPROC_ENV = "CHUNK_SWEEP_TRACKING_INPROC"
# How long the worker waits for a call before it spends its idle time importing matplotlib.
IDLE_S = 0.5
OnError = Callable[[SweepError], None]


@dataclass(eq=False)
class _Sent:
    name: str
    # None: a `call`, whose caller waits for the reply (or was interrupted and drops it).
    on_error: OnError | None = None
    keep: bool = False  # a `begin`: the reply is kept for `Promise.result`
    reply: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class Later:
    """Part ``index`` of the result of the `begin` call of ``name``, as an argument of a later
    call: the worker puts the value in, having run that call first (calls run in order), so
    the caller need not wait for it (`Promise.later`)."""

    name: str
    index: int


class Promise:
    """The result of a call `begin` sent: waited for (in order) at the first `result`."""

    def __init__(self, sent: _Sent) -> None:
        self._sent = sent

    def ready(self) -> bool:
        """Whether `result` would answer without waiting (the replies already there read)."""
        sent = self._sent
        worker = _live()
        if sent.reply is None and worker is not None and any(s is sent for s in worker.sent):
            _collect(worker, None, only_ready=True)
            return sent.reply is not None
        return True  # answered, or lost with the worker: `result` says which at once

    def later(self, index: int) -> Later:
        """Part ``index`` of the result, for a call sent after this one (only while the worker
        has not answered: `ready` is False)."""
        return Later(self._sent.name, index)

    def result(self) -> Any:
        sent = self._sent
        if sent.reply is None:
            worker = _live()
            if worker is not None and any(s is sent for s in worker.sent):
                return _collect(worker, sent)
        if sent.reply is None:
            raise SweepError(f"the MLflow worker never answered {sent.name}")
        return _result(sent.reply)


@dataclass
class _Worker:
    pid: int
    owner: int  # the process that forked it: the only one that may talk to it
    conn: Connection | None
    sent: deque[_Sent] = field(default_factory=deque)
    ended: str | None = None  # why it is gone, once it is


_WORKER: _Worker | None = None


def start() -> bool:
    """Fork the worker (once per process); False where calls will run in this process."""
    global _WORKER
    if _WORKER is not None:
        return _live() is not None
    if (os.environ.get(INPROC_ENV) == "1" or not sys.platform.startswith("linux")
            or not hasattr(os, "fork")):
        return False
    # fork copies only the calling thread: a lock another thread holds stays held forever in
    # the child. At the top of `python -m sweep` no other thread exists yet.
    if threading.active_count() > 1:
        return False
    ours, theirs = Pipe()
    owner = os.getpid()
    for stream in (sys.stdout, sys.stderr):  # else the child's copy of a buffer prints twice
        with contextlib.suppress(Exception):
            stream.flush()
    # SIGINT blocked across the fork: the child ignores it before it can arrive.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        ours.close()
        theirs.close()
        return False
    if pid == 0:  # the worker
        code = 0
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            ours.close()
            _serve(theirs, owner)
        except BaseException:
            code = 1
        finally:
            os._exit(code)  # never this process's atexit handlers, nor its buffers
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    theirs.close()
    _WORKER = _Worker(pid, owner, ours)
    atexit.register(stop)
    return True


def worker_pid() -> int | None:
    """The worker's process id while it serves this process, else None."""
    worker = _live()
    return worker.pid if worker is not None else None


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a function of `sweep.outputs.tracking`) in the worker, after
    every call sent before it; its result, or its `SweepError` raised here."""
    sent = _Sent(_name_of(fn))
    worker = _live()
    if worker is None or not _send(worker, sent, args, kwargs):
        return fn(*_here(args), **_here(kwargs))
    return _collect(worker, sent)


def submit(fn: Callable[..., Any], *args: Any, on_error: OnError, **kwargs: Any) -> None:
    """Queue ``fn(*args, **kwargs)`` in the worker without waiting for it; its `SweepError`
    goes to ``on_error`` at the latest at the next `call` or `drain` (right away where the
    call runs in this process)."""
    worker = _live()
    if worker is None or not _send(worker, _Sent(_name_of(fn), on_error), args, kwargs):
        try:
            fn(*_here(args), **_here(kwargs))
        except SweepError as exc:
            on_error(exc)
        return
    _collect(worker, None, only_ready=True)


def begin(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Promise:
    """Send ``fn(*args, **kwargs)`` and go on; its result (or `SweepError`) at
    `Promise.result`. (Where the call runs in this process, it runs now.)"""
    sent = _BEGUN[_name_of(fn)] = _Sent(_name_of(fn), keep=True)
    worker = _live()
    if worker is None or not _send(worker, sent, args, kwargs):
        try:
            sent.reply = ("ok", fn(*args, **kwargs))
        except SweepError as exc:
            sent.reply = ("error", exc.message, exc.hint)
    return Promise(sent)


def drain() -> None:
    """Wait until the worker has done every call sent so far (their errors to ``on_error``)."""
    worker = _live()
    if worker is not None:
        _collect(worker, None)


def set_store_wait(seconds: float) -> None:
    """`tracking.set_store_wait` here and in the worker (before the calls sent after it)."""
    tracking.set_store_wait(seconds)
    worker = _live()
    if worker is not None:
        _send(worker, _Sent("set_store_wait", lambda exc: None), (seconds,), {})


def stop() -> None:
    """Drain the queue, then end the worker and reap it. It has nothing left to do, and may
    still be importing MLflow (``--help``, a bad override, ``tracking.enabled=false``): ended
    with SIGKILL, not left to finish that before it would see its pipe close."""
    worker = _live()
    if worker is None:
        return
    _collect(worker, None)
    if worker.conn is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker.pid, signal.SIGKILL)
    _end(worker, "stopped")


# --- this process's side ---------------------------------------------------------------------

# The latest `begin` call of each function: what a `Later` names, where a call that carries
# one runs in this process (the worker gone).
_BEGUN: dict[str, _Sent] = {}


def _here(values: Any) -> Any:
    """``values`` (args or kwargs) with each `Later` filled in, for a call run in this process:
    the begun call's reply must be in by then (the worker answered it before it went, or
    `_gone` recorded it lost)."""
    return _filled_in(values, {name: sent.reply for name, sent in _BEGUN.items()})


def _name_of(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", "")
    if getattr(tracking, name, None) is not fn:
        raise TypeError(f"{fn!r} is not a function of sweep.outputs.tracking")
    return name


def _live() -> _Worker | None:
    worker = _WORKER
    if worker is None or worker.conn is None or worker.owner != os.getpid():
        return None
    return worker


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Ctrl-C raises wherever this process is: not halfway through a message, which would leave
    the pipe out of step. It is delivered when the message is through."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _send(worker: _Worker, sent: _Sent, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """False when the worker is gone (the call was not sent: it runs here instead)."""
    assert worker.conn is not None
    try:
        with _sigint_held():  # sent and queued, or neither
            worker.conn.send((sent.name, args, kwargs, sent.keep))
            worker.sent.append(sent)
    except OSError:
        _gone(worker)
        return False
    return True


def _collect(worker: _Worker, target: _Sent | None, only_ready: bool = False) -> Any:
    """Read replies in order up to ``target``'s (returned, or raised), or all of them (only
    those already there with ``only_ready``); a queued call's error goes to its handler."""
    while worker.sent and worker.conn is not None:
        conn = worker.conn
        head = worker.sent[0]
        try:
            if only_ready and not conn.poll(0):
                return None
            conn.poll(None)  # waits here, where a Ctrl-C leaves the pipe in step
            with _sigint_held():  # read, dequeued and handled, or none of it
                reply = conn.recv()
                worker.sent.popleft()
                if head.keep:
                    head.reply = reply
                elif head is not target:
                    _settle(head, reply)
        except (EOFError, OSError):
            _gone(worker)
            break
        if head is target:
            return _result(reply)
    if target is not None and target.reply is not None:  # a `begin` the dead worker lost
        return _result(target.reply)
    if target is not None:
        raise SweepError(f"MLflow worker process {worker.pid} {worker.ended}: whether "
                         f"{target.name} was done is unknown",
                         hint="the calls after it run in the sweep's own process")
    return None


def _settle(sent: _Sent, reply: tuple[Any, ...]) -> None:
    """A queued call's reply: its error to its handler. (A reply nobody waits for is that of a
    call whose caller was interrupted.)"""
    if sent.on_error is None or reply[0] == "ok":
        return
    try:
        _result(reply)
    except SweepError as exc:
        sent.on_error(exc)
    except RuntimeError as exc:
        sent.on_error(SweepError(f"{sent.name} failed in the MLflow worker "
                                 f"({str(exc).strip().splitlines()[-1][:300]})"))


def _result(reply: tuple[Any, ...]) -> Any:
    kind = reply[0]
    if kind == "ok":
        return reply[1]
    if kind == "error":
        raise SweepError(reply[1], hint=reply[2])
    raise RuntimeError(f"in the MLflow worker process:\n{reply[1]}")


def _gone(worker: _Worker) -> None:
    """The worker died (killed, out of memory): every queued call is reported failed, and the
    calls from now on run in this process."""
    _end(worker, "ended")
    lost, worker.sent = list(worker.sent), deque()
    for sent in lost:
        error = SweepError(f"MLflow worker process {worker.pid} {worker.ended} before it had "
                           f"done {sent.name}")
        if sent.keep:
            sent.reply = ("error", error.message, None)
        elif sent.on_error is not None:
            sent.on_error(error)


def _end(worker: _Worker, how: str) -> None:
    if worker.conn is not None:
        worker.conn.close()
        worker.conn = None
    status = ""
    with contextlib.suppress(ChildProcessError):
        _, code = os.waitpid(worker.pid, 0)
        if os.WIFSIGNALED(code):
            status = f" (killed by signal {os.WTERMSIG(code)})"
        elif os.WIFEXITED(code) and os.WEXITSTATUS(code):
            status = f" (exit status {os.WEXITSTATUS(code)})"
    worker.ended = how + status


# --- the worker's side -----------------------------------------------------------------------

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with(owner: int) -> None:
    """SIGKILL from the kernel when the sweep's process ends, whatever the worker is doing."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL))
    if os.getppid() != owner:  # it ended before the line above
        os._exit(0)


def _serve(conn: Connection, owner: int) -> None:
    _die_with(owner)
    tracking.set_owner(owner)
    # The expensive part, before the first call arrives; an import error surfaces at that call.
    with contextlib.suppress(Exception):
        tracking.preload()
    plot_ready = False
    done: dict[str, tuple[Any, ...]] = {}  # the reply of the latest `begin` of each function
    while True:
        try:
            if not plot_ready and not conn.poll(IDLE_S):
                plot_ready = True
                with contextlib.suppress(Exception):
                    tracking.preload_plot()
            name, args, kwargs, begun = conn.recv()
        except (EOFError, OSError):
            return
        try:
            args, kwargs = _filled_in(args, done), _filled_in(kwargs, done)
            reply: tuple[Any, ...] = ("ok", getattr(tracking, name)(*args, **kwargs))
        except SweepError as exc:
            reply = ("error", exc.message, exc.hint)
        except Exception:
            reply = ("crash", traceback.format_exc())
        if begun:  # for a later call's `Later` argument
            done[name] = reply
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception:  # a result that does not pickle
            conn.send(("crash", traceback.format_exc()))


def _filled_in(values: Any, replies: Mapping[str, tuple[Any, ...] | None]) -> Any:
    """``values`` (a call's args, a tuple, or its kwargs, a dict) with each `Later` replaced
    by the part of the begun call's result it names (``replies``: the latest `begin` reply of
    each function); that call's error, or its absence, is this call's."""
    def filled(value: Any) -> Any:
        if not isinstance(value, Later):
            return value
        reply = replies.get(value.name)
        if reply is None:
            raise SweepError(f"{value.name} had not run before the call that needs its result")
        if reply[0] != "ok":
            why = reply[1] if reply[0] == "error" else reply[1].strip().splitlines()[-1]
            raise SweepError(f"{value.name} failed: {why}")
        return reply[1][value.index]

    if isinstance(values, dict):
        return {k: filled(v) for k, v in values.items()}
    return tuple(filled(v) for v in values)
