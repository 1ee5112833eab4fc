"""The seal on what a cache holds and a later run trusts (the gate's memo, exported models).

A seal is an HMAC-SHA256 of a document's content, keyed by ``$CHUNK_SWEEP_MEMO_SECRET`` when
that is set (a CI secret) and by nothing otherwise (a self-check). The document records which
(``sealed_with``), so that a seal made under the secret is not checked without it, nor the
reverse. The self-check catches an edit by hand or by a script that does not know the seal
(sha256 sums in a manifest updated to match a swapped file); it does not stop someone who reads
this module, who can recompute it. Only the secret does: a job without it (a pull request
from a fork) cannot write a document that a job with it accepts.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

SECRET_ENV = "CHUNK_SWEEP_MEMO_SECRET"  # a secret-looking name: never part of a cache key


def sealed_with() -> str:
    return "secret" if os.environ.get(SECRET_ENV) else "self-check"


def seal(doc: Mapping[str, Any], default: Callable[[Any], Any] | None = None) -> str:
    """The HMAC of everything in ``doc`` but its ``seal``, under `SECRET_ENV` (empty when
    unset); ``default`` as for `json.dumps` (values JSON does not know)."""
    body = {k: v for k, v in doc.items() if k != "seal"}
    text = json.dumps(body, sort_keys=True, default=default, separators=(",", ":"))
    return hmac.new(os.environ.get(SECRET_ENV, "").encode(), text.encode(),
                    hashlib.sha256).hexdigest()


def seal_problem(doc: Mapping[str, Any], default: Callable[[Any], Any] | None = None
                 ) -> str | None:
    """None when ``doc`` carries a seal that this process, with its secret or without, would
    have written; else what is wrong."""
    if doc.get("sealed_with") != sealed_with():
        return (f"sealed with {doc.get('sealed_with') or 'nothing'!s}, and this check has "
                f"{'$' + SECRET_ENV if sealed_with() == 'secret' else 'no ' + SECRET_ENV}")
    given = doc.get("seal")
    if not isinstance(given, str) or not hmac.compare_digest(given, seal(doc, default)):
        return ("its content does not match its seal (edited, or sealed under another "
                f"${SECRET_ENV})")
    return None
