"""The ``sweep`` command: subcommands, or a Hydra run/sweep when the first word is not one.

    sweep help | --help                # the commands, one line each (`usage`)
    sweep validate [--strict] [--json] [overrides...]
    sweep [-m] [overrides...]          # same as python -m sweep
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep.common.errors import SweepError

# One module per command under sweep/cli/ (argparse and printing; the work is done by
# data/, decide/ and pipeline/); the labelling page keeps its server and options together.
# `sweep help` lists them with the first sentence of each module's docstring: a new command
# is its module and one line here.
_MODULES: dict[str, tuple[str, str]] = {
    "init": ("sweep.cli.init", "cmd_init"),
    "validate": ("sweep.cli.validate", "cmd_validate"),
    "audit": ("sweep.cli.audit", "cmd_audit"),
    "cache": ("sweep.cli.cache", "cmd_cache"),
    "import": ("sweep.cli.import_cmd", "cmd_import"),
    "compare": ("sweep.cli.compare", "cmd_compare"),
    "export": ("sweep.cli.export", "cmd_export"),
    "flips": ("sweep.cli.flips", "cmd_flips"),
    "baseline": ("sweep.cli.baseline", "cmd_baseline"),
    "rerun": ("sweep.cli.rerun", "cmd_rerun"),
    "show": ("sweep.cli.show", "cmd_show"),
    "estimate": ("sweep.cli.estimate", "cmd_estimate"),
    "label": ("sweep.label", "cmd_label"),
    "golden": ("sweep.cli.golden", "cmd_golden"),
    "questions": ("sweep.cli.questions", "cmd_questions"),
    "ui": ("sweep.cli.ui", "cmd_ui"),
}


@dataclass(frozen=True)
class Command:
    """A subcommand, imported when used: they pull in pandas, MLflow and matplotlib."""

    module: str
    function: str

    def __call__(self, argv: Sequence[str]) -> int:
        return getattr(importlib.import_module(self.module), self.function)(argv)

    def summary(self, width: int = 68) -> str:
        """What it does in one line (`summary_of` its module's docstring, read from the
        source file: `sweep help` imports no command)."""
        return summary_of(_docstring(self.module), width)


COMMANDS: dict[str, Command] = {name: Command(*where) for name, where in _MODULES.items()}


def _docstring(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    text = Path(spec.origin).read_text(encoding="utf-8")
    found = re.match(r'\s*[rRuU]?("""|\'\'\')(.*?)\1', text, re.S)
    return found.group(2) if found else ""


def summary_of(doc: str, width: int = 68) -> str:
    """The first sentence of a command's docstring without its ``sweep NAME ...`` synopsis
    (```sweep show RUN``: why questions were missed, in the terminal.` -> `why questions were
    missed, in the terminal`), shortened past ``width`` characters as click's command lists
    do."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    paragraph = re.sub(r"^`+sweep [^`]*`+:\s*", "", paragraph)
    # a sentence ends at a full stop, not at the one of "e.g." or "i.e."
    sentence = re.split(r"(?<=[a-z0-9)`'])(?<!e\.g)(?<!i\.e)\.(?:\s|$)", paragraph,
                        maxsplit=1)[0].rstrip(".")
    if len(sentence) <= width:
        return sentence
    # Past the width: up to the last aside or clause that fits, else a word and "...".
    head = sentence[: width + 1]
    cut = max(head.rfind(" ("), head.rfind(", "), head.rfind("; "))
    if cut > width // 3:
        return sentence[:cut]
    return sentence[: width - 3].rsplit(" ", 1)[0].rstrip(",;:( ") + "..."


def usage() -> str:
    """What ``sweep help`` and ``sweep --help`` print: the commands, one line each, then where
    a command's options and Hydra's configuration help are."""
    lines = ["usage: sweep COMMAND [options] [key=value ...]",
             "       sweep [-m] [key=value ...]    one configuration; with -m, a sweep",
             "", "commands:"]
    lines += [f"  {name:<10} {command.summary()}" for name, command in COMMANDS.items()]
    lines += ["",
              "A command's options: sweep help COMMAND (or sweep COMMAND --help). Every command",
              "takes Hydra-style overrides, e.g. corpus.path=DIR golden.path=FILE.",
              "",
              "Configuration (Hydra): python -m sweep --help lists the config groups and the",
              "defaults; sweep --cfg job [--resolve] [key=value ...] prints the composed",
              "configuration; sweep --info what Hydra loaded; sweep --hydra-help Hydra's flags."]
    return "\n".join(lines) + "\n"


# Commands that read no project configuration: no note that none was found.
NO_PROJECT_COMMANDS = frozenset({"init", "import", "ui"})


def say_no_project() -> None:
    """Outside a clone, a command run where no project is found says that it uses the bundled
    demo's configuration (`sweep.common.paths.no_project_note`) instead of doing so silently."""
    from sweep.common.paths import no_project_note

    note = no_project_note()
    if note:
        print(note, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if hasattr(signal, "SIGPIPE"):  # `sweep validate | head` should not end in a traceback
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from sweep.common.secret import install_log_scrubber

    install_log_scrubber()
    if argv and argv[0] in ("help", "--usage", "--help", "-h"):
        if argv[0] != "help" or len(argv) < 2 or argv[1] not in COMMANDS:
            print(usage())
            return
        argv = [argv[1], "--help"]  # `sweep help compare`: that command's options
    if argv and argv[0] in COMMANDS:
        if argv[0] not in NO_PROJECT_COMMANDS:
            say_no_project()
        debug = "--debug" in argv or os.environ.get("CHUNK_SWEEP_DEBUG") == "1"
        argv = [a for a in argv if a != "--debug"]
        try:
            sys.exit(COMMANDS[argv[0]](argv[1:]))
        except SweepError as exc:
            if debug:
                raise
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
    from sweep.cli.hydra_main import main as hydra_main

    sys.argv = [sys.argv[0], *argv]
    hydra_main()


def program() -> None:
    """The ``sweep`` executable and ``python -m sweep.cli``: `main`, then the process ends
    without the interpreter's teardown (`sweep.common.exit`)."""
    from sweep.common.exit import run_then_exit

    run_then_exit(main)


if __name__ == "__main__":
    program()
