"""Commands: the `sweep` dispatcher, the Hydra job, one module per command."""

from sweep.cli.main import main

__all__ = ["main"]
