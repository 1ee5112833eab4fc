"""The axes: each configuration key whose value picks an entry of a stage's registry, and what
the rest of `sweep.config` (and the gate) reads off them instead of restating it.

Derived here, never written beside a registry:

- the schema's allowed values (`sweep.config.schema` builds each axis's enum from `AXES`);
- which settings enter ``config_hash`` for which choice (`gated_keys`: an entry's ``params``),
  and the value at which a stage is off (`off_values`), for `sweep.config.identity`;
- which choices answer from outside the machine (`remote_choices`: the gate's memo never
  reuses them; `sweep.config.checks` checks their endpoint settings) and which settings name a
  local model the memo digests (`model_settings`).

Every value is looked up when asked, so an entry registered after import (a plugin, the
toy-entry test) counts like a shipped one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sweep.chunking.chunkers import BOUNDARY, HEADER
from sweep.chunking.tokenizers import TOKENIZER
from sweep.common.registry import Entry, Registry, version
from sweep.data.parsers.registry import PARSERS
from sweep.embedding.models import FAMILY
from sweep.generation.run import GENERATION, JUDGE
from sweep.retrieval.index import INDEX
from sweep.retrieval.rerank import RERANK
from sweep.retrieval.search import METHOD
from sweep.retrieval.transform import QUERY_TRANSFORM
from sweep.retrieval.units import UNIT

# Dotted selecting key -> its registry, in the order of the schema's sections.
AXES: Mapping[str, Registry[Any]] = {r.axis: r for r in (
    *PARSERS.values(), BOUNDARY, HEADER, TOKENIZER, FAMILY, METHOD, UNIT, QUERY_TRANSFORM,
    RERANK, INDEX, GENERATION, JUDGE)}

# Sections a selector switches on or off as a whole: at its registry's off value none of the
# section's settings can change a number (`sweep.config.identity.active_sections`).
SWITCHED: Mapping[str, str] = {"rerank": "method", "index": "kind", "generation": "method",
                               "judge": "method"}


def split(axis: str) -> tuple[str, str]:
    section, _, key = axis.partition(".")
    return section, key


def off_values() -> dict[str, str]:
    """Section -> the value of its selector at which the stage is off."""
    out = {}
    for section, key in SWITCHED.items():
        off = AXES[f"{section}.{key}"].off
        assert off is not None, f"{section}.{key} switches its section but has no off value"
        out[section] = off
    return out


_gates: tuple[int, dict[str, dict[str, tuple[str, tuple[str, ...]]]]] | None = None


def gated_keys() -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """``{section: {key: (selecting key, values)}}``: the settings that count only when their
    section's selector picks one of ``values`` (the entries whose ``params`` hold the key),
    and the selectors that count only off their axis's off value (`retrieval.unit`: a run at
    `chunk` keeps the hash it had before the axis)."""
    global _gates
    if _gates is not None and _gates[0] == version():
        return _gates[1]
    out: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
    for axis, registry in AXES.items():
        section, key = split(axis)
        gates = out.setdefault(section, {})
        if registry.off is not None and SWITCHED.get(section) != key:
            gates[key] = (key, tuple(n for n in registry if n != registry.off))
        for param in registry.params():
            gates[param] = (key, registry.reading(param))
    out = {s: g for s, g in out.items() if g}
    _gates = (version(), out)
    return out


class _Live(Mapping[str, Mapping[str, tuple[str, tuple[str, ...]]]]):
    """`gated_keys` as a mapping that is read afresh on every access."""

    def __getitem__(self, section: str) -> Mapping[str, tuple[str, tuple[str, ...]]]:
        return gated_keys()[section]

    def __iter__(self) -> Iterator[str]:
        return iter(gated_keys())

    def __len__(self) -> int:
        return len(gated_keys())


GATED = _Live()


def chosen(plain: Mapping[str, Any], axis: str) -> Entry[Any] | None:
    """The entry the resolved configuration ``plain`` selects on ``axis`` (None when its value
    is missing or not registered: the schema refuses that before any run)."""
    section, key = split(axis)
    value = (plain.get(section) or {}).get(key)
    registry = AXES[axis]
    return registry.get(str(value)) if value is not None else None


def remote_choices(plain: Mapping[str, Any], sections: tuple[str, ...]) -> list[str]:
    """``axis=value`` of each choice of ``plain`` whose answers come from outside the machine,
    among the axes of the result-defining ``sections`` that are on."""
    out = []
    for axis in AXES:
        section, _ = split(axis)
        entry = chosen(plain, axis)
        if section in sections and entry is not None and entry.traits.remote:
            out.append(f"{axis}={entry.name}")
    return out


def model_settings(plain: Mapping[str, Any], sections: tuple[str, ...]
                   ) -> list[tuple[str, str]]:
    """``(dotted key, value)`` of each non-empty setting naming a local model or tokenizer
    folder that a chosen entry loads (its ``model_keys``), in the axes' order."""
    out = []
    for axis in AXES:
        section, _ = split(axis)
        entry = chosen(plain, axis)
        if section not in sections or entry is None:
            continue
        for dotted in entry.model_keys:
            value: Any = plain.get(section) or {}
            for part in dotted.split("."):
                value = (value or {}).get(part) if isinstance(value, Mapping) else None
            if value:
                out.append((f"{section}.{dotted}", str(value)))
    return out
