"""``sweep init [--corpus DIR] [--name NAME]``: a starter project in the current folder.

Writes the project's own configuration (layered over the bundled one, see
``sweep.common.paths``), an empty golden set with its reference sidecar, a small experiment,
``evals/`` for the baseline and CI files for the gate, all or nothing and never over an
existing file (`sweep.application.starter`). With ``--corpus`` it fills in the corpus path and
runs ``sweep validate``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from sweep.application.starter import (
    default_install,
    default_name,
    install_note,
    project_files,
    write_project,
)
from sweep.common.errors import SweepError
from sweep.common.paths import CLONE_ROOT, in_clone, resolve_user_path

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_EMPTY_GOLDEN = "no golden items (the file is empty)"


def validate(root: Path) -> int:
    """``sweep validate`` in a new process (it reads the project files just written); an
    empty golden set is the expected state right after init."""
    proc = subprocess.run([sys.executable, "-m", "sweep.cli", "validate", "--json"],
                          cwd=root, capture_output=True, text=True)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        sys.stderr.write(proc.stderr)
        print("sweep validate failed on the new project (above); fix conf/corpus and run "
              "`sweep validate` again", file=sys.stderr)
        return 1
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    if report["ok"] or [p["message"] for p in errors] == [_EMPTY_GOLDEN]:
        print(f"validate: the corpus {report['corpus']} reads; "
              f"{report['items']} golden items so far")
        return 0
    for p in report["problems"]:
        print(f"{p['file']}:{p['line']}: {p['field']}: {p['message']} [{p['severity']}]")
    print("sweep validate: FAILED (above)", file=sys.stderr)
    return 1


def cmd_init(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="sweep init",
        description="Write a starter project into the current folder: conf/ (corpus and golden "
                    "groups, project defaults), an empty golden set, experiments/grid.yaml, "
                    "evals/ and CI files for the gate. Existing files are never overwritten.")
    parser.add_argument("--corpus", metavar="DIR",
                        help="the corpus folder (default: corpus/); runs sweep validate at the end")
    parser.add_argument("--name", help="the corpus and golden groups' name (default: from the "
                                       "corpus folder's name)")
    parser.add_argument("--install", metavar="SPEC",
                        help="what the CI files give pip for chunk-sweep, which is not on "
                             "PyPI: a wheel path in the repository, a VCS reference "
                             "(git+https://host/you/chunk-sweep@v0.1.0) or a package name "
                             f"(default: {default_install()})")
    args = parser.parse_args(argv)
    root = resolve_user_path(Path.cwd(), "the working folder")
    if in_clone() and root == CLONE_ROOT.resolve():
        raise SweepError("this is chunk-sweep's own clone",
                         hint="run sweep init in your project's folder")
    corpus = args.corpus or "corpus"
    corpus_dir = resolve_user_path(root / corpus, "--corpus")
    if args.corpus is not None and not corpus_dir.is_dir():
        raise SweepError(f"--corpus {args.corpus}: not a folder ({corpus_dir})")
    rel = (os.path.relpath(corpus_dir, root) if corpus_dir.is_relative_to(root)
           else str(corpus_dir))
    name = args.name or default_name(corpus_dir)
    if not _NAME.match(name):
        raise SweepError(f"--name {name!r}: use lower-case letters, digits and _ "
                         "(it names config files)")
    files = project_files(name, rel.replace(os.sep, "/"), args.install)
    written = write_project(root, files, [] if args.corpus is not None else [corpus])
    for rel_path in written:
        print(f"wrote {rel_path}")
    print(install_note(args.install))
    if args.corpus is None:
        print(f"put your documents in {corpus}/, then: sweep validate")
        return 0
    print("next: sweep label (questions and evidence), sweep -m experiment=grid, "
          "sweep baseline update")
    return validate(root)
