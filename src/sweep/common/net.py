"""Is anything listening? A TCP connect before a client that would retry for minutes."""

from __future__ import annotations

import socket
from urllib.parse import urlparse


def connect_error(url: str, timeout: float) -> str | None:
    """Why a TCP connection to the host and port of an http(s) ``url`` fails, or None when it
    succeeds (and for URLs of other schemes, which have nothing to connect to)."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https"):
        return None
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        socket.create_connection((parsed.hostname or "localhost", port), timeout=timeout).close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
