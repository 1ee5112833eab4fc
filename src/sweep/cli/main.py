"""The ``sweep`` command: subcommands, or a Hydra run/sweep when the first word is not one.

    sweep validate [--strict] [--json] [overrides...]
    sweep [-m] [overrides...]          # same as python -m sweep
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence

from sweep.common.errors import SweepError
from sweep.config.compose import compose

USAGE = """usage: sweep COMMAND [options] [key=value ...]

commands:
  validate        check the golden set against the corpus (orphans, bad ids, quotes)
  cache           info | clear: the on-disk embedding cache
  import          FORMAT SRC --out DIR: squad | beir | chroma data -> corpus/ + golden.jsonl
  compare         [--experiment NAME] [--sweep latest|RUN_ID] [--metric M] [--json] [--plot DIR]:
                  a sweep's configurations from MLflow, best first, each tested against the best
  export          --metric M [--name NAME] [--out-dir DIR]: the winner -> experiments/winners/
  flips           RUN_A RUN_B [--metric M]: questions one configuration gets right, the other not
  baseline        check [--tolerance T] [overrides...] | update [--allow-regression]: the CI gate
  rerun           --top N [--sweep latest|RUN_ID] [--metric M] [overrides...]: the best N of a
                  sweep again as a new sweep (generation on the best few; static -> transformer)
  label           [--corpus DIR] [--golden FILE] [--port 8765] [--no-dense]: a local page
                  (127.0.0.1) to label golden questions: search, select evidence, save
  estimate        [key=a,b ...]: texts, tokens, requests and dollars a sweep would send to
                  served models after the embedding cache (nothing is sent)
  (none)          run one configuration; `sweep -m key=a,b ...` sweeps (Hydra multirun)

Every command takes Hydra-style overrides, e.g. corpus.path=DIR golden.path=FILE.
`python -m sweep --help` shows the config groups and Hydra's own options.
"""


def cmd_validate(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep validate",
                                     description="Check a golden set against its corpus.")
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. golden.path=FILE")
    args = parser.parse_args(argv)

    from sweep.config.checks import check_config
    from sweep.data.golden import load_golden
    from sweep.data.validate import check_golden
    from sweep.pipeline.run import load_corpus_cached, resolve_golden

    cfg = compose(args.overrides)
    check_config(cfg)
    docs, fingerprint = load_corpus_cached(cfg)
    golden = load_golden(cfg.golden.path)
    resolved = resolve_golden(golden, docs, fingerprint)
    result = check_golden(golden, resolved, docs)
    failing = result.problems if args.strict else result.errors
    if args.json:
        print(json.dumps({
            "golden": golden.path, "corpus": cfg.corpus.path, "items": result.n_items,
            "errors": len(result.errors), "warnings": len(result.warnings),
            "ok": not failing,
            "problems": [{"file": p.file, "line": p.line, "field": p.field,
                          "message": p.message, "severity": p.severity}
                         for p in result.problems],
        }, indent=2))
    else:
        for p in result.problems:
            print(f"{p}" + ("" if p.severity == "error" else "  [warning]"))
        verdict = "FAILED" if failing else "OK"
        print(f"{verdict}: {golden.path}: {result.n_items} items checked against "
              f"{len(docs)} documents; {len(result.errors)} errors, "
              f"{len(result.warnings)} warnings", file=sys.stderr)
    return 1 if failing else 0


def cmd_cache(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="sweep cache",
                                     description="Inspect or empty the embedding cache.")
    parser.add_argument("action", choices=["info", "clear"])
    parser.add_argument("overrides", nargs="*", help="config overrides, e.g. cache.dir=DIR")
    args = parser.parse_args(argv)
    from sweep.embedding.cache import get_cache

    cfg = compose(args.overrides)
    cache = get_cache(cfg.cache.dir)
    if args.action == "clear":
        from sweep.embedding.served import clear_ledger

        clear_ledger(cache.path)
        print(f"removed {cache.clear()} vectors (and their token lengths) from {cache.path}")
        return 0
    info = cache.info()
    print(f"{info['path']}: {info['vectors']} vectors, {info['token_lengths']} token lengths, "
          f"{info['bytes_on_disk'] / 1e6:.1f} MB on disk")
    for model, stats in info["models"].items():  # type: ignore[union-attr]
        print(f"  model {model}: {stats['vectors']} vectors")
    from sweep.embedding.served import ledger_summary

    for row in ledger_summary(cache.path):
        print(f"  served {row['model']} (fingerprint {row['fingerprint']}): paid for "
              f"{row['texts_paid']} texts, {row['tokens_paid']} tokens, "
              f"${row['cost_usd_paid']:.4f}; the cache has answered {row['texts_from_cache']} "
              f"texts since, saving ~{row['tokens_saved']:.0f} tokens, "
              f"~${row['cost_usd_saved']:.4f}")
    return 0


def _lazy(module: str, name: str) -> Callable[[Sequence[str]], int]:
    """A subcommand imported when used: they pull in pandas, MLflow and matplotlib."""

    def run(argv: Sequence[str]) -> int:
        return getattr(importlib.import_module(module), name)(argv)

    return run


COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "validate": cmd_validate,
    "cache": cmd_cache,
    "import": _lazy("sweep.data.importers", "run_import_cli"),
    "compare": _lazy("sweep.decide.table", "cmd_compare"),
    "export": _lazy("sweep.decide.table", "cmd_export"),
    "flips": _lazy("sweep.decide.table", "cmd_flips"),
    "baseline": _lazy("sweep.decide.baseline", "cmd_baseline"),
    "rerun": _lazy("sweep.decide.rerun", "cmd_rerun"),
    "estimate": _lazy("sweep.cli.estimate", "cmd_estimate"),
    "label": _lazy("sweep.label", "cmd_label"),
}


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if hasattr(signal, "SIGPIPE"):  # `sweep validate | head` should not end in a traceback
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if argv and argv[0] in ("help", "--usage"):
        print(USAGE)
        return
    if argv and argv[0] in COMMANDS:
        debug = "--debug" in argv or os.environ.get("CHUNK_SWEEP_DEBUG") == "1"
        argv = [a for a in argv if a != "--debug"]
        try:
            sys.exit(COMMANDS[argv[0]](argv[1:]))
        except SweepError as exc:
            if debug:
                raise
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(1)
    from sweep.__main__ import main as hydra_main

    sys.argv = [sys.argv[0], *argv]
    hydra_main()


if __name__ == "__main__":
    main()
