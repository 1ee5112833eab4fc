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
from sweep.config.schema import composed_config
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
            typed = composed_config(plain)
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


def check_every_job(config: Any) -> int:
    """Every job of the multirun whose master config is ``config``, composed and checked
    (`check_config`) before the first runs and before its parent run exists: a misspelt option
    or key, or one combination the checks refuse (``chunk.size=128,256 chunk.overlap=200``),
    ends the sweep here with one line per bad combination, instead of after the valid jobs
    ran. Jobs that differ only in scalar values are derived from one composed job, as the
    launcher's own check does (`derive_job_config`). Returns how many jobs were checked (0 for
    a sweeper that chooses its jobs as it runs)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from sweep.config.checks import check_config
    from sweep.config.compose import (
        composition_error_line,
        derive_job_config,
        remember_composed,
    )

    sweeper = str(OmegaConf.select(config, "hydra.sweeper._target_", default=""))
    if not sweeper.endswith(".BasicSweeper"):
        return 0
    loader = GlobalHydra.instance().config_loader()
    params = OmegaConf.select(config, "hydra.sweeper.params", default=None) or {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += list(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))
    try:
        parsed = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
    except HydraException as exc:
        raise SweepError(composition_error_line(exc)) from None
    jobs = [list(j) for batch in BasicSweeper.split_arguments(parsed, None) for j in batch]
    swept = {o.key_or_group for o in parsed if o.is_sweep_override()}

    def named(job: list[str]) -> str:
        """The combination by its swept settings (the rest is the same in every job)."""
        return " ".join(o for o in job if o.split("=", 1)[0].lstrip("+~") in swept) \
            or " ".join(job)

    composed: list[tuple[list[str], Any]] = []
    bad: dict[str, list[str]] = {}  # the reason -> the combinations it refuses
    for job in jobs:
        try:
            cfg = next((c for c in (derive_job_config(ref_cfg, ref, job, config)
                                    for ref, ref_cfg in composed) if c is not None), None)
            if cfg is None:
                cfg = loader.load_sweep_config(config, job)
                composed.append((job, cfg))
            remember_composed(config, job, cfg)  # the sweeper's check takes it, derived or not
            plain = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
            typed = composed_config(plain)
            check_config(typed)
        except (HydraException, OmegaConfBaseException) as exc:
            bad.setdefault(composition_error_line(exc).removeprefix("config: "), []).append(
                named(job))
        except SweepError as exc:
            bad.setdefault(str(exc), []).append(named(job))
    if bad:
        lines = []
        for reason, combos in bad.items():
            which = (f"all {len(jobs)} combinations" if len(combos) == len(jobs) else
                     f"{len(combos)} of {len(jobs)} combinations, e.g. {combos[0]}"
                     if len(combos) > 1 else combos[0])
            lines.append(f"{reason} [{which}]")
        raise SweepError("nothing ran, the sweep's configurations are refused before the "
                         "first job: " + "; ".join(lines))
    return len(jobs)
