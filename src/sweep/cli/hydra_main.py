"""``python -m sweep [-m] [overrides...]`` (and ``sweep`` with overrides): one configuration, or a
sweep with ``-m``. In `sweep.cli` so that `sweep.__main__` only calls it and the dispatcher
(`sweep.cli.main`) imports it without an import circle through the package root."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from sweep.common.errors import SweepError
from sweep.common.memory import tune_gc
from sweep.outputs import tracking_worker


def _refuse_secrets(argv: list[str]) -> bool:
    """Hydra writes the composed config to ``.hydra/`` before the job function runs, so a
    secret-looking key is refused here, before Hydra starts; so is an axis given twice.
    Returns whether the composition with the plain overrides is left to `_check_mode_config`:
    for a run or multirun, Hydra composes that configuration first (to read ``hydra.mode``),
    before it writes anything, so it is checked there instead of being composed twice. For
    ``--help``, ``--cfg``, ``--info`` and shell completion, which show a configuration
    without that step, it is composed and checked here as before."""
    from hydra._internal.utils import get_args_parser

    from sweep.config.compose import check_duplicate_overrides, preflight_secrets

    try:
        args = get_args_parser().parse_args(argv)
    except SystemExit:  # Hydra prints its own usage error
        return False
    later = not (args.help or args.hydra_help or args.cfg is not None
                 or args.info is not None or args.shell_completion)
    try:
        preflight_secrets(args.overrides, config_name=args.config_name or "config",
                          plain_checked_later=later)
        for warning in check_duplicate_overrides(args.overrides):
            print(f"warning: {warning}", file=sys.stderr)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    return later


# The composition `_check_mode_config`'s ``get_mode`` made, kept for the next one when that is
# the multirun's own: (loader, config name, overrides, config).
_MODE_CONFIG: list[tuple[Any, str | None, tuple[str, ...], Any]] = []


def _check_mode_config() -> None:
    """Hydra's first composition of a run or multirun (``Hydra.get_mode``, which reads
    ``hydra.mode`` from it before anything is written) goes through `check_composed`: the
    check `preflight_secrets` made on a composition of its own. A YAML syntax error is one
    ``file:line:col`` line, as there; any other composition error is left to Hydra, as
    ``get_mode`` leaves it (Hydra's own internal module, as `_own_write_errors` wraps
    `run_and_report`; hydra-core is pinned to 1.3). A multirun's own composition, which
    follows with the same config name, overrides and run mode, takes that one instead of
    composing it again (`_compose_multirun_once`)."""
    from hydra._internal.hydra import Hydra

    if getattr(Hydra.get_mode, "chunk_sweep", False):
        return
    _compose_multirun_once()

    def get_mode(self: Any, config_name: str | None, overrides: list[str]) -> Any:
        import yaml
        from hydra.types import RunMode

        from sweep.config.compose import check_composed, yaml_error_line

        try:  # the composition Hydra's get_mode makes
            cfg = self.compose_config(config_name=config_name, overrides=overrides,
                                      with_log_configuration=False,
                                      run_mode=RunMode.MULTIRUN,
                                      validate_sweep_overrides=False)
        except yaml.YAMLError as exc:
            print(f"error: {yaml_error_line(exc)}", file=sys.stderr)
            sys.exit(1)
        except Exception:  # Hydra reports it when it composes again
            return None
        try:
            check_composed(cfg)
        except SweepError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
        _MODE_CONFIG[:] = [(self.config_loader, config_name, tuple(overrides), cfg)]
        return cfg.hydra.mode

    get_mode.chunk_sweep = True  # type: ignore[attr-defined]
    Hydra.get_mode = get_mode  # type: ignore[method-assign]


# What Hydra's `_run_app` adds to the overrides of a multirun whose config sets no hydra.mode.
_MODE_OVERRIDE = "hydra.mode=MULTIRUN"


def _compose_multirun_once() -> None:
    """The composition that follows ``get_mode``'s (the next ``load_configuration`` of the same
    loader), when it is a multirun's with the same config name and overrides, is that one:
    Hydra composes the same configuration twice (~0.07 s of a warm sweep's start), and nothing
    reads or changes get_mode's copy but the check above. Where Hydra added
    ``hydra.mode=MULTIRUN`` after get_mode (no mode in the config), that last override is
    applied to it as Hydra applies it: set in the tree, then listed last among the Hydra
    overrides (it names no config group, no task key and no directory name). Hydra's check of
    the sweep overrides, which get_mode's composition skips, is made on them as Hydra makes
    it. Any other composition is Hydra's own, and the kept one is dropped."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.types import RunMode

    original = ConfigLoaderImpl.load_configuration

    def load_configuration(self: Any, config_name: str | None, overrides: list[str],
                           run_mode: Any, from_shell: bool = True,
                           validate_sweep_overrides: bool = True) -> Any:
        kept = _MODE_CONFIG.pop() if _MODE_CONFIG else None
        extra = tuple(overrides)[len(kept[2]):] if kept is not None else None
        if kept is None or kept[0] is not self or kept[1] != config_name \
                or tuple(overrides)[: len(kept[2])] != kept[2] \
                or extra not in ((), (_MODE_OVERRIDE,)) or run_mode != RunMode.MULTIRUN:
            return original(self, config_name, overrides, run_mode, from_shell=from_shell,
                            validate_sweep_overrides=validate_sweep_overrides)
        from hydra.core.override_parser.overrides_parser import OverridesParser

        parser = OverridesParser.create()
        if validate_sweep_overrides:
            self.validate_sweep_overrides_legal(
                overrides=parser.parse_overrides(overrides=list(overrides)), run_mode=run_mode,
                from_shell=from_shell)
        cfg = kept[3]
        if extra:
            ConfigLoaderImpl._apply_overrides_to_config(
                parser.parse_overrides(overrides=list(extra)), cfg)
            cfg.hydra.overrides.hydra.append(_MODE_OVERRIDE)
        return cfg

    ConfigLoaderImpl.load_configuration = load_configuration  # type: ignore[method-assign]


def _own_write_errors() -> None:
    """Hydra writes the sweep and job folders (``multirun.yaml``, ``.hydra/``) before a job
    runs; on a full or read-only filesystem its OSError ends the sweep with a traceback and
    the parent run left RUNNING. Instead: one line, the parent closed FAILED. Hydra has no
    hook around its launcher, hence the wrapper around the function its entry point calls
    (Hydra's internal module, as `_refuse_secrets` uses; hydra-core is pinned to 1.3)."""
    from hydra._internal import utils as hydra_utils

    original = hydra_utils.run_and_report
    if getattr(original, "chunk_sweep", False):
        return

    def run_and_report(func: Any) -> Any:
        def guarded() -> Any:
            from hydra.errors import ConfigCompositionException

            try:
                return func()
            except ConfigCompositionException as exc:
                # a misspelt option or key of the command line, before any job: one line with
                # "did you mean" (Hydra's text prints its search path, or advises `+key`,
                # which adds the typo; a missing option is also an OSError to Python, and no
                # file failed)
                if os.environ.get("HYDRA_FULL_ERROR") == "1":
                    raise
                from sweep.config.compose import composition_error_line

                print(f"error: {composition_error_line(exc)}", file=sys.stderr)
                sys.exit(1)
            except (OSError, ValueError) as exc:
                # logging.config wraps the OSError of a log file it cannot open
                cause = exc if isinstance(exc, OSError) else exc.__cause__
                if not isinstance(cause, OSError):
                    raise
                from sweep.cli.hydra_job import close_failed

                line = close_failed(cause)
                if os.environ.get("HYDRA_FULL_ERROR") == "1":
                    raise
                print(line, file=sys.stderr)
                sys.exit(1)

        return original(guarded)

    run_and_report.chunk_sweep = True  # type: ignore[attr-defined]
    hydra_utils.run_and_report = run_and_report


# Hydra's flags that print and exit, and the overrides that turn tracking off: no worker then
# (it would spend a core importing MLflow for nothing, and on a busy machine slow this one).
_NO_TRACKING_FLAGS = ("-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg",
                      "--shell-completion", "-sc")
_NO_TRACKING_OVERRIDES = ("tracking=off", "tracking.enabled=false", "tracking.enabled=False")


def _needs_tracking(argv: list[str]) -> bool:
    return not any(a in _NO_TRACKING_FLAGS or a.split("=", 1)[0] in _NO_TRACKING_FLAGS
                   or a.lstrip("+~") in _NO_TRACKING_OVERRIDES for a in argv)


def main() -> None:
    # First, before Hydra and the pipeline are imported: MLflow's import and the store's
    # opening then run in the worker on the other core while this process sets up the sweep.
    from sweep.common.paths import no_project_note

    note = no_project_note()  # outside a clone, never the bundled demo silently
    if note:
        print(note, file=sys.stderr)
    if _needs_tracking(sys.argv[1:]):
        tracking_worker.start()
    tune_gc()
    import hydra

    from sweep.cli.hydra_job import job
    from sweep.common import interrupt
    from sweep.config.schema import conf_dir, register

    # A log handler that cannot write (a full disk) drops the line instead of printing a
    # traceback per record (the standard library's switch for production use).
    logging.raiseExceptions = False
    from sweep.common.secret import install_log_scrubber

    install_log_scrubber()  # before Hydra's job log file gets its first line
    register()
    try:
        config_path = str(conf_dir())
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    if _refuse_secrets(sys.argv[1:]):
        _check_mode_config()
    _own_write_errors()
    from sweep.cli.config_copies import faster_metadata_copies
    from sweep.cli.hydra_files import fast_hydra_files
    from sweep.config.compose import compose_jobs_once

    compose_jobs_once()
    fast_hydra_files()
    faster_metadata_copies()
    interrupt.install()
    try:
        hydra.main(version_base="1.3", config_path=config_path, config_name="config")(job)()
    except KeyboardInterrupt:
        # One line instead of a KeyboardInterrupt traceback, and the parent run closed KILLED
        # instead of left RUNNING.
        interrupt.handled()
        from sweep.cli.hydra_job import close_interrupted

        print(close_interrupted(), file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # Not sys.exit: worker threads blocked in a network call (generation) would hold the
        # exit until their timeout.
        os._exit(130)
