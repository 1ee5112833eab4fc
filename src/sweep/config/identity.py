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

from sweep.config.axes import GATED, SWITCHED, gated_keys, off_values

# Sections whose settings can change a retrieval metric. Exported into winners and compared by
# the baseline gate in this order.
RESULT_SECTIONS: tuple[str, ...] = ("chunk", "embedding", "retrieval", "rerank", "index",
                                     "eval", "assembly")

# Sections that change results only when the generation half runs.
GENERATION_SECTIONS: tuple[str, ...] = ("generation", "judge")

# Inputs: they enter the hash through the content fingerprints of the files they name.
INPUT_SECTIONS: tuple[str, ...] = ("corpus", "golden")

# How each key of an input section reaches the hash. "fingerprint": it changes what is loaded,
# and the fingerprint of what is loaded is hashed (the parser keys change the text of every PDF,
# HTML and Word file, and `corpus_fingerprint` also hashes each parsed document's parser and
# structure; a markdown-only corpus hashes the same whatever they say). "label": a name only.
INPUT_KEYS: Mapping[str, Mapping[str, str]] = {
    "corpus": {"name": "label", "path": "fingerprint", "on_error": "fingerprint",
               "extensions": "fingerprint", "pdf_parser": "fingerprint",
               "html_parser": "fingerprint", "docx_parser": "fingerprint",
               "max_file_mb": "fingerprint", "max_pages": "fingerprint",
               "max_inflated_mb": "fingerprint", "max_html_chars": "fingerprint",
               "max_html_depth": "fingerprint"},
    "golden": {"name": "label", "path": "fingerprint"},
}

# How and where a run is done and recorded; never part of a result's identity. `questions`
# builds the labelling queue (sweep questions import|generate), before any golden item exists.
OPERATIONAL_SECTIONS: tuple[str, ...] = ("tracking", "cache", "sweep", "questions")

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
    # rerank.method=cohere: where the endpoint is and how it is called and priced, as above.
    "rerank": ("batch_size", "base_url", "api_key_env", "timeout_s", "max_retries",
               "concurrency", "price_per_mtok", "price_per_request"),
    "index": ("host", "port"),  # where the Chroma server runs, not what it holds
    "eval": ("latency_sample", "by_content"),
    # cache_answers: where an answer comes from (the endpoint or its cache), not what it is.
    "generation": ("timeout_s", "max_retries", "concurrency", "price_input_per_mtok",
                   "price_output_per_mtok", "api_key_env", "cache_answers"),
    "judge": ("timeout_s", "max_retries", "concurrency", "price_input_per_mtok",
              "price_output_per_mtok", "api_key_env"),
}

# Keys that count only when a sibling key selects the strategy they belong to:
# {section: {key: (selecting key, values)}}. A setting of a strategy that is not chosen cannot
# change a number, and leaving it out keeps the hashes of runs recorded before it existed.
# Read off the axis registries (each entry lists the settings only it reads: `config.axes`),
# so `index=exact,hnsw index.ef_search=8,64` is three configurations, not four, and
# `index=hnsw index.nprobe=4,16` is one. embedding.backend/precision need no gate:
# check_config refuses them off torch fp32 for any family but sentence_transformers, and at
# torch fp32 they stay out of the hash (ADDED_KEYS).
GATED_KEYS: Mapping[str, Mapping[str, tuple[str, tuple[str, ...]]]] = GATED

# Keys added after results were recorded, with the value every earlier run had: at that
# value they stay out of the hash, so those runs keep theirs (resume, the baseline gate); any
# other value enters it. torch fp32 is how every model ran before the backend axis; a text
# longer than the model's window was cut before embedding.long_text.
ADDED_KEYS: Mapping[str, Mapping[str, str]] = {
    "embedding": {"backend": "torch", "precision": "fp32", "long_text": "truncate"},
    # the prompt got the top eval.prompt_k as ranked before the context assembly axis
    "assembly": {"order": "rank", "budget_tokens": "0", "dedup": "none"},
}

# Sections added after results were recorded: with every key at its ADDED_KEYS value they
# leave the payload altogether (an empty entry would still move every hash).
ADDED_SECTIONS: tuple[str, ...] = ("assembly",)

# The key that switches a section on or off (`active_sections`): it applies even when off,
# unless the section needs another that is off (the judge grades generated answers).
SELECTORS: Mapping[str, str] = SWITCHED
NEEDS: Mapping[str, str] = {"judge": "generation"}

# Keys inside a nested sub-config that change no result (how an endpoint is called and priced,
# and the dry run, which stops before any number exists).
UNHASHED_NESTED_KEYS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "chunk": {"context": ("timeout_s", "max_retries", "concurrency", "price_input_per_mtok",
                          "price_output_per_mtok", "api_key_env", "dry_run")},
    "retrieval": {"transform": ("timeout_s", "max_retries", "concurrency",
                                "price_input_per_mtok", "price_output_per_mtok",
                                "api_key_env")},
}

ALL_SECTIONS: tuple[str, ...] = (*RESULT_SECTIONS, *GENERATION_SECTIONS, *INPUT_SECTIONS,
                                 *OPERATIONAL_SECTIONS)


# What each selector says when its stage is off (its registry's off value); exact search is
# what every run did before the index axis.
_OFF_VALUES: Mapping[str, str] = off_values()


def _selected(plain: Mapping[str, Any], section: str) -> str:
    return str((plain.get(section) or {}).get(SELECTORS[section], _OFF_VALUES[section]))


def _off(plain: Mapping[str, Any], section: str) -> bool:
    return section in SELECTORS and _selected(plain, section) == _OFF_VALUES[section]


def active_sections(plain: Mapping[str, Any]) -> tuple[str, ...]:
    """The result-defining sections that are switched on in this configuration.

    A stage that is off cannot change a number, so its settings stay out: the rerank section
    counts only with a reranker, the index only when it is not exact search (so an exact
    configuration keeps the hash it had before the index axis), generation only when it
    runs, the judge only when it runs too.
    """
    out = [s for s in RESULT_SECTIONS if not _off(plain, s)]
    if not _off(plain, "generation"):
        out.append("generation")
        if not _off(plain, "judge"):
            out.append("judge")
    return tuple(out)


def identity_payload(plain: Mapping[str, Any], corpus_fp: str, golden_fp: str
                     ) -> dict[str, Any]:
    """The settings a configuration's results depend on, as plain data."""
    payload: dict[str, Any] = {}
    for section in active_sections(plain):
        skip = UNHASHED_KEYS.get(section, ())
        values = plain.get(section) or {}
        nested = UNHASHED_NESTED_KEYS.get(section, {})
        payload[section] = {
            k: ({n: x for n, x in v.items() if n not in nested[k]} if k in nested else v)
            for k, v in values.items() if k not in skip and gate_open(section, k, values)
            and not _as_before(section, k, v)}
        if section in ADDED_SECTIONS and not payload[section]:
            del payload[section]
    payload["corpus"] = corpus_fp
    payload["golden"] = golden_fp
    return payload


def _as_before(section: str, key: str, value: Any) -> bool:
    """Whether ``section.key`` holds the value every run had before the key existed."""
    before = ADDED_KEYS.get(section, {}).get(key)
    return before is not None and str(value) == before


def gate_open(section: str, key: str, values: Mapping[str, Any]) -> bool:
    """Whether ``section.key`` counts in this configuration (`GATED_KEYS`)."""
    gate = gated_keys().get(section, {}).get(key)
    return gate is None or str(values.get(gate[0])) in gate[1]


def config_hash(plain: Mapping[str, Any], corpus_fp: str, golden_fp: str) -> str:
    """Identity of a configuration's results: same hash, same numbers."""
    payload = identity_payload(plain, corpus_fp, golden_fp)
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def unhashed_flat_keys() -> tuple[str, ...]:
    """``section.key`` names of the keys that change no result (the gate ignores them)."""
    return (*(f"{s}.{k}" for s, keys in UNHASHED_KEYS.items() for k in keys),
            *(f"{s}.{k}.{n}" for s, subs in UNHASHED_NESTED_KEYS.items()
              for k, names in subs.items() for n in names))


def inapplicable_keys(flat: Mapping[str, Any]) -> set[str]:
    """The dotted keys of a flattened configuration (``{"index.kind": "exact", ...}``, as in a
    report or MLflow's params) whose setting does not apply to it: a key of a stage that is off
    (``index.ef_search`` with ``index.kind=exact``) or of a strategy not chosen (`GATED_KEYS`).

    Configurations that differ only in such keys have one `config_hash`: they are one
    configuration, and a comparison table shows the key as n/a instead of one job's value."""
    plain: dict[str, dict[str, Any]] = {}
    for name, value in flat.items():
        section, _, key = name.partition(".")
        if key and "." not in key:
            plain.setdefault(section, {})[key] = value
    active = set(active_sections(plain))
    out = set()
    for name in flat:
        section, _, key = name.partition(".")
        top = key.partition(".")[0]
        if not top or section not in (*RESULT_SECTIONS, *GENERATION_SECTIONS):
            continue
        needed = NEEDS.get(section)
        selector = top == SELECTORS.get(section) and (needed is None or needed in active)
        off = section not in active and not selector
        if off or not gate_open(section, top, plain.get(section, {})):
            out.add(name)
    return out


def describe_key(section: str, key: str, sub: str | None = None) -> str:
    """Whether ``section.key[.sub]`` enters a configuration's identity (`config_hash`), in
    words, for the generated configuration reference: ``yes``, ``no`` or ``yes, when ...``,
    read off this module's tables (tests/unit/dev/test_reference.py checks each answer
    against `config_hash` itself)."""
    if section in OPERATIONAL_SECTIONS:
        return "no (how a run is done or recorded)"
    if section in INPUT_SECTIONS:
        how = INPUT_KEYS[section].get(key)
        return ("yes, through the fingerprint of what it loads" if how == "fingerprint"
                else "no (a name)")
    if key in UNHASHED_KEYS.get(section, ()):
        return "no"
    if sub is not None and sub in UNHASHED_NESTED_KEYS.get(section, {}).get(key, ()):
        return "no"
    conditions = []
    selector = SELECTORS.get(section)
    # the judge grades generated answers: its keys, its selector too, need generation on
    if section in NEEDS:
        conditions.append(f"{NEEDS[section]} runs")
    gate = gated_keys().get(section, {}).get(key)
    # a gate on the selector itself (index.kind is hnsw) already says the stage is on
    if selector is not None and key != selector and (gate is None or gate[0] != selector):
        conditions.append(f"{section}.{selector} is not {_OFF_VALUES[section]}")
    if gate is not None:
        conditions.append(f"{section}.{gate[0]} is {' or '.join(gate[1])}")
    return "yes, when " + " and ".join(conditions) if conditions else "yes"
