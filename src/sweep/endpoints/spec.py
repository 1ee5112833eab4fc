"""`EndpointSpec`: how to call one endpoint, whatever is behind it."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from urllib.parse import urlparse

from sweep.common.errors import SweepError
from sweep.common.net import connect_error

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EndpointSpec:
    """How to call an endpoint. ``api_key_env`` NAMES the variable that holds the key; the key
    itself is read at call time and never stored, logged or put in an error message."""

    section: str  # "embedding", "rerank", "generation", ...: messages name the config keys
    base_url: str
    api_key_env: str = ""
    timeout_s: float = 60.0
    max_retries: int = 5
    concurrency: int = 2
    requests_per_minute: int = 0  # 0 = no limit
    tokens_per_minute: int = 0

    def check_url(self, example: str) -> None:
        """Refuse an empty or non-http(s) ``base_url``; ``example`` is the hint's URL."""
        if not self.base_url:
            raise SweepError(f"{self.section}.base_url is empty", hint=f"e.g. {example}")
        parsed = urlparse(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise SweepError(f"{self.section}.base_url={self.base_url!r} is not an http(s) URL")

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env, "") if self.api_key_env else ""

    def warn_if_no_key(self) -> None:
        if self.api_key_env and not self.api_key():
            log.warning("%s.api_key_env: $%s is not set; calling %s without a key (fine for "
                        "local servers)", self.section, self.api_key_env, self.base_url)

    def preflight(self, timeout: float, hint: str) -> None:
        """Fail in seconds when nothing listens at ``base_url`` (retries with back-off would
        take minutes)."""
        reason = connect_error(self.base_url, timeout)
        if reason is not None:
            raise SweepError(f"{self.section}.base_url={self.base_url}: cannot reach the "
                             f"endpoint ({reason})", hint=hint)
