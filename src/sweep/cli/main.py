"""The ``sweep`` command: subcommands, or a Hydra run/sweep when the first word is not one.

    sweep validate [--strict] [--json] [overrides...]
    sweep [-m] [overrides...]          # same as python -m sweep
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence

from sweep.common.errors import SweepError

USAGE = """usage: sweep COMMAND [options] [key=value ...]

commands:
  init            [--corpus DIR] [--name NAME]: a starter project in the current folder (conf/,
                  an empty golden set, experiments/grid.yaml, evals/, CI files); never overwrites
  validate        check the golden set against the corpus (orphans, bad ids, quotes)
  audit           [--json] [--html FILE] [--no-embedding]: the golden set's synthetic smell,
                  near-duplicates, ambiguous evidence, split answers and coverage
  cache           info | clear: the on-disk embedding cache
  import          FORMAT SRC --out DIR: squad | beir | chroma data -> corpus/ + golden.jsonl
  compare         [--experiment NAME] [--sweep latest|RUN_ID] [--metric M] [--json] [--plot DIR]:
                  a sweep's configurations from MLflow, best first, each tested against the best
  export          [--metric M] [--top] [--name NAME] [--out-dir DIR]: the winner -> experiments/winners/
  flips           RUN_A RUN_B [--metric M]: questions one configuration gets right, the other not
  baseline        check [--tolerance T] [overrides...] | update [--allow-regression]: the CI gate
  rerun           --top N [--sweep latest|RUN_ID] [--metric M] [overrides...]: the best N of a
                  sweep again as a new sweep (generation on the best few; static -> transformer)
  show            RUN [--qid QID] [--vs RUN]: why questions were missed (a job folder or an
                  MLflow run id): miss causes, evidence inside its chunk boundaries, the top k
  ui              [--port 5000] [--experiment NAME]: the MLflow UI on the store, and the link
                  to the latest sweep's runs table
  label           [--corpus DIR] [--golden FILE] [--port 8765] [--no-dense]: a local page
                  (127.0.0.1) to label golden questions: search, select evidence, save
  golden          rebase --golden G --old OLD --new NEW --out G2: carry labels across document
                  edits (folders or git revisions); fingerprint: record a set's corpus
  questions       import LOG|--mlflow-experiment NAME --out QUEUE.jsonl | generate --out
                  QUEUE.jsonl: real (and synthetic) questions into a prioritised labelling
                  queue (redacted, duplicates merged, ranked by feedback and frequency)
  estimate        [key=a,b ...]: texts, tokens, requests and dollars a sweep would send to
                  served models after the embedding cache (nothing is sent)
  (none)          run one configuration; `sweep -m key=a,b ...` sweeps (Hydra multirun)

Every command takes Hydra-style overrides, e.g. corpus.path=DIR golden.path=FILE.
`python -m sweep --help` shows the config groups and Hydra's own options.
"""


def _lazy(module: str, name: str) -> Callable[[Sequence[str]], int]:
    """A subcommand imported when used: they pull in pandas, MLflow and matplotlib."""

    def run(argv: Sequence[str]) -> int:
        return getattr(importlib.import_module(module), name)(argv)

    return run


# One module per command under sweep/cli/ (argparse and printing; the work is done by
# data/, decide/ and pipeline/); the labelling page keeps its server and options together.
COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "init": _lazy("sweep.cli.init", "cmd_init"),
    "validate": _lazy("sweep.cli.validate", "cmd_validate"),
    "audit": _lazy("sweep.cli.audit", "cmd_audit"),
    "cache": _lazy("sweep.cli.cache", "cmd_cache"),
    "import": _lazy("sweep.cli.import_cmd", "cmd_import"),
    "compare": _lazy("sweep.cli.compare", "cmd_compare"),
    "export": _lazy("sweep.cli.export", "cmd_export"),
    "flips": _lazy("sweep.cli.flips", "cmd_flips"),
    "baseline": _lazy("sweep.cli.baseline", "cmd_baseline"),
    "rerun": _lazy("sweep.cli.rerun", "cmd_rerun"),
    "show": _lazy("sweep.cli.show", "cmd_show"),
    "estimate": _lazy("sweep.cli.estimate", "cmd_estimate"),
    "label": _lazy("sweep.label", "cmd_label"),
    "golden": _lazy("sweep.cli.golden", "cmd_golden"),
    "questions": _lazy("sweep.cli.questions", "cmd_questions"),
    "ui": _lazy("sweep.cli.ui", "cmd_ui"),
}


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
    if argv and argv[0] in ("help", "--usage"):
        print(USAGE)
        return
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
