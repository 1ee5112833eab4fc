"""Documents that are not markdown: PDF, HTML and Word files, each read by a well-kept library.

`parse_file` reads one file with the chosen parser (through the on-disk cache when one is
given) and returns its `Parsed` text and structure with a `ParseRecord` of what it cost.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass

from sweep.data.parsers.base import Parsed, Parser, check_content, page_at, sniff
from sweep.data.parsers.cache import ParseCache
from sweep.data.parsers.limits import ParseLimits, check_limits
from sweep.data.parsers.registry import (
    DEFAULT_PARSERS,
    FORMATS,
    PARSERS,
    cache_identity,
    cache_key,
    get_parser,
)

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_PARSERS", "FORMATS", "PARSERS", "ParseCache", "ParseLimits", "ParseRecord",
           "Parsed", "Parser", "check_content", "get_parser", "page_at", "parse_file", "sniff"]


@dataclass(frozen=True)
class ParseRecord:
    source: str
    parser: str
    seconds: float  # parse time; 0.0 when served from the cache
    cached: bool
    chars: int
    pages: int

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "parser": self.parser, "seconds": round(self.seconds, 4),
                "cached": self.cached, "chars": self.chars, "pages": self.pages}


def parse_file(data: bytes, source: str, parser: Parser, cache: ParseCache | None = None,
               rel: str | None = None, limits: ParseLimits | None = None
               ) -> tuple[Parsed, ParseRecord]:
    """Parse ``data`` (the bytes of ``source``) with ``parser``; `SweepError` on bad input.

    The bounds of ``limits`` (`ParseLimits`: pages, inflated bytes, HTML characters and depth)
    are checked before the parser runs; a cached parse was checked under the same bounds (they
    key the cache)."""
    limits = limits or ParseLimits()
    check_content(data, parser.fmt, source)
    key = (cache_key(hashlib.sha256(data).hexdigest(), parser, limits) if cache is not None
           else "")
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit, ParseRecord(rel or source, parser.name, 0.0, True, len(hit.text),
                                    len(hit.pages))
    start = time.perf_counter()
    check_limits(data, parser.fmt, parser.name, source, limits)
    parsed = parser.fn(data, source)
    seconds = time.perf_counter() - start
    log.info("parsed %s with %s in %.2f s (%d characters%s)%s", rel or source, parser.name,
             seconds, len(parsed.text), f", {len(parsed.pages)} pages" if parsed.pages else "",
             f"; {'; '.join(parsed.notes)}" if parsed.notes else "")
    if cache is not None:
        cache.put(key, parsed, {"source": rel or source, "seconds": seconds,
                                **cache_identity(parser)})
    return parsed, ParseRecord(rel or source, parser.name, seconds, False, len(parsed.text),
                               len(parsed.pages))
