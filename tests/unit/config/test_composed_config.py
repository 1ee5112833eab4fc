"""`schema.composed_config` (the sweep's up-front check of every job) is `typed_config` of a
composed job: the same `Config`, by converting the sections as they are where it can."""

from __future__ import annotations

from typing import Any

import pytest
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from sweep.config import schema
from sweep.config.schema import Config, composed_config, typed_config


def _plain(loader: Any, job: list[str]) -> Any:
    master = loader.load_configuration("config", ["hydra.sweep.dir=/tmp/x", *job],
                                       RunMode.MULTIRUN)
    cfg = loader.load_sweep_config(master, job)
    return OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])


JOBS = [
    ["chunk.size=128", "chunk.boundary=heading", "chunk.header=path", "retrieval=hybrid",
     "eval.latency_sample=20"],
    ["experiment=chunking_grid"],
    ["embedding=minilm_static", "retrieval=bm25", "chunk.size=${eval.prompt_k}",
     "corpus.name='a b=c'", "tracking.enabled=false"],
]


@pytest.mark.parametrize("job", JOBS, ids=["bench", "experiment", "others"])
def test_the_same_config_as_merging_onto_the_schema(loader: Any, job: list[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _plain(loader, job)
    expected = typed_config(plain)
    assert isinstance(expected, Config)

    def not_merged(_: Any) -> Config:
        raise AssertionError("merged onto the schema")

    monkeypatch.setattr(schema, "typed_config", not_merged)  # the sections taken as they are
    got = composed_config(plain)
    assert got == expected and isinstance(got, Config)
    assert got.chunk is not expected.chunk  # its own objects


def test_anything_else_is_merged_onto_the_schema(loader: Any) -> None:
    plain = _plain(loader, JOBS[0])
    with open_dict(plain):
        plain.unknown = {"a": 1}  # a key the schema lacks: typed_config says what is wrong
    with pytest.raises(OmegaConfBaseException, match="unknown"):
        typed_config(plain)
    with pytest.raises(OmegaConfBaseException, match="unknown"):
        composed_config(plain)
    plain = _plain(loader, JOBS[0])
    loose = OmegaConf.create(OmegaConf.to_container(plain))  # untyped sections
    assert composed_config(loose) == typed_config(plain)


def test_a_missing_value_fails_as_before(loader: Any) -> None:
    plain = _plain(loader, JOBS[0])
    plain.corpus.path = "???"
    with pytest.raises(OmegaConfBaseException) as merged:
        typed_config(plain)
    with pytest.raises(OmegaConfBaseException) as ours:
        composed_config(plain)
    assert type(ours.value) is type(merged.value)
    assert "corpus.path" in str(ours.value) and "corpus.path" in str(merged.value)
