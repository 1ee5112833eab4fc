"""``python -m sweep [-m] [overrides...]``: one configuration, or a sweep with ``-m``."""

from __future__ import annotations

import os
import sys

import hydra

from sweep.cli.hydra_job import job
from sweep.common.errors import SweepError
from sweep.config.schema import conf_dir, register


def _refuse_secrets(argv: list[str]) -> None:
    """Hydra writes the composed config to ``.hydra/`` before the job function runs, so a
    secret-looking key is refused here, before Hydra starts; so is an axis given twice."""
    from hydra._internal.utils import get_args_parser

    from sweep.config.compose import check_duplicate_overrides, preflight_secrets

    try:
        args = get_args_parser().parse_args(argv)
    except SystemExit:  # Hydra prints its own usage error
        return
    try:
        preflight_secrets(args.overrides, config_name=args.config_name or "config")
        for warning in check_duplicate_overrides(args.overrides):
            print(f"warning: {warning}", file=sys.stderr)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


def main() -> None:
    register()
    try:
        config_path = str(conf_dir())
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    _refuse_secrets(sys.argv[1:])
    from sweep.config.compose import compose_jobs_once

    compose_jobs_once()
    try:
        hydra.main(version_base="1.3", config_path=config_path, config_name="config")(job)()
    except KeyboardInterrupt:
        # One line instead of a KeyboardInterrupt traceback, and the parent run closed KILLED
        # instead of left RUNNING.
        from sweep.cli.hydra_job import close_interrupted

        print(close_interrupted(), file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # Not sys.exit: worker threads blocked in a network call (generation) would hold the
        # exit until their timeout.
        os._exit(130)


if __name__ == "__main__":
    main()
