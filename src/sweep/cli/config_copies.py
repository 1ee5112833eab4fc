"""Deep copies of OmegaConf configs with less work, the same copies.

A warm sweep deep-copies each job's whole config about six times: the up-front check derives
it (`sweep.config.compose.derive_job_config`), and Hydra's ``run_job`` copies it for the task,
twice more for `HydraConfig` (``OmegaConf.masked_copy``) and once for the job's return: ~0.6 s
of the warm bench grid under a sampling profiler. Over a third of each copy is spent copying the nodes' ``Metadata`` (one
per node) through `copy.deepcopy`'s generic path (``__reduce_ex__``, a state dict copied and
applied). `faster_metadata_copies` gives OmegaConf's ``Metadata`` a ``__deepcopy__`` that makes
the same copy directly: a new object of the same class, registered in the memo first, whose
attributes are the originals' deep copies, the immutable ones (texts, numbers, classes) taken
as they are, exactly as `copy.deepcopy` takes them; the flags and an empty resolver cache
(every node has both) are copied directly too (`copy_metadata`).
"""

from __future__ import annotations

import copy
import dataclasses
from collections import defaultdict
from typing import Any

_MARK = "chunk_sweep"
# What `copy.deepcopy` returns as it is (its atomic types; any class too); anything else goes
# through it, but for the two containers every node's metadata holds, in their usual form.
_AS_IS = frozenset({type(None), bool, int, float, complex, str, bytes, type, range})


def copy_metadata(self: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy(self, memo)`` of a ``Metadata`` (a dataclass without ``__slots__`` or
    ``__setstate__``): what its generic path makes, without its detours. Its ``flags`` (a
    dict of texts to True, False or None) and an empty ``resolver_cache`` (a
    ``defaultdict(dict)``) are copied directly, each registered in the memo as `copy.deepcopy`
    registers it, so that one held by two nodes is still one in the copy; they stay alive
    while the memo does, through ``self``."""
    new = object.__new__(type(self))
    memo[id(self)] = new
    deep = copy.deepcopy
    state = {}
    for key, value in self.__dict__.items():
        kind = type(value)
        if kind in _AS_IS or isinstance(value, type):
            state[key] = value
        elif id(value) in memo:
            state[key] = memo[id(value)]
        elif kind is dict and all(type(k) is str for k in value) and all(
                v is True or v is False or v is None for v in value.values()):
            state[key] = memo[id(value)] = dict(value)
        elif kind is defaultdict and not value and value.default_factory is dict:
            state[key] = memo[id(value)] = defaultdict(dict)
        else:
            state[key] = deep(value, memo)
    new.__dict__.update(state)
    return new


def faster_metadata_copies() -> bool:
    """OmegaConf's ``Metadata`` (and ``ContainerMetadata``) deep-copied by `copy_metadata` in
    this process, unless OmegaConf already defines how to copy, pickle or restore one (a
    newer version): then nothing changes. Idempotent; True when installed."""
    from omegaconf.base import ContainerMetadata, Metadata

    current = Metadata.__dict__.get("__deepcopy__")
    if getattr(current, _MARK, False):
        return True
    for kind in (Metadata, ContainerMetadata):
        if not dataclasses.is_dataclass(kind) or "__slots__" in kind.__dict__ or any(
                name in kind.__dict__ for name in ("__deepcopy__", "__reduce__", "__reduce_ex__",
                                                   "__setstate__", "__getstate__", "__new__")):
            return False

    def __deepcopy__(self: Any, memo: dict[int, Any]) -> Any:
        return copy_metadata(self, memo)

    setattr(__deepcopy__, _MARK, True)
    Metadata.__deepcopy__ = __deepcopy__  # type: ignore[attr-defined]
    return True
