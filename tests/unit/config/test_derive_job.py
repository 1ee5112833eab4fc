"""A sweep job's config made from another job's (`compose.derive_job_config`, issue 21) is the
config Hydra composes for it: the whole tree, the Hydra node included, as YAML and as objects;
and anything Hydra would compose differently is left to Hydra."""

from __future__ import annotations

from typing import Any

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.types import RunMode
from omegaconf import OmegaConf

from sweep.config.compose import derive_job_config

HYDRA = ["hydra.sweep.dir=/tmp/derive-test", "hydra.job.chdir=false"]


def _master(loader: Any, overrides: list[str]) -> Any:
    return loader.load_configuration("config", [*HYDRA, *overrides], RunMode.MULTIRUN)


# Hydra's own composition of a sweep job. `compose_jobs_once` replaces the method in a process
# that ran the sweep's entry point; what it falls back to for a job it has not checked is this.
_ORIGINAL = ConfigLoaderImpl.load_sweep_config


def _same(a: Any, b: Any) -> None:
    assert OmegaConf.to_yaml(a) == OmegaConf.to_yaml(b)  # unresolved, the Hydra node included
    assert OmegaConf.is_struct(a) == OmegaConf.is_struct(b)
    assert OmegaConf.is_readonly(a.hydra) == OmegaConf.is_readonly(b.hydra)
    plain = [k for k in a if k != "hydra"]  # resolved (hydra.job.num is set at launch)
    assert OmegaConf.to_container(OmegaConf.masked_copy(a, plain), resolve=True) == \
        OmegaConf.to_container(OmegaConf.masked_copy(b, plain), resolve=True)
    assert OmegaConf.to_object(OmegaConf.masked_copy(a, plain)) == \
        OmegaConf.to_object(OmegaConf.masked_copy(b, plain))


BENCH = [[f"chunk.size={s}", f"chunk.boundary={b}", f"chunk.header={h}", "retrieval=hybrid",
          "corpus.path=/data/corpus", "eval.latency_sample=20"]
         for s in (128, 512) for b in ("recursive", "heading") for h in ("none", "path")]


@pytest.mark.parametrize("jobs", [
    BENCH,
    # floats, booleans, an interpolation, a quoted string
    [["retrieval=hybrid", "retrieval.rrf_k=60", "rerank.pool=50", "tracking.enabled=true"],
     ["retrieval=hybrid", "retrieval.rrf_k=10", "rerank.pool=20", "tracking.enabled=false"]],
    [["chunk.size=256", "corpus.name=demo"],
     ["chunk.size=${eval.prompt_k}", "corpus.name='a b=c'"]],
], ids=["bench", "types", "interpolation"])
def test_derived_jobs_are_what_hydra_composes(loader: Any, jobs: list[list[str]]) -> None:
    master = _master(loader, [])
    ref = _ORIGINAL(loader, master, jobs[0])
    for job in jobs[1:]:
        derived = derive_job_config(ref, jobs[0], job, master)
        assert derived is not None, job
        _same(derived, _ORIGINAL(loader, master, job))
        assert OmegaConf.to_container(derived.hydra.overrides.task) == job
    # the reference itself is left as it was
    _same(ref, _ORIGINAL(loader, master, jobs[0]))


@pytest.mark.parametrize(("ref", "job"), [
    (["retrieval=dense"], ["retrieval=bm25"]),  # a group choice
    (["embedding=minilm"], ["embedding=minilm_static"]),
    (["chunk.size=128"], ["+chunk.extra=1"]),  # an addition
    (["chunk.size=128"], ["~chunk.size"]),
    (["chunk.size=128", "eval.k=1"], ["chunk.size=256"]),  # not the same list
    (["chunk.size=128", "chunk.size=64"], ["chunk.size=256", "chunk.size=64"]),  # repeated key
    (["chunk.size=128"], ["chunk.size=[1,2]"]),  # not a scalar
    (["hydra.job.name=a"], ["hydra.job.name=b"]),
    (["chunk.size=128"], ["chunk.size=not-a-number"]),  # Hydra says what is wrong
])
def test_what_is_left_to_hydra(loader: Any, ref: list[str], job: list[str]) -> None:
    master = _master(loader, [])
    try:
        ref_cfg = _ORIGINAL(loader, master, ref)
    except Exception:  # the reference itself does not compose: nothing to derive from
        return
    assert derive_job_config(ref_cfg, ref, job, master) is None


def test_each_override_is_parsed_once_and_read_as_hydra_parses_it(loader: Any) -> None:
    """`derive_job_config` keeps what Hydra's parser made of each override text (the
    reference's and the task's are the same for every job): the same objects, equal to a
    fresh parse, and a second derivation from them is the same config."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from sweep.config import compose as module

    lines = ["chunk.size=128", "retrieval=hybrid", "corpus.name='a b=c'", "+x.y=[1,2]",
             "~chunk.overlap"]
    first = module._parsed(lines)
    assert [id(o) for o in module._parsed(lines)] == [id(o) for o in first]
    assert first == OverridesParser.create().parse_overrides(lines)
    with pytest.raises(Exception, match="no viable alternative"):
        module._parsed(["chunk.size=[1"])  # a bad text is not kept; it fails again
    assert "chunk.size=[1" not in module._PARSED
    master = _master(loader, [])
    ref = _ORIGINAL(loader, master, BENCH[0])
    for _ in range(2):
        _same(derive_job_config(ref, BENCH[0], BENCH[3], master),
              _ORIGINAL(loader, master, BENCH[3]))
