"""One rule for what counts as a secret in a config, and scrubbing a known secret from text.

A config never holds a key: ``generation.api_key_env`` names the environment variable that
does. A key whose last component is a secret word (``api_key``, ``token``, ``password``, ...)
is refused wherever it appears, and so is a URL with credentials in it (``http://u:p@host``),
because Hydra and MLflow write the composed config into several files.
"""

from __future__ import annotations

import itertools
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


# --- URLs: userinfo and password-like query parameters -----------------------------------
#
# A libpq or JDBC-style URL takes its password as a query parameter too
# (postgresql://u@h/db?password=..., ...?user=u&password=...), and a served model's URL its key
# (?api_key=..., ?sig=...): a parameter whose name ends in one of these words holds a secret.
_SECRET_PARAM = re.compile(
    r"(?:^|[_.-])(?:pass|password|passwd|pwd|sslpassword|passphrase|token|secret|apikey|"
    r"api[_-]?key|key|sig|signature|credentials?|auth)$", re.IGNORECASE)
# A URL inside any text: a scheme, ``://`` and everything up to a space or a quote.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
# name=value after ?, &, ; (matrix parameters) or # (an OAuth fragment: #access_token=)
_QUERY_PAIR = re.compile(r"(?P<lead>[?&;#])(?P<name>[^=&#;?/\s]+)=(?P<value>[^&#;\s]*)")
MASK = "***"


def is_secret_param(name: str) -> bool:
    from urllib.parse import unquote

    return _SECRET_PARAM.search(unquote(name).strip()) is not None


def _query_secrets(url: str) -> list[str]:
    """The names of ``url``'s password-like parameters (query, matrix or fragment) that have
    a value."""
    tail = url.partition("://")[2]
    return [m.group("name") for m in _QUERY_PAIR.finditer(tail)
            if m.group("value") and is_secret_param(m.group("name"))]


def url_has_secret_query(value: str) -> bool:
    """True for a URL with a password-like query parameter (``?password=``, ``&api_key=``)."""
    value = value.strip()
    return re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", value) is not None \
        and bool(_query_secrets(value))


def scrub_url(url: str) -> str:
    """``url`` with its credentials masked: userinfo becomes ``***@`` (a PostgreSQL role
    alone, ``postgresql://user@host``, is kept: it is a name, not a secret) and the
    value of every password-like query parameter becomes ``***``. Anything else is kept, so
    the host and database still show where a connection went.

    >>> scrub_url("postgresql://bob@db/app?sslmode=require&password=pw")
    'postgresql://bob@db/app?sslmode=require&password=***'
    >>> scrub_url("https://admin:pw@10.0.0.5/x")
    'https://***@10.0.0.5/x'
    """
    head, sep, rest = url.partition("://")
    if not sep:
        return url
    cut = next((i for i, ch in enumerate(rest) if ch in "/?#"), len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority and url_has_userinfo(url):
        authority = f"{MASK}@{authority.rsplit('@', 1)[1]}"
    tail = _QUERY_PAIR.sub(
        lambda m: (f"{m.group('lead')}{m.group('name')}={MASK}"
                   if m.group("value") and is_secret_param(m.group("name"))
                   else m.group(0)), tail)
    return f"{head}{sep}{authority}{tail}"


def scrub_urls(text: str) -> str:
    """Every URL inside ``text`` through `scrub_url`: what every message, report, config file
    and MLflow param goes through before it is written or printed."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: scrub_url(m.group(0)), text)


def scrub_tree(node: Any) -> Any:
    """A plain tree (dicts, lists, scalars) with every string through `scrub_urls`."""
    if isinstance(node, str):
        return scrub_urls(node)
    if isinstance(node, Mapping):
        return {k: scrub_tree(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [scrub_tree(v) for v in node]
    return node


def install_log_scrubber() -> None:
    """Every log record made in this process (ours and the libraries': MLflow, psycopg,
    httpx) has its message formatted and passed through `scrub_urls` when it is made, before
    any handler writes it to the terminal or a Hydra job's log file. Idempotent."""
    import logging

    current = logging.getLogRecordFactory()
    if getattr(current, "_sweep_scrubs", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = current(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string is logging's own to report
            return record
        if "://" in message:
            record.msg, record.args = scrub_urls(message), None
        return record

    factory._sweep_scrubs = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


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
        elif isinstance(node, str) and url_has_secret_query(node):
            yield prefix, ("holds a URL with a password-like query parameter "
                           f"({', '.join(_query_secrets(node.strip()))}=)")
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
# (Luhn, ISO 13616 mod 97, and for an IBAN its country's length), so an order number or a long
# product code is left alone. A phone needs a shape that ordinary numbers lack: a leading +, a
# national trunk 0, or the North American 3-3-4 groups; a bare digit run is an id as often as
# it is a number to call. Earlier kinds win: a card's digits are not counted again as a phone.
# docs/security.md lists what this does not catch, and how often it fires on real corpora.

REDACTION_KINDS: tuple[str, ...] = ("key", "email", "iban", "card", "phone")

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
    r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.DOTALL)
# credentials inside a URL, whatever the host's length: the scheme and host stay
_URL_USERINFO = re.compile(r"(?<=://)[^/?#@\s]+(?=@[^\s@]*)")
# the value of a password-like key written out in text: "password=...", "api_key: ...",
# "aws_secret_access_key = ..." (a value with a digit, a symbol or mixed case: a word after
# "password:" is usually prose)
_ASSIGNED = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:password|passwd|pwd|passphrase|secret|token|api[_-]?key|"
    r"access[_-]?key|"
    r"secret[_-]?access[_-]?key|client[_-]?secret|auth[_-]?token)\s*[=:]\s*"
    r"(?P<value>[\"']?[^\s\"',;]{6,}[\"']?)")
_KEY_PATTERNS = (
    re.compile(r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}"),  # OpenAI-style
    re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"),  # GitLab
    re.compile(r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
    re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),  # SendGrid
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # a JWT
    re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/-]{16,}=*"),
)
# A cloud secret key: 40 characters of base64 (an AWS secret access key), '/' and '+' included.
_BASE64_40 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/=])")
# Anything else long, mixed letters and digits, with no word shape: hex digests, tokens. A
# '/' ends it, so a URL or a path loses its digest, not its whole path (a key of 40 with '/'
# in it is _BASE64_40's).
_KEY_GENERIC = re.compile(r"(?<![\w-])[A-Za-z0-9_\-+]{24,}={0,2}(?![\w-])")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_IBAN = re.compile(r"(?<![A-Za-z0-9-])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}"
                   r"(?:[ -]?[A-Za-z0-9]{1,4})?(?![A-Za-z0-9])")
# A card number is written in one run or in the groups printed on cards (4-4-4-4, Amex
# 4-6-5); digits after a decimal point are a fraction, not a card.
_CARD = re.compile(r"(?<![\d.,-])(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2,3}(?:[ -]\d{1,4})?"
                   r"|\d{4}[ -]\d{6}[ -]\d{4,5})(?![\d-]|[.,]\d)")
_PHONE = re.compile(
    # international: +CC then groups (a group in parentheses too): +49 1512 3456789
    r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,8}\)?){1,5}(?![\w-])"
    # national, with the trunk 0: 07700 900123, 030 12345678, (030) 1234-5678, 06 12 34 56 78
    # (a 00 start is a hex dump or an international prefix, not a trunk)
    r"|(?<![\w.+-])\(?0[1-9]\d{0,3}\)?(?:[ ./-]?\d{2,8}){1,4}(?![\w-])"
    # North American: (555) 123-4567, 555-123-4567, 555.123.4567
    r"|(?<![\w.+-])(?:\(\d{3}\) ?|\d{3}[.-])\d{3}[.-]\d{4}(?![\w-])")

# ISO 13616 lengths per country (the registry's table): a candidate of another length, or a
# country not in it, is no IBAN whatever its checksum.
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """ISO 13616: a known country at its length; the country code and check digits moved to
    the end, letters as 10..35, the number mod 97 is 1. Case, spaces and dashes are
    ignored (``de89-3704-...`` is the same IBAN)."""
    s = re.sub(r"[ -]", "", candidate).upper()
    if IBAN_LENGTHS.get(s[:2]) != len(s) or not s[2:4].isdigit() or not s.isalnum():
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
    # long runs without separators, with digits scattered among the letters (a chemical name
    # such as 25-hydroxycholecalciferol has a long run of letters only, an identifier such as
    # cov19flightimportExternal one run of digits).
    longest = max(re.split(r"[-_/+]", body), key=len)
    switches = sum(1 for a, b in itertools.pairwise(longest) if a.isdigit() != b.isdigit())
    return len(longest) >= 20 and switches >= 3


def _base64_key(token: str) -> bool:
    """40 base64 characters with upper, lower and digits: a path of 40 characters is made of
    short lower-case words between its slashes, a key of long mixed-case runs."""
    if not (any(c.isupper() for c in token) and any(c.islower() for c in token)
            and any(c.isdigit() for c in token)):
        return False
    parts = [p for p in re.split(r"[/+]", token) if p]
    mixed = sum(1 for p in parts if p != p.lower() and p != p.upper())
    return len(parts) <= 6 and mixed >= 1 and max(len(p) for p in parts) >= 8


def _card_ok(candidate: str) -> bool:
    # issuers' numbers start with 2-6 (Mastercard, Visa, Amex, Discover, ...): a Luhn-valid
    # run that starts with 0 or 1 is a count or a float's digits far more often
    digits = _NON_DIGIT.sub("", candidate)
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and len(set(digits)) > 1 \
        and luhn_ok(digits)


def _phone_ok(candidate: str) -> bool:
    digits = sum(c.isdigit() for c in candidate)
    if candidate.startswith("+"):
        return 8 <= digits <= 15
    return 10 <= digits <= 13


_NON_DIGIT = re.compile(r"\D+")
# Cheap gates, so that ordinary text (most of a log) costs a few scans instead of every
# pattern: every key pattern needs a run of 14+ token characters, a card, IBAN or phone 8+
# digits.
_LONG_RUN = re.compile(r"[A-Za-z0-9_\-+/.=]{14}")


def redact_text(text: str, counts: dict[str, int] | None = None,
                found: list[tuple[str, str]] | None = None) -> str:
    """``text`` with e-mail addresses, phone numbers, card numbers (Luhn), IBANs (mod 97),
    URL credentials, private-key blocks and key-like strings replaced by ``[email]``,
    ``[phone]``, ``[card]``, ``[iban]``, ``[key]``; each replacement is added to
    ``counts[kind]`` (and, with ``found``, appended to it as ``(kind, text replaced)``: for
    measuring precision, never for a file)."""
    tally = counts if counts is not None else {}

    def sub(kind: str, pattern: re.Pattern[str], value: str,
            check: Any = None, group: str | int = 0) -> str:
        def repl(m: re.Match[str]) -> str:
            found_text = m.group(group)
            if check is not None and not check(found_text):
                return m.group(0)
            tally[kind] = tally.get(kind, 0) + 1
            if found is not None:
                found.append((kind, found_text))
            if group == 0:
                return f"[{kind}]"
            a, b = m.start(group) - m.start(0), m.end(group) - m.start(0)
            whole = m.group(0)
            return whole[:a] + f"[{kind}]" + whole[b:]

        return pattern.sub(repl, value)

    if "PRIVATE KEY" in text:
        text = sub("key", _PRIVATE_KEY, text)
    if "://" in text:
        text = sub("key", _URL_USERINFO, text, lambda s: ":" in s)
        text = _URL_IN_TEXT.sub(lambda m: _redact_query(m.group(0), tally, found), text)
    if "=" in text or ":" in text:
        text = sub("key", _ASSIGNED, text, _assigned_value, "value")
    if _LONG_RUN.search(text):
        for pattern in _KEY_PATTERNS:
            text = sub("key", pattern, text)
    if "@" in text:
        text = sub("email", _EMAIL, text)
    if _LONG_RUN.search(text):
        text = sub("key", _BASE64_40, text, _base64_key)
        text = sub("key", _KEY_GENERIC, text, _generic_key)
    if len(_NON_DIGIT.sub("", text)) >= 8:
        text = sub("iban", _IBAN, text, iban_ok)
        text = sub("card", _CARD, text, _card_ok)
        text = sub("phone", _PHONE, text, _phone_ok)
    return text


def _assigned_value(value: str) -> bool:
    v = value.strip("\"'")
    if (v.startswith("[") and v.endswith("]")) or not any(c.isalnum() for c in v):
        return False  # already redacted, or a mask such as ********
    return any(c.isdigit() for c in v) or not v.isalpha() or (v != v.lower()
                                                              and v != v.capitalize())


def _redact_query(url: str, tally: dict[str, int],
                  found: list[tuple[str, str]] | None) -> str:
    head, sep, tail = url.partition("://")

    def repl(m: re.Match[str]) -> str:
        if not m.group("value") or not is_secret_param(m.group("name")) \
                or m.group("value") == "[key]":
            return m.group(0)
        tally["key"] = tally.get("key", 0) + 1
        if found is not None:
            found.append(("key", m.group("value")))
        return f"{m.group('lead')}{m.group('name')}=[key]"

    return head + sep + _QUERY_PAIR.sub(repl, tail)
