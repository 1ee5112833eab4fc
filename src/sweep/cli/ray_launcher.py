"""hydra/launcher=ray_cluster's launch (``hydra_plugins.chunk_sweep_ray.SweepRayLauncher``):
hydra-ray-launcher's, with a lost configuration recorded as a FAILED job instead of ending the
sweep.

The plugin sends every configuration to the cluster as one Ray task, then waits for the tasks
in order with ``ray.get``: the first task whose node or worker process died (a machine that
went down, the OOM killer, a SIGKILL) raises out of the launcher, the sweep stops there with a
Ray traceback, the configurations still running are never read back and nothing says which one
was lost. Here every task is waited for; a lost one becomes what any failed configuration is
(`hydra_job` ``_fail``): a FAILED report in its job folder and a FAILED child run in MLflow,
each with the reason; the sweep goes on, ends with its table and exits 1, and the same command
resumes it (the FINISHED configurations are skipped). An exception raised by the job function
itself is re-raised, as under the basic launcher.

Importable only where the Ray extra is installed (``make ray-venv``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, configure_log, filter_overrides, setup_globals
from hydra_plugins.hydra_ray_launcher._launcher_util import launch_job_on_ray, start_ray
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import OmegaConfBaseException

from sweep.cli import hydra_job
from sweep.common.errors import SweepError
from sweep.config.compose import to_container

log = logging.getLogger("sweep")


def launch(launcher: Any, job_overrides: Sequence[Sequence[str]],
           initial_job_idx: int) -> Sequence[JobReturn]:
    """Each configuration one Ray task (``ray.remote`` options from
    ``hydra.launcher.ray.remote``), all sent before any is waited for; a task the cluster lost
    is a FAILED configuration with its reason."""
    config, context, task = launcher.config, launcher.hydra_context, launcher.task_function
    assert config is not None and context is not None and task is not None
    setup_globals()
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    log.info("Ray: %d configurations, sweep folder %s", len(job_overrides), sweep_dir)
    start_ray(launcher.ray_cfg.init)
    pending: list[tuple[Any, DictConfig, Sequence[str]]] = []
    for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
        log.info("\t#%d : %s", idx, " ".join(filter_overrides(overrides)))
        sweep_config = context.config_loader.load_sweep_config(config, list(overrides))
        with open_dict(sweep_config):
            # What a scheduler's job id would be; the job number names the job folder.
            sweep_config.hydra.job.id = f"ray_{idx}"
            sweep_config.hydra.job.num = idx
        _pin_tracking_uri(sweep_config)
        ref = launch_job_on_ray(context, launcher.ray_cfg.remote, sweep_config, task,
                                Singleton.get_state())
        pending.append((ref, sweep_config, overrides))
    results: list[JobReturn] = []
    for ref, sweep_config, overrides in pending:
        try:
            results.append(ray.get(ref))
        except ray.exceptions.RayTaskError:
            raise  # the job function raised: a bug, as under the basic launcher
        except ray.exceptions.RayError as exc:
            results.append(_lost(exc, sweep_config, overrides))
    return results


def _pin_tracking_uri(sweep_config: DictConfig) -> None:
    """The store of the job's child run, resolved here. tracking=server reads
    ``$MLFLOW_TRACKING_URI``, and an interpolation is resolved where the job runs: in a Ray
    worker, whose environment is its node's (``ray start``'s), not this shell's, so the child
    runs would go to the worker's default store and never meet their parent run. Every job
    logs where the sweep's parent run is."""
    if not OmegaConf.select(sweep_config, "tracking.enabled", default=False):
        return
    try:
        uri = str(sweep_config.tracking.uri)
    except OmegaConfBaseException:
        return  # the job fails on it itself, with its one line
    sweep_config.tracking.uri = uri


def lost_reason(exc: BaseException) -> SweepError:
    """The one line a lost task's configuration is FAILED with: what Ray said, first line."""
    said = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return SweepError(f"the Ray task running this configuration was lost "
                      f"({type(exc).__name__}: {said if len(said) <= 300 else said[:299] + '…'})",
                      hint="its node or worker process died; the same command resumes the "
                      "sweep, skipping the configurations that finished")


def _lost(exc: BaseException, sweep_config: DictConfig, overrides: Sequence[str]) -> JobReturn:
    """A FAILED report and child run for the configuration of a lost task, as its job would
    have written them (``hydra_job._fail``); returns its job's result (NaN, as a failed job)."""
    job_dir = Path(str(sweep_config.hydra.sweep.dir)) / str(sweep_config.hydra.sweep.subdir)
    reason = lost_reason(exc)
    log.error("configuration #%s (%s): %s", sweep_config.hydra.job.num,
              " ".join(filter_overrides(overrides)), reason)
    task_cfg = copy.deepcopy(sweep_config)
    with read_write(task_cfg), open_dict(task_cfg):
        del task_cfg["hydra"]
    # ${hydra:...} interpolations in the job's config resolve against this job's Hydra config.
    HydraConfig.instance().set_config(sweep_config)
    try:
        plain = to_container(task_cfg)
    except OmegaConfBaseException:
        plain = {}
    try:
        job_dir.mkdir(parents=True, exist_ok=True)  # a task lost before it started has none
    except OSError as write_exc:
        log.error("%s", hydra_job.write_error(job_dir, write_exc))
    value = hydra_job._fail(plain, job_dir, reason, multirun=True)
    return JobReturn(overrides=list(overrides), cfg=task_cfg, hydra_cfg=sweep_config,
                     working_dir=str(job_dir), task_name=str(sweep_config.hydra.job.name),
                     status=JobStatus.COMPLETED, _return_value=value)
