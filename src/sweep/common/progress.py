"""Progress bars only where someone watches them: a terminal, not a CI log or a Slurm file,
where each redraw becomes another line."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any


def show_progress(requested: bool = True) -> bool:
    """``requested`` and stderr is a terminal; ``CHUNK_SWEEP_PROGRESS=0|1`` forces it."""
    if not requested:
        return False
    forced = os.environ.get("CHUNK_SWEEP_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


# Seconds between two progress lines in a log (CHUNK_SWEEP_PROGRESS_EVERY_S to change): often
# enough that a watcher of a CI log or a Slurm file knows the job lives, rare enough that a
# sweep's log stays readable.
EVERY_S = 30.0


def _every_s() -> float:
    try:
        return max(0.05, float(os.environ.get("CHUNK_SWEEP_PROGRESS_EVERY_S", EVERY_S)))
    except ValueError:
        return EVERY_S


class Progress:
    """Progress of one stage: a bar on a terminal; elsewhere (a log, a pseudo-terminal whose
    bar is not drawn, a stage that cannot count), one line every ``EVERY_S`` seconds while the
    stage runs, so a long stage is never silent. Quick stages print nothing.

        with Progress("embed minilm", total=len(texts), unit="texts") as p:
            for batch in ...: p.update(len(batch))
        with Progress("parse big.pdf (pdfplumber)"):  # no count: "still running" lines
            ...
    """

    def __init__(self, desc: str, total: int | None = None, unit: str = "",
                 *, bar: bool | None = None, log: logging.Logger | None = None) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.done = 0
        self.note = ""  # what it is on now (a file name), said in the next line
        self._log = log or logging.getLogger("sweep.progress")
        self._bar_wanted = show_progress(True) if bar is None else bar
        self._bar: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start = 0.0

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        if self._bar_wanted and self.total:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=self.desc, unit=f" {self.unit}".rstrip()
                             or "it", leave=False)
        else:
            self._thread = threading.Thread(target=self._tick, daemon=True,
                                            name=f"progress {self.desc}")
            self._thread.start()
        return self

    def update(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if note:
            self.note = note
        if self._bar is not None:
            self._bar.update(n)

    def line(self) -> str:
        """The periodic line: what, how far, how long so far."""
        took = f"{time.monotonic() - self._start:.0f} s"
        if self.total:
            share = f" ({100 * self.done / self.total:.0f}%)"
            text = f"{self.desc}: {self.done:,} of {self.total:,} {self.unit}{share}, {took}"
        else:
            text = f"{self.desc}: still running, {took}"
        return f"{text} (now: {self.note})" if self.note else text

    def _tick(self) -> None:
        every = _every_s()
        while not self._stop.wait(every):
            self._log.info("%s", self.line())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()
