"""One rule for what counts as a secret in a config, and scrubbing a known secret from text.

A config never holds a key: ``generation.api_key_env`` names the environment variable that
does. A key whose last component is a secret word (``api_key``, ``token``, ``password``, ...)
is refused wherever it appears, and so is a URL with credentials in it (``http://u:p@host``),
because Hydra and MLflow write the composed config into several files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

# The last component of a dotted key, whole or after a `_`/`-`: `hf_token`, `client_secret`.
# Anchored at the end so that `tokenizer`, `max_tokens` and `token_budget` are not secrets;
# a `*_env` key holds a variable NAME and is always allowed.
_SECRET_WORD = re.compile(
    r"(?:^|[_-])(?:api[_-]?key|key|token|secret|password|passwd|credentials?)$",
    re.IGNORECASE)
_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]+@")

HINT = ("put the key in an environment variable and name that variable with "
        "generation.api_key_env / judge.api_key_env (for MLflow: MLFLOW_TRACKING_USERNAME / "
        "MLFLOW_TRACKING_PASSWORD or MLFLOW_TRACKING_TOKEN)")


def is_secret_key(dotted: str) -> bool:
    last = dotted.lstrip("+~").rsplit(".", 1)[-1].lower()
    return not last.endswith("_env") and _SECRET_WORD.search(last) is not None


def url_has_userinfo(value: str) -> bool:
    """True for ``scheme://user[:password]@host...``: credentials inside a URL."""
    return _USERINFO.match(value.strip()) is not None


def find_secrets(node: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted key, reason) for every secret-looking key or URL-with-credentials value in a
    plain config tree. The reason never contains the value."""
    if isinstance(node, Mapping):
        items = [(str(k), v) for k, v in node.items()]
    elif isinstance(node, list | tuple):
        items = [(str(i), v) for i, v in enumerate(node)]
    else:
        if isinstance(node, str) and url_has_userinfo(node):
            yield prefix, "holds a URL with credentials (user:password@)"
        return
    for key, value in items:
        dotted = f"{prefix}.{key}" if prefix else key
        if isinstance(node, Mapping) and is_secret_key(dotted) and value not in (None, ""):
            yield dotted, "looks like a secret"
            continue
        yield from find_secrets(value, dotted)


def secret_error(key: str, reason: str) -> str:
    return f"config: {key} {reason}; a config is written to several files, so it never holds one"


# A fragment this long of a key is masked wherever it appears: servers echo a key cut at a
# field's width or with its middle masked, and a message is cut again at our own width.
FRAGMENT = 6


def scrub(text: str, secret: str) -> str:
    """``text`` with ``secret`` and every run of at least `FRAGMENT` characters of it replaced by
    ``***`` (values shorter than 4 characters are left alone: they would mangle ordinary text
    and are no real key). A fragment is a substring of the key (its head cut at the end of the
    text, its tail after a mask), so no part of the key longer than that survives.

    >>> scrub("bad key sk-abcdef0123 (sk-abcd...ef0123), echo sk-abcdef01", "sk-abcdef0123")
    'bad key *** (***...***), echo ***'
    """
    if not secret or len(secret) < 4:
        return text
    text = text.replace(secret, "***")
    n = min(FRAGMENT, len(secret))
    if len(text) < n:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        # the longest run from i that is a part of the key
        j = i + n
        if j <= len(text) and text[i:j] in secret:
            while j < len(text) and text[i:j + 1] in secret:
                j += 1
            out.append("***")
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)
