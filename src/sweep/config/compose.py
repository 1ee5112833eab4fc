"""Composing a configuration outside a Hydra job, and one-line errors from composition."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import is_dataclass
from typing import Any

from omegaconf import OmegaConf

from sweep.common.errors import SweepError


def to_container(cfg: Any) -> dict[str, Any]:
    """Plain dict of a config (DictConfig or `Config` instance), enums as strings, resolved."""
    if is_dataclass(cfg) and not isinstance(cfg, type):
        cfg = OmegaConf.structured(cfg)
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)  # type: ignore[return-value]


def config_error_line(exc: BaseException) -> str:
    """One line from a Hydra/OmegaConf composition error and its cause.

    Hydra's own message says which override failed; the cause says why (the allowed values,
    the unknown key); a missing group option lists the available ones.
    """
    parts = []
    seen: set[str] = set()
    current: BaseException | None = exc
    while current is not None:
        lines = [ln.strip() for ln in str(current).splitlines() if ln.strip()]
        if lines and lines[0] not in seen:
            seen.add(lines[0])
            parts.append(lines[0])
            if "Available options" in str(current):
                idx = next(i for i, ln in enumerate(lines) if ln.startswith("Available options"))
                options = [ln for ln in lines[idx + 1 :] if not ln.startswith(("Config search",
                                                                                "provider="))]
                parts.append(f"available: {', '.join(options)}")
        current = current.__cause__
    return "config: " + ": ".join(parts)


def compose(overrides: Sequence[str]) -> Any:
    """The composed config for ``overrides`` (Hydra's compose API, no job, no output dir)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from sweep.config.compose import config_error_line
    from sweep.config.schema import Config, conf_dir, register

    register()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3",
                                   job_name="sweep"):
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
        typed: Config = OmegaConf.to_object(cfg)  # type: ignore[assignment]
        return typed
    except (HydraException, OmegaConfBaseException) as exc:
        raise SweepError(config_error_line(exc)) from None

