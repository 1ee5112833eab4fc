"""`sweep.cli.config_copies`: with OmegaConf's ``Metadata`` copied directly, a deep copy of a
sweep job's config (Hydra node included) is node for node the copy `copy.deepcopy` made
before: the same classes, values, metadata and parents, and nothing shared with the original
that could be changed through the copy."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.base import ContainerMetadata, Metadata

from sweep.cli.config_copies import copy_metadata, faster_metadata_copies
from sweep.config.schema import conf_dir, register


@pytest.fixture
def restored() -> Iterator[None]:
    before = Metadata.__dict__.get("__deepcopy__")
    yield
    if before is None:
        if "__deepcopy__" in Metadata.__dict__:
            del Metadata.__deepcopy__  # type: ignore[attr-defined]
    else:
        Metadata.__deepcopy__ = before  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def job_cfg() -> Any:
    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3",
                               job_name="sweep"):
        loader = GlobalHydra.instance().config_loader()
        job = ["chunk.size=128", "chunk.header=path", "retrieval=hybrid",
               "chunk.overlap=${eval.prompt_k}"]
        master = loader.load_configuration("config", ["hydra.sweep.dir=/tmp/x", *job],
                                           RunMode.MULTIRUN)
        return loader.load_sweep_config(master, job)


def _nodes(node: Any, parent: Any = None) -> Iterator[tuple[Any, Any]]:
    """Every node with the container holding it, in order."""
    yield node, parent
    if isinstance(node, DictConfig) and not node._is_none() and not node._is_missing() \
            and not node._is_interpolation():
        for key in node.__dict__["_content"]:
            yield from _nodes(node._get_node(key), node)
    elif isinstance(node, ListConfig) and not node._is_none() and not node._is_missing() \
            and not node._is_interpolation():
        for i in range(len(node)):
            yield from _nodes(node._get_node(i), node)


def _same_copy(original: Any, ours: Any, theirs: Any) -> None:
    a, b, o = list(_nodes(ours)), list(_nodes(theirs)), list(_nodes(original))
    assert len(a) == len(b) == len(o) > 100
    for (x, xp), (y, _), (z, _) in zip(a, b, o, strict=True):
        assert type(x) is type(y)
        assert x._metadata.__dict__ == y._metadata.__dict__
        assert type(x._metadata) is type(y._metadata)
        assert x._metadata is not z._metadata and x._metadata.flags is not z._metadata.flags
        assert x._metadata.resolver_cache is not z._metadata.resolver_cache
        assert x.__dict__.get("_flags_cache") == y.__dict__.get("_flags_cache")
        if "_val" in x.__dict__:
            assert x.__dict__["_val"] == y.__dict__["_val"]
        # each node's parent is the copy's own container (the root keeps the original's)
        assert (x._get_parent() is xp) if xp is not None else \
            (x._get_parent() is y._get_parent())
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(theirs) == OmegaConf.to_yaml(original)


def test_a_job_config_is_copied_as_before(job_cfg: Any, restored: None) -> None:
    theirs = copy.deepcopy(job_cfg)
    theirs_hydra = OmegaConf.masked_copy(job_cfg, "hydra")
    assert faster_metadata_copies()
    assert faster_metadata_copies()  # idempotent
    ours = copy.deepcopy(job_cfg)
    _same_copy(job_cfg, ours, theirs)
    # HydraConfig's copy of the Hydra node (its parent the job's config, as Hydra sets it)
    ours_hydra = OmegaConf.masked_copy(job_cfg, "hydra")
    for masked in (ours_hydra, theirs_hydra):
        masked.hydra._set_parent(job_cfg)
    _same_copy(job_cfg.hydra, ours_hydra.hydra, theirs_hydra.hydra)
    plain = [k for k in job_cfg if k != "hydra"]
    assert OmegaConf.to_object(OmegaConf.masked_copy(ours, plain)) == \
        OmegaConf.to_object(OmegaConf.masked_copy(job_cfg, plain))
    # a flag set on the copy leaves the original as it was
    OmegaConf.set_readonly(ours.chunk, True)
    assert not OmegaConf.is_readonly(job_cfg.chunk) and OmegaConf.is_readonly(ours.chunk)


def test_one_metadata_held_twice_is_copied_once(restored: None) -> None:
    meta = ContainerMetadata(ref_type=Any, object_type=dict, optional=True, key="k",
                             flags={"struct": True}, key_type=str, element_type=int)
    meta.resolver_cache["r"][("a",)] = ["x"]
    theirs = copy.deepcopy([meta, meta])
    faster_metadata_copies()
    ours = copy.deepcopy([meta, meta])
    assert ours[0] is ours[1] and ours[0] is not meta and type(ours[0]) is ContainerMetadata
    assert ours[0].__dict__ == theirs[0].__dict__ == meta.__dict__
    assert ours[0].resolver_cache["r"][("a",)] is not meta.resolver_cache["r"][("a",)]
    assert ours[0].resolver_cache.default_factory is dict  # still a defaultdict(dict)
    assert copy_metadata(meta, {}).__dict__ == meta.__dict__


def test_flags_and_caches_held_twice_stay_shared_and_apart(restored: None) -> None:
    """What `copy.deepcopy` keeps (one dict held by two metadata is one dict in the copy;
    nothing of the copy is the original's), for the forms copied directly and the rest."""
    flags: dict[str, bool | None] = {"readonly": True, "struct": None}
    odd_flags = {"readonly": 1}  # not a True/False/None flag: deep-copied as before
    first = Metadata(ref_type=int, object_type=int, optional=False, key=0, flags=flags)
    second = Metadata(ref_type=int, object_type=int, optional=False, key=1, flags=flags)
    third = Metadata(ref_type=int, object_type=int, optional=False, key=2, flags=odd_flags)
    second.resolver_cache = first.resolver_cache  # an empty defaultdict(dict), shared
    theirs = copy.deepcopy([first, second, third, flags])
    faster_metadata_copies()
    ours = copy.deepcopy([first, second, third, flags])
    for copies in (ours, theirs):
        assert copies[0].flags is copies[1].flags is copies[3] and copies[3] is not flags
        assert copies[0].resolver_cache is copies[1].resolver_cache
        assert copies[0].resolver_cache is not first.resolver_cache
        assert copies[2].flags == odd_flags and copies[2].flags is not odd_flags
    assert [m.__dict__ for m in ours[:3]] == [m.__dict__ for m in theirs[:3]]
    ours[0].flags["struct"] = True
    assert flags["struct"] is None


def test_an_omegaconf_that_copies_its_own_is_left_alone(restored: None) -> None:
    def own(self: Any, memo: dict[int, Any]) -> Any:
        return self

    Metadata.__deepcopy__ = own  # type: ignore[attr-defined]
    assert not faster_metadata_copies()
    assert Metadata.__deepcopy__ is own  # type: ignore[attr-defined]
