"""One name for a configuration, wherever one is shown or written: the MLflow run of a job,
the winner's experiment file (`sweep export`), the files of `sweep rerun`.

``heading-256-ov0-path-minilm`` names the chunking and the model; a backend other than torch
fp32, a retrieval method other than dense, a reranker and an approximate index add a part
each; then every other setting that was swept (or set on the command line) and applies to the
configuration, as ``<key>-<value>`` (``...-hnsw-ef_search-64``): two configurations of one
sweep never share a name because they differ in a setting the name leaves out.

The name is a label, never an identity: resuming a sweep finds a run by its ``config_hash``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sweep.common.mapping import flatten
from sweep.config.identity import RESULT_SECTIONS, inapplicable_keys, unhashed_flat_keys

# The settings the name's fixed parts show (a swept one of them adds no part of its own).
NAMED_KEYS = ("chunk.boundary", "chunk.size", "chunk.overlap", "chunk.header",
              "embedding.name", "embedding.backend", "embedding.precision", "retrieval.method",
              "rerank.method", "index.kind")


def config_name(config: Mapping[str, Any], swept: Iterable[str] = ()) -> str:
    """The name of the configuration ``config`` (a job's resolved config, by section), naming
    also the settings ``swept`` (dotted keys) that are not among `NAMED_KEYS`, that change
    results (they enter ``config_hash``) and that apply to it."""
    c = config.get("chunk", {})
    e = config.get("embedding", {})
    model = re.split(r"[/\\]", str(e.get("name", "model")).rstrip("/\\"))[-1]
    parts = [str(c.get("boundary")), str(c.get("size")), f"ov{c.get('overlap')}",
             str(c.get("header")), model.replace("_", "-")]
    pair = (str(e.get("backend", "torch")), str(e.get("precision", "fp32")))
    if pair != ("torch", "fp32"):  # two precisions of one configuration: two names
        parts.extend(pair)
    method = config.get("retrieval", {}).get("method", "dense")
    if method != "dense":
        parts.append(str(method))
    if config.get("rerank", {}).get("method", "none") != "none":
        parts.append("rerank")
    kind = (config.get("index") or {}).get("kind", "exact")
    if kind != "exact":
        parts.append(str(kind).replace("_", "-"))
    parts += _swept_parts(config, swept)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(parts)).strip("-").lower()


def _swept_parts(config: Mapping[str, Any], swept: Iterable[str]) -> list[str]:
    keys = [k for k in dict.fromkeys(swept) if k not in NAMED_KEYS
            and k.split(".", 1)[0] in RESULT_SECTIONS and k not in unhashed_flat_keys()]
    if not keys:
        return []
    flat = flatten({s: dict(v) for s, v in config.items() if isinstance(v, Mapping)})
    unused = inapplicable_keys(flat)
    return [f"{k.rsplit('.', 1)[-1]}-{_show(flat[k])}" for k in keys
            if k in flat and k not in unused]


def _show(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "_".join(str(v) for v in value)
    return str(value)


def command_line_keys(overrides: Sequence[str]) -> list[str]:
    """The dotted keys a job's command-line overrides set (``chunk.size=256`` ->
    ``chunk.size``; a group choice such as ``retrieval=bm25`` sets no single key)."""
    out = []
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+~")
        if "=" in o and "." in key and "/" not in key and not key.startswith("hydra."):
            out.append(key)
    return out


def group_choices(choices: Any) -> dict[str, str]:
    """Hydra's runtime choices without Hydra's own groups (launcher, sweeper, logging)."""
    return {str(k): str(v) for k, v in dict(choices or {}).items()
            if v is not None and not str(k).startswith("hydra")}
