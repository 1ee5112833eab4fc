"""The pre-fan-out step of a multirun (``cache.prewarm``, `sweep.application.shared`): the
sweep's jobs listed and composed as Hydra's basic sweeper and the launcher will, each built
into its `JobSpec`, before any of them runs. Hydra is read here, in the CLI, so that the
pipeline sees specs only."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from sweep.application.shared import prewarm
from sweep.common.errors import SweepError
from sweep.config.schema import Config
from sweep.config.specs import JobSpec, build_job_spec

log = logging.getLogger("sweep.application.shared")


def prewarm_sweep(config: Any) -> dict[str, Any] | None:
    """`prewarm` for the multirun whose master config (``hydra`` included) is ``config``: its
    jobs as Hydra's basic sweeper expands them (``hydra.sweeper.params``, then the command
    line's overrides), each composed as the launcher will compose it."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    mode = str(OmegaConf.select(config, "cache.prewarm", default="auto"))
    if mode == "off" or not OmegaConf.select(config, "cache.enabled", default=True):
        return None
    loader = GlobalHydra.instance().config_loader()

    def expand() -> list[list[str]] | None:
        params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
        arguments = [f"{k}={v}" for k, v in params.items()]
        arguments += list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
        try:
            parsed = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
        except Exception as exc:  # Hydra reports the bad override itself, in its words
            log.warning("cache.prewarm: no shared texts planned (%s)", exc)
            return None
        return [list(j) for batch in BasicSweeper.split_arguments(parsed, None) for j in batch]

    def compose_job(overrides: list[str]) -> JobSpec | None:
        from omegaconf.errors import OmegaConfBaseException

        from sweep.config.checks import check_config
        from sweep.config.compose import config_error_line

        try:
            job_cfg = loader.load_sweep_config(config, overrides)
            plain = OmegaConf.masked_copy(job_cfg, [k for k in job_cfg if k != "hydra"])
            typed: Config = OmegaConf.to_object(  # type: ignore[assignment]
                OmegaConf.merge(OmegaConf.structured(Config), plain))
            check_config(typed)
        except (OmegaConfBaseException, SweepError) as exc:  # that job fails on its own
            message = config_error_line(exc) if isinstance(exc, OmegaConfBaseException) \
                else str(exc)
            log.warning("cache.prewarm: %s left out of the plan (%s)", " ".join(overrides),
                        message)
            return None
        return build_job_spec(typed)

    return prewarm(mode, str(OmegaConf.select(config, "hydra.launcher._target_", default="")),
                   str(OmegaConf.select(config, "hydra.sweeper._target_", default="")),
                   Path(str(config.hydra.sweep.dir)), expand, compose_job)
