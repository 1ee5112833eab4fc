"""hydra/launcher=ray_cluster's launcher: hydra-ray-launcher's, except that a configuration whose
Ray task is lost (its node or worker process died) is a FAILED configuration and the sweep goes
on (``sweep.cli.ray_launcher``).

Hydra accepts a launcher only from the ``hydra_plugins`` namespace package, and imports every
module in it at start-up, in every environment: this one imports nothing but Hydra there, and
Ray (``make ray-venv``, the ``ray`` extra) only when a sweep launches on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class SweepRayLauncher(Launcher):
    """The plugin's ``RayLauncher`` interface (``hydra.launcher.ray.init`` / ``.remote``)."""

    def __init__(self, ray: DictConfig) -> None:
        self.ray_cfg = ray
        self.hydra_context: HydraContext | None = None
        self.task_function: TaskFunction | None = None
        self.config: DictConfig | None = None

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction,
              config: DictConfig) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(self, job_overrides: Sequence[Sequence[str]],
               initial_job_idx: int) -> Sequence[JobReturn]:
        from sweep.cli.ray_launcher import launch

        return launch(self, job_overrides, initial_job_idx)
