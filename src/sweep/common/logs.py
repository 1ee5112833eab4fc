"""What the job's log shows: the tool's and Hydra's own lines, and only warnings from the
libraries below them."""

from __future__ import annotations

import logging
from typing import Any


class OwnLines(logging.Filter):
    """Below WARNING, only the tool's and Hydra's own lines: a library that sets its logger to
    DEBUG (``[bm25s][DEBUG] - Building index``) would drown them in a CI log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (record.levelno >= logging.WARNING
                or record.name.split(".", 1)[0] in ("sweep", "hydra", "__main__"))


def own_lines_only(verbose: Any) -> None:
    """Third-party loggers at WARNING on every handler of the root logger, unless
    ``verbose`` (Hydra's ``hydra.verbose``)."""
    # On the handlers, not the loggers: libraries imported later set their own levels.
    # Hydra configures logging anew for each job, hence once per job.
    if verbose:  # hydra.verbose=true (or a list of loggers): everything, as Hydra does
        return
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, OwnLines) for f in handler.filters):
            handler.addFilter(OwnLines())
