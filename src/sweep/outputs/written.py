"""What the jobs of this process wrote to their per_question.csv, remembered for the sweep's end.

A sweep's end reads every job's per_question.csv back for its statistics (the ``qid``,
``status`` and headline columns: `sweep.decide.decision.read_questions`). With Hydra's basic
launcher those jobs ran in this process moments before, and reading the files needed pandas,
which nothing else of a sweep's process imports (~0.3 s of a warm sweep's end). A job
therefore leaves those columns here (`remember`), and the reader takes them (`recall`) instead
of parsing the file, when it is the very file that was written: same inode (a file is written
by rename, so a rewritten one is another inode), size and modification time. Anything else
(another process's job, a file downloaded or edited since) is read from disk as before.

What `recall` gives reads exactly as pandas reads the file: `remember` keeps only columns
whose every value survives the CSV round trip unchanged (a text qid and status that pandas
does not take for a missing value; a finite or infinite float, an int below 2**53, or None,
which is an empty cell: NaN), and otherwise keeps nothing, so the file is read.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.common.csvcells import neutralise

# The cells pandas' CSV reader takes for a missing value by default (pandas'
# ``_libs.parsers.STR_NA_VALUES``; a test compares the two): a qid or status written as one
# reads back as NaN, not as itself, so such a file is not remembered.
PANDAS_NA = frozenset({
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
})
# At most this many rows in all are remembered (24 bytes a row): beyond it, the files are read.
# (`forget` at each sweep's start bounds the memo to one sweep's jobs.)
MAX_ROWS = 4_000_000


@dataclass(frozen=True)
class Written:
    """The ``qid`` and ``status`` of every row of a per_question.csv and some of its numeric
    columns (``values``; NaN for an empty cell), as pandas reads them."""

    qids: list[str]
    statuses: list[str]
    values: Mapping[str, Sequence[float]]

    @property
    def columns(self) -> list[str]:
        return ["qid", "status", *self.values]

    def status_of(self) -> dict[str, str]:
        """``{qid: status}``, as `sweep.decide.lost.statuses` gives for the file."""
        return dict(zip(self.qids, self.statuses, strict=True))

    def scores(self, metric: str) -> dict[str, float]:
        """``{qid: score}`` of the questions scored on ``metric``, as
        `sweep.decide.stats.question_scores` gives for the file: a value (not NaN), status
        ``scored`` unless a document-level metric, the first row of a qid."""
        check = not metric.startswith("doc_")
        out: dict[str, float] = {}
        for qid, status, value in zip(self.qids, self.statuses, self.values[metric],
                                      strict=True):
            if value == value and (not check or status == "scored") and qid not in out:
                out[qid] = value
        return out


_MEMO: dict[tuple[int, int], tuple[tuple[int, int], Written]] = {}


def _stamp(st: os.stat_result) -> tuple[tuple[int, int], tuple[int, int]]:
    return (st.st_dev, st.st_ino), (st.st_mtime_ns, st.st_size)


def _text(value: Any) -> bool:
    # written as itself and read back as itself (a plain str; no line break, which a reader
    # may translate; not a cell pandas takes for NaN)
    return (value.__class__ is str and neutralise(value) not in PANDAS_NA
            and "\r" not in value and "\n" not in value)


def _number(value: Any) -> float | None:
    """The float pandas reads for ``value``'s cell; None when that is not certain."""
    kind = value.__class__
    if kind is float:
        return value
    if value is None:
        return math.nan
    if kind is int and -(2**53) < value < 2**53:
        return float(value)
    return None


def remember(path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> bool:
    """Remember ``rows`` as just written to ``path`` (`outputs.report.write_per_question`):
    their ``qid``, ``status`` and ``columns``. False (nothing kept) when a value would not read
    back as itself, no row has one of ``columns`` (the file may lack the column), or the memo
    is full."""
    rows = list(rows)
    size = sum(len(w.qids) for _, w in _MEMO.values())
    if not rows or size + len(rows) > MAX_ROWS:
        return False
    qids = [r.get("qid") for r in rows]
    statuses = [r.get("status") for r in rows]
    if not all(map(_text, qids)) or not all(map(_text, statuses)):
        return False
    values: dict[str, array[float]] = {}
    for name in dict.fromkeys(columns):
        if name in ("qid", "status") or not any(name in r for r in rows):
            return False
        numbers = [_number(r.get(name)) for r in rows]
        if any(v is None for v in numbers):
            return False
        values[name] = array("d", numbers)  # type: ignore[arg-type]
    try:
        key, stamp = _stamp(os.stat(path))
    except OSError:
        return False
    _MEMO[key] = (stamp, Written(qids, statuses, values))  # type: ignore[arg-type]
    return True


def recall(path: Path, columns: Sequence[str]) -> Written | None:
    """What `remember` kept of ``path`` when it is still that file and ``columns`` are among
    it; else None (read the file)."""
    try:
        key, stamp = _stamp(os.stat(path))
    except OSError:
        return None
    kept = _MEMO.get(key)
    if kept is None or kept[0] != stamp:
        return None
    written = kept[1]
    if not all(c in ("qid", "status") or c in written.values for c in columns):
        return None
    return written


def forget() -> None:
    """Drop everything remembered (at a sweep's start: an earlier sweep's files are not read
    again; tests)."""
    _MEMO.clear()
