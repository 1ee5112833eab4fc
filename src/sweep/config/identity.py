"""What makes two results "the same configuration": the one classification of config sections.

Resume (skip a FINISHED run with the same `config_hash`), `sweep export` (the winner's
sections), the CI gate (which settings it compares) and the hash itself all read this module,
so a section added to the schema is classified once, here; a test fails while one is not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# Sections whose settings can change a retrieval metric. Exported into winners and compared by
# the baseline gate in this order.
RESULT_SECTIONS: tuple[str, ...] = ("chunk", "embedding", "retrieval", "rerank", "eval")

# Sections that change results only when the generation half runs.
GENERATION_SECTIONS: tuple[str, ...] = ("generation", "judge")

# Inputs: they enter the hash through the content fingerprints of the files they name.
INPUT_SECTIONS: tuple[str, ...] = ("corpus", "golden")

# How and where a run is done and recorded; never part of a result's identity.
OPERATIONAL_SECTIONS: tuple[str, ...] = ("tracking", "cache", "sweep")

# Keys inside hashed sections that cannot change a number of the result: timing samples,
# batch sizes (vectors are cached by model and text, whatever the batch), the diagnosis-only
# retriever, and how calls to an endpoint are made and priced.
UNHASHED_KEYS: Mapping[str, tuple[str, ...]] = {
    # A served model's vectors do not depend on where it is served from (base_url) or on how it
    # is called; its identity is the model name, dimensions, prefixes, input types and the
    # user's `fingerprint`. Local models: the device changes no vector beyond float noise.
    "embedding": ("batch_size", "device", "base_url", "api_key_env", "max_texts_per_request",
                  "max_tokens_per_request", "requests_per_minute", "tokens_per_minute",
                  "concurrency", "timeout_s", "max_retries", "price_per_mtok"),
    "retrieval": ("diagnose",),
    "rerank": ("batch_size", "base_url", "api_key_env", "timeout_s", "max_retries",
               "concurrency", "price_per_mtok", "price_per_request"),
    "eval": ("latency_sample",),
    "generation": ("timeout_s", "max_retries", "concurrency", "price_input_per_mtok",
                   "price_output_per_mtok", "api_key_env"),
    "judge": ("timeout_s", "max_retries", "concurrency", "price_input_per_mtok",
              "price_output_per_mtok", "api_key_env"),
}

# Hashed keys that only one value of a section's selector key reads: left out of the hash
# under any other value (so adding them changed no earlier configuration's hash).
# section -> (selector key, selector value, keys).
SCOPED_KEYS: Mapping[str, tuple[str, str, tuple[str, ...]]] = {
    "embedding": ("family", "openai", ("model", "dimensions", "query_input_type",
                                       "document_input_type", "fingerprint")),
}

ALL_SECTIONS: tuple[str, ...] = (*RESULT_SECTIONS, *GENERATION_SECTIONS, *INPUT_SECTIONS,
                                 *OPERATIONAL_SECTIONS)


def _method(plain: Mapping[str, Any], section: str) -> str:
    return str((plain.get(section) or {}).get("method", "none"))


def active_sections(plain: Mapping[str, Any]) -> tuple[str, ...]:
    """The result-defining sections that are switched on in this configuration.

    A stage that is off cannot change a number, so its settings stay out: the rerank section
    counts only with a reranker, generation only when it runs, the judge only when it runs too.
    """
    out = [s for s in RESULT_SECTIONS if s != "rerank" or _method(plain, "rerank") != "none"]
    if _method(plain, "generation") != "none":
        out.append("generation")
        if _method(plain, "judge") != "none":
            out.append("judge")
    return tuple(out)


def identity_payload(plain: Mapping[str, Any], corpus_fp: str, golden_fp: str
                     ) -> dict[str, Any]:
    """The settings a configuration's results depend on, as plain data."""
    payload: dict[str, Any] = {}
    for section in active_sections(plain):
        skip = UNHASHED_KEYS.get(section, ())
        values = plain.get(section) or {}
        if section in SCOPED_KEYS:
            selector, value, scoped = SCOPED_KEYS[section]
            if str(values.get(selector)) != value:
                skip = (*skip, *scoped)
        payload[section] = {k: v for k, v in (plain.get(section) or {}).items() if k not in skip}
    payload["corpus"] = corpus_fp
    payload["golden"] = golden_fp
    return payload


def config_hash(plain: Mapping[str, Any], corpus_fp: str, golden_fp: str) -> str:
    """Identity of a configuration's results: same hash, same numbers."""
    payload = identity_payload(plain, corpus_fp, golden_fp)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def unhashed_flat_keys() -> tuple[str, ...]:
    """``section.key`` names of the keys that change no result (the gate ignores them)."""
    return tuple(f"{s}.{k}" for s, keys in UNHASHED_KEYS.items() for k in keys)
