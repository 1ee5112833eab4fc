"""The config tests' shared Hydra loader."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from sweep.config.schema import conf_dir, register


@pytest.fixture(scope="module")
def loader() -> Iterator[Any]:
    """Hydra's config loader over the shipped configs, the schema registered (one per module:
    Hydra's global state is set while it is alive)."""
    register()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3",
                               job_name="sweep"):
        yield GlobalHydra.instance().config_loader()
