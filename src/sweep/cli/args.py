"""Options several commands share."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def selection_args(parser: argparse.ArgumentParser, *, many: bool = False) -> None:
    """Which sweep of which MLflow store (compare, export, rerun). ``many``: ``--sweep`` may be
    given more than once (compare), a list in ``args.sweep`` (None when not given)."""
    parser.add_argument("--experiment", help="MLflow experiment (default: the one used last)")
    if many:
        parser.add_argument("--sweep", action="append", default=None,
                            help="latest (default) or the parent run id of a sweep; more than "
                            "once: the configurations of all of them in one table (they must "
                            "have scored the same golden set and corpus)")
    else:
        parser.add_argument("--sweep", default="latest",
                            help="latest (default) or the parent run id of a sweep")
    parser.add_argument("--tracking-uri", default=None,
                        help="MLflow store (default: sqlite:///<cwd>/mlflow.db)")


def correction_arg(parser: argparse.ArgumentParser) -> None:
    """How the verdicts against the best are corrected for the table's many comparisons."""
    from sweep.decide.multiple import CORRECTIONS, DEFAULT_CORRECTION

    parser.add_argument("--correction", choices=CORRECTIONS, default=DEFAULT_CORRECTION,
                        help="correct the verdicts for the table's comparisons: holm (default; "
                        "the chance of any false 'worse' <= 5%%), bh (Benjamini-Hochberg: the "
                        "share of false 'worse' <= 5%%) or none")


def _fraction(what: str, example: str) -> Callable[[str], float]:
    """An argparse type: a number in (0, 1], named ``what`` in its error (``example`` says how
    it reads, e.g. "0.03 = 3 points")."""
    def parse(value: str) -> float:
        try:
            d = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if not 0 < d <= 1:
            raise argparse.ArgumentTypeError(f"{value}: {what} must be in (0, 1] ({example})")
        return d

    return parse


_detect = _fraction("the difference to detect", "0.03 = 3 points")
_margin = _fraction("the margin", "0.02 = 2 points")


def detect_arg(parser: argparse.ArgumentParser) -> None:
    """The difference the power line sizes the golden set for (compare, audit)."""
    from sweep.decide.power import DEFAULT_DETECT

    parser.add_argument("--detect", type=_detect, default=DEFAULT_DETECT, metavar="D",
                        help="size the golden set for this difference of the metric "
                        f"(default {DEFAULT_DETECT}: {100 * DEFAULT_DETECT:g} points)")


def margin_arg(parser: argparse.ArgumentParser) -> None:
    """How close to the best a cheaper configuration must be shown to be (compare, export)."""
    from sweep.decide.winner import DEFAULT_MARGIN

    parser.add_argument("--margin", type=_margin, default=DEFAULT_MARGIN, metavar="M",
                        help="a cheaper configuration is shown equal to the best when the 95%% "
                        "interval of its paired difference lies within +-M on the metric "
                        f"(default {DEFAULT_MARGIN})")
