"""``python -m sweep [-m] [overrides...]``: one configuration, or a sweep with ``-m``
(`sweep.cli.hydra_main`)."""

from __future__ import annotations

from sweep.cli.hydra_main import main

__all__ = ["main"]

if __name__ == "__main__":
    from sweep.common.exit import run_then_exit

    run_then_exit(main)
