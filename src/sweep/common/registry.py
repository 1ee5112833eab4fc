"""One registry per axis: the choices of one configuration key, each a self-describing entry.

An axis (``chunk.boundary``, ``index.kind``, ``rerank.method``, ...) is a `Registry` kept next to
the stage code that implements it; each of its values is one frozen `Entry` carrying the
implementation, the settings only that choice reads (with their defaults) and its `Traits`.
Everything that used to restate an axis by hand is read off the registries instead
(`sweep.config.axes`): the schema's allowed values, which settings enter ``config_hash`` for
which choice, which choices the gate's memo may reuse, the per-choice checks and the cost
estimate's facts, the reference tables of the documentation. So adding a boundary or an index
kind is one module and one entry (docs/development.md, "Add an axis value in one file").

This module sits at the bottom of the layers (`sweep.common`): it knows no stage.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from sweep.common.errors import SweepError

T = TypeVar("T")

# Bumped by every change to any registry, so that what is derived from them (the schema's
# enums, identity's tables) can tell whether it is stale without comparing them all.
_generation = itertools.count(1)
_version = 0


def version() -> int:
    """A number that changes whenever an entry is added to or removed from any registry."""
    return _version


def _bump() -> None:
    global _version
    _version = next(_generation)


@dataclass(frozen=True)
class Traits:
    """What the rest of the system needs to know about a choice without running it."""

    # Its answers come from outside the machine's files (an endpoint, a server): the gate's
    # memo never reuses a run with it, and its endpoint settings are checked.
    remote: bool = False
    # It needs an embedding model (a boundary that cuts by meaning, a retriever that searches
    # vectors, a reader that ranks sentences).
    needs_embedder: bool = False
    # Its chunks are trimmed pieces that tile the document (the chunker property tests).
    tiling: bool = False
    # Calls to it are billed: the cost estimate counts them.
    costs_money: bool = False
    # The same inputs give the same output, run after run.
    deterministic: bool = True

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One value of an axis.

    ``params``: the settings of the axis's config section that only this choice reads, with
    their defaults (a nested group is one key whose default is a mapping). They enter
    ``config_hash`` only when this choice is selected, so a setting of a strategy not chosen
    cannot split one configuration into two. Settings every choice reads are not listed.
    ``model_keys``: dotted settings (under the section) naming a local model or tokenizer this
    choice loads; the gate's memo digests the folder they name.
    """

    name: str
    impl: T | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    traits: Traits = Traits()
    model_keys: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))


class Registry(Mapping[str, Entry[T]], Generic[T]):
    """The entries of one axis, by name, in registration order (the order Hydra lists them).

    ``axis`` is the dotted configuration key that selects an entry (``index.kind``); ``off`` is
    the value at which the axis does nothing (``exact`` search, no reranker): a run at it is
    what every run was before the axis existed, so it keeps the ``config_hash`` it had.
    """

    def __init__(self, axis: str, entries: Iterable[Entry[T]] = (), *,
                 off: str | None = None) -> None:
        self.axis = axis
        self.off = off
        self._entries: dict[str, Entry[T]] = {}
        for entry in entries:
            self.register(entry)

    # --- changing it -------------------------------------------------------------------------

    def register(self, entry: Entry[T]) -> Entry[T]:
        """Add ``entry``; a name taken already is a programming error, said at import."""
        if not entry.name.isidentifier():
            # the schema's enum member is the name (Hydra lists and matches it)
            raise ValueError(f"{self.axis}: entry name {entry.name!r} is not an identifier")
        if entry.name in self._entries:
            raise ValueError(f"{self.axis}={entry.name} is registered twice")
        self._entries[entry.name] = entry
        _bump()
        return entry

    def unregister(self, name: str) -> Entry[T]:
        entry = self._entries.pop(name)
        _bump()
        return entry

    @contextmanager
    def added(self, *entries: Entry[T]) -> Iterator[Registry[T]]:
        """The registry with ``entries`` added for the duration of the block (a test's toy)."""
        for entry in entries:
            self.register(entry)
        try:
            yield self
        finally:
            for entry in entries:
                self._entries.pop(entry.name, None)
            _bump()

    # --- reading it --------------------------------------------------------------------------

    def __getitem__(self, name: str) -> Entry[T]:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def get_entry(self, name: str) -> Entry[T]:
        """The entry called ``name``, or a one-line `SweepError` naming the axis and its values."""
        entry = self._entries.get(str(name))
        if entry is None:
            raise SweepError(f"{self.axis}={name!r} is not one of {', '.join(self._entries)}")
        return entry

    def impl(self, name: str) -> T:
        """The implementation of ``name`` (`get_entry`'s error when it is not registered)."""
        entry = self.get_entry(name)
        if entry.impl is None:
            raise SweepError(f"{self.axis}={name} has no implementation here")
        return entry.impl

    def having(self, trait: str, value: bool = True) -> tuple[str, ...]:
        """The names whose `Traits` ``trait`` is ``value``, in order."""
        if trait not in Traits.names():
            raise ValueError(f"unknown trait {trait!r}; one of {', '.join(Traits.names())}")
        return tuple(n for n, e in self._entries.items() if getattr(e.traits, trait) == value)

    def has(self, name: str, trait: str) -> bool:
        """Whether the entry ``name`` has ``trait`` (False for a name not registered)."""
        entry = self._entries.get(str(name))
        return entry is not None and bool(getattr(entry.traits, trait))

    def reading(self, key: str) -> tuple[str, ...]:
        """The names of the entries that read the setting ``key`` (their ``params``)."""
        return tuple(n for n, e in self._entries.items() if key in e.params)

    def params(self) -> tuple[str, ...]:
        """Every per-choice setting of the axis, in the order the entries first name them."""
        return tuple(dict.fromkeys(k for e in self._entries.values() for k in e.params))

    def select(self, pick: Callable[[Entry[T]], bool]) -> tuple[str, ...]:
        return tuple(n for n, e in self._entries.items() if pick(e))

    def __repr__(self) -> str:
        return f"Registry({self.axis!r}, {list(self._entries)})"
