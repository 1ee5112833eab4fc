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


# A libpq URL names its role before the @ (cache.url=postgresql://USER@HOST:PORT/DB); without a
# ':' that is no credential: the password comes from the variable cache.password_env names.
_PG_ROLE_ONLY = re.compile(r"^postgres(?:ql)?://[^:/?#@\s]+@[^@\s]*$")


def url_has_userinfo(value: str) -> bool:
    """True for ``scheme://user[:password]@host...``: credentials inside a URL (a PostgreSQL
    URL's role alone, ``postgresql://user@host``, is not one)."""
    value = value.strip()
    return _USERINFO.match(value) is not None and _PG_ROLE_ONLY.match(value) is None


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


# --- Personal data and keys in free text (questions imported from logs and traces) ----------
#
# Each pattern finds a candidate; the card and IBAN candidates must also pass their checksum
# (Luhn, ISO 13616 mod 97), so an order number or a long product code is left alone. Phones
# need a leading + or separators between digit groups: a bare digit run is an id as often as
# it is a number to call. Earlier kinds win: a card's digits are not counted again as a phone.

REDACTION_KINDS: tuple[str, ...] = ("key", "email", "iban", "card", "phone")

_KEY_PATTERNS = (
    # credentials inside a URL: the scheme and host stay, the user:password goes
    re.compile(r"(?<=://)[^/?#@\s:]+:[^/?#@\s]+(?=@)"),
    re.compile(r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}"),  # OpenAI-style
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # a JWT
    re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/-]{16,}=*"),
)
# Anything else long, mixed letters and digits, with no word shape: hex digests, tokens.
_KEY_GENERIC = re.compile(r"(?<![\w-])[A-Za-z0-9_\-+/]{24,}={0,2}(?![\w-])")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}"
                    r"(?:[ .-]\d{2,4}){1,4}(?![\w-])|(?<![\w+])\+\d{8,14}(?!\w)")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """ISO 13616: the country code and check digits moved to the end, letters as 10..35,
    the number mod 97 is 1."""
    s = candidate.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def _generic_key(token: str) -> bool:
    body = token.rstrip("=")
    has_digit = any(c.isdigit() for c in body)
    has_alpha = any(c.isalpha() for c in body)
    if not (has_digit and has_alpha):
        return False
    # A hyphenated phrase or path (state-of-the-art-...-2024) is words, not a key: a key has
    # long runs without separators.
    return max(len(part) for part in re.split(r"[-_/+]", body)) >= 20


# Cheap gates, so that ordinary text (most of a log) costs two scans instead of every pattern:
# every key pattern needs a run of 14+ token characters, and a card, IBAN or phone 9+ digits.
_LONG_RUN = re.compile(r"[A-Za-z0-9_\-+/.=]{14}")
_NON_DIGIT = re.compile(r"\D+")


def redact_text(text: str, counts: dict[str, int] | None = None) -> str:
    """``text`` with e-mail addresses, phone numbers, card numbers (Luhn), IBANs (mod 97) and
    key-like strings replaced by ``[email]``, ``[phone]``, ``[card]``, ``[iban]``, ``[key]``;
    each replacement is added to ``counts[kind]``."""
    tally = counts if counts is not None else {}

    def sub(kind: str, pattern: re.Pattern[str], value: str,
            check: Any = None) -> str:
        def repl(m: re.Match[str]) -> str:
            if check is not None and not check(m.group(0)):
                return m.group(0)
            tally[kind] = tally.get(kind, 0) + 1
            return f"[{kind}]"

        return pattern.sub(repl, value)

    if _LONG_RUN.search(text):
        for pattern in _KEY_PATTERNS:
            text = sub("key", pattern, text)
    if "@" in text:
        text = sub("email", _EMAIL, text)
    if _LONG_RUN.search(text):
        text = sub("key", _KEY_GENERIC, text, _generic_key)
    if len(_NON_DIGIT.sub("", text)) >= 9:
        text = sub("iban", _IBAN, text, iban_ok)
        text = sub("card", _CARD, text, lambda s: luhn_ok(_NON_DIGIT.sub("", s))
                   and len(set(_NON_DIGIT.sub("", s))) > 1)
        text = sub("phone", _PHONE, text, lambda s: 9 <= sum(c.isdigit() for c in s) <= 15)
    return text
