"""``python -m sweep [-m] [overrides...]``: one configuration, or a sweep with ``-m``."""

from __future__ import annotations

import sys

import hydra

from sweep.cli.hydra_job import job
from sweep.common.errors import SweepError
from sweep.config.schema import conf_dir, register


def main() -> None:
    register()
    try:
        config_path = str(conf_dir())
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    hydra.main(version_base="1.3", config_path=config_path, config_name="config")(job)()


if __name__ == "__main__":
    main()
