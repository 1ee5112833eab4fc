"""A multirun's composition is the one Hydra's ``get_mode`` made just before
(`sweep.cli.hydra_main._compose_multirun_once`): the same configuration Hydra composes, with
Hydra's check of the sweep overrides; anything else is composed by Hydra as before."""

from __future__ import annotations

from typing import Any

import pytest
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.hydra import Hydra
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.types import RunMode
from omegaconf import OmegaConf

from sweep.cli import hydra_main

BENCH = ["hydra.sweep.dir=/tmp/mode-test", "chunk.size=128,256,512",
         "chunk.boundary=recursive,heading", "retrieval=hybrid", "eval.latency_sample=20"]


@pytest.fixture
def hydra(loader: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Hydra with the entry point's get_mode, both patches undone after the test."""
    monkeypatch.setattr(Hydra, "get_mode", Hydra.get_mode)
    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration",
                        ConfigLoaderImpl.load_configuration)
    original = ConfigLoaderImpl.load_configuration
    hydra_main._check_mode_config()
    assert ConfigLoaderImpl.load_configuration is not original
    monkeypatch.setattr(hydra_main, "_MODE_CONFIG", [])
    h = GlobalHydra.instance().hydra
    assert h is not None and h.config_loader is loader
    return h


def _compose(h: Any, overrides: list[str]) -> Any:
    return h.compose_config("config", overrides, run_mode=RunMode.MULTIRUN,
                            with_log_configuration=False)


def test_the_multirun_takes_get_modes_composition(hydra: Any) -> None:
    hydra.get_mode("config", BENCH)  # hydra.mode is not set: None, the command line decides
    ((_, name, overrides, kept),) = hydra_main._MODE_CONFIG
    assert (name, overrides) == ("config", tuple(BENCH))
    cfg = _compose(hydra, BENCH)
    assert cfg is kept and hydra_main._MODE_CONFIG == []
    # what Hydra composes for it, the Hydra node (its overrides, runtime) included
    fresh = _compose(hydra, BENCH)
    assert fresh is not cfg
    assert OmegaConf.to_yaml(fresh) == OmegaConf.to_yaml(cfg)
    assert OmegaConf.is_struct(fresh) and OmegaConf.is_struct(cfg)
    assert OmegaConf.is_readonly(fresh.hydra) == OmegaConf.is_readonly(cfg.hydra) is False
    assert list(cfg.hydra.overrides.task) == BENCH[1:]


def test_the_mode_hydra_adds_after_get_mode_is_set_as_hydra_sets_it(hydra: Any) -> None:
    """No hydra.mode in the config: Hydra's ``_run_app`` adds ``hydra.mode=MULTIRUN`` to the
    overrides between get_mode and the multirun's composition."""
    hydra.get_mode("config", BENCH)
    kept = hydra_main._MODE_CONFIG[0][3]
    assert kept.hydra.mode is None
    with_mode = [*BENCH, "hydra.mode=MULTIRUN"]
    cfg = _compose(hydra, with_mode)
    assert cfg is kept and cfg.hydra.mode == RunMode.MULTIRUN
    fresh = _compose(hydra, with_mode)
    assert fresh is not cfg and OmegaConf.to_yaml(fresh) == OmegaConf.to_yaml(cfg)
    assert list(cfg.hydra.overrides.hydra) == [BENCH[0], "hydra.mode=MULTIRUN"]
    assert OmegaConf.is_readonly(fresh.hydra) == OmegaConf.is_readonly(cfg.hydra)
    # any other addition is composed by Hydra
    hydra.get_mode("config", BENCH)
    kept = hydra_main._MODE_CONFIG[0][3]
    assert _compose(hydra, [*BENCH, "hydra.mode=RUN"]) is not kept


def test_another_composition_is_hydras_and_drops_the_kept_one(hydra: Any) -> None:
    hydra.get_mode("config", BENCH)
    kept = hydra_main._MODE_CONFIG[0][3]
    other = _compose(hydra, [*BENCH, "chunk.header=path"])  # other overrides
    assert other is not kept and other.chunk.header == "path"
    assert hydra_main._MODE_CONFIG == []
    assert _compose(hydra, BENCH) is not kept  # used once at most
    hydra.get_mode("config", BENCH)
    run = hydra.compose_config("config", BENCH[:1], run_mode=RunMode.RUN)  # a single run
    assert run.chunk.size != "128,256,512" and hydra_main._MODE_CONFIG == []


def test_hydras_check_of_the_sweep_overrides_still_refuses(hydra: Any) -> None:
    """get_mode's composition skips the check; the multirun's makes it, as Hydra does."""
    bad = [*BENCH, "hydra.job.name=a,b"]
    hydra.get_mode("config", bad)
    assert hydra_main._MODE_CONFIG
    with pytest.raises(ConfigCompositionException, match="Sweeping over Hydra's configuration"):
        _compose(hydra, bad)
