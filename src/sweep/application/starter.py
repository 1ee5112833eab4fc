"""The starter project `sweep init` writes: its files (`project_files`), the checks that
every target can be written before any is (`blocked`), and the all-or-nothing write
(`write_project`).

Every file is checked before the first is written: nothing is written when one exists, when a
folder one must go in is a file, or when a folder on the way (``conf/``, ``.github/``) is a
symbolic link that leads out of the project; a write that fails part-way removes what it had
written. Values (the corpus path) go into the YAML through a YAML emitter, never by pasting
text. The command (`sweep.cli.init`) parses its options, calls these and prints.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from sweep.common.errors import SweepError
from sweep.common.paths import resolve_user_path

GITIGNORE = [".venv/", ".cache/", "mlflow.db", "mlflow.db.lock", "mlartifacts/", "outputs/", "multirun/"]



def default_name(folder: Path) -> str:
    """A config-group option name from a folder name: lower case, ``_`` for the rest."""
    name = re.sub(r"[^a-z0-9]+", "_", folder.name.lower()).strip("_")
    return name if name and name[0].isalpha() else "project"


def yaml_scalar(value: str) -> str:
    """``value`` as one YAML scalar, quoted by the emitter wherever YAML would read it
    otherwise (``docs #2024`` would lose its comment part, ``a: b`` would be a mapping)."""
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=2**31)
    return text.removesuffix("\n").removesuffix("\n...")


def _omegaconf_literal(text: str) -> str:
    # Hydra reads `${...}` in a value as an interpolation: a folder named so is escaped
    return text.replace("${", "\\${")


def default_install() -> str:
    """Where the generated CI installs chunk-sweep from unless told (``sweep init --install``):
    the wheel `make wheel` builds in chunk-sweep's clone, committed to the user's repository
    under ``wheels/``. chunk-sweep is not on a package index, so ``pip install chunk-sweep``
    would fail."""
    from sweep import __version__

    return f"wheels/chunk_sweep-{__version__}-py3-none-any.whl"


def check_install(spec: str) -> str:
    """``spec`` if pip can take it as one argument (a path, a VCS reference, a name)."""
    if not spec or any(c.isspace() for c in spec) or spec.startswith("-"):
        raise SweepError(f"--install {spec!r}: give one wheel path, VCS reference or package "
                         "name, without spaces (e.g. git+https://host/you/chunk-sweep@v0.1.0)")
    return spec


def install_note(install: str | None) -> str:
    """What `sweep init` says about the CI files' install line."""
    where = ("CHUNK_SWEEP_INSTALL at the top of .github/workflows/retrieval-gate.yml and "
             ".gitlab-ci.yml")
    if install is not None:
        return f"CI installs chunk-sweep with pip install {install} ({where}; change it there)"
    return (f"CI installs chunk-sweep from {default_install()}: commit that wheel there (`make "
            f"wheel` in chunk-sweep's clone builds it), or set {where} to a VCS reference "
            "(or run sweep init --install SPEC); chunk-sweep is not on PyPI")


def project_files(name: str, corpus: str, install: str | None = None) -> dict[str, str]:
    """The starter project's files, by path relative to the project root (``corpus``: the
    corpus folder relative to the root, or absolute; ``install``: what the CI files give pip
    for chunk-sweep, `default_install` unless set)."""
    install_value = yaml_scalar(check_install(default_install() if install is None else install))
    corpus_path = (_omegaconf_literal(corpus) if os.path.isabs(corpus)
                   else "${project_root:}/" + _omegaconf_literal(corpus))
    watched = [] if os.path.isabs(corpus) else [corpus.rstrip("/") + "/**"]
    paths = ["conf/**", "experiments/**", "golden/**", "evals/**", *watched]
    gh_paths = "\n".join(f"      - {yaml_scalar(p)}" for p in paths)
    gl_paths = "\n".join(f"        - {yaml_scalar(p)}" for p in paths)
    return {
        "conf/project/default.yaml": f"""\
# @package _global_
# This project's defaults, layered over chunk-sweep's bundled configuration (`sweep init`).
# A value here replaces the bundled default; the command line replaces both.
defaults:
  - override /corpus: {name}
  - override /golden: {name}

# e.g. the chunking your sweeps start from:
# chunk:
#   size: 256
""",
        f"conf/corpus/{name}.yaml": f"""\
# The corpus: a folder of markdown, text, PDF, HTML or Word files.
name: {name}
path: {yaml_scalar(corpus_path)}
on_error: raise   # raise | skip
""",
        f"conf/golden/{name}.yaml": f"""\
# The golden set: one JSON object a line (`sweep label` writes them).
name: {name}
path: ${{project_root:}}/golden/{name}.jsonl
""",
        f"golden/{name}.jsonl": "",
        f"golden/{name}.reference.yaml": """\
# The chunking that the chunk ids in the golden set refer to (`sweep validate` checks them).
# Relevance in every swept configuration is resolved from the evidence quotes.
chunk:
  boundary: heading
  size: 256
  overlap: 0
  tokenizer: minilm
""",
        "experiments/grid.yaml": """\
# @package _global_
# A first sweep: two boundaries x two sizes (4 configurations).
#   sweep -m experiment=grid
eval:
  headline: evidence_recall_at_budget

hydra:
  sweeper:
    params:
      chunk.boundary: paragraph,heading
      chunk.size: 128,256
""",
        "evals/README.md": """\
# evals/

`sweep baseline update` writes `baseline.json` here: the default configuration's scores that
`sweep baseline check` (the CI gate) compares every change against. Commit it.
""",
        ".github/workflows/retrieval-gate.yml": _github_workflow(gh_paths, install_value),
        ".gitlab-ci.yml": _gitlab_ci(gl_paths, install_value),
    }


def _github_workflow(gh_paths: str, install_value: str) -> str:
    """.github/workflows/retrieval-gate.yml: the gate on pull requests."""
    return f"""\
# The retrieval gate (`sweep init`): on a pull request that touches the corpus, the golden set or
# the configuration, score the default configuration against evals/baseline.json.
name: retrieval-gate

# SET ONCE: where pip gets chunk-sweep (it is not on PyPI): a wheel committed to this
# repository (`make wheel` in chunk-sweep's clone builds it), a VCS reference such as
# git+https://host/you/chunk-sweep@v0.1.0, or its name on your team's package index.
env:
  CHUNK_SWEEP_INSTALL: {install_value}

on:
  pull_request:
    paths:
{gh_paths}
jobs:
  gate:
    runs-on: ubuntu-latest
    env:
      HF_HUB_OFFLINE: "1"
      # Seals the gate's memo, so that a job without it cannot write one this job accepts.
      CHUNK_SWEEP_MEMO_SECRET: ${{{{ secrets.CHUNK_SWEEP_MEMO_SECRET }}}}
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: install
        # the CPU build of torch first; then chunk-sweep from CHUNK_SWEEP_INSTALL (above)
        run: |
          pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
          pip install "$CHUNK_SWEEP_INSTALL"
      - uses: actions/cache@v4
        with:
          path: .cache
          key: chunk-sweep-${{{{ hashFiles('conf/**', 'golden/**', 'evals/**') }}}}
          restore-keys: chunk-sweep-
      - run: sweep baseline check tracking=off
"""


def _gitlab_ci(gl_paths: str, install_value: str) -> str:
    """.gitlab-ci.yml: the gate on merge requests."""
    return f"""\
# The retrieval gate (`sweep init`): see .github/workflows/retrieval-gate.yml.
retrieval-gate:
  image: python:3.11
  variables:
    # SET ONCE: where pip gets chunk-sweep (it is not on PyPI): a wheel committed to this
    # repository (`make wheel` in chunk-sweep's clone builds it), a VCS reference such as
    # git+https://host/you/chunk-sweep@v0.1.0, or its name on your team's package index.
    CHUNK_SWEEP_INSTALL: {install_value}
    HF_HUB_OFFLINE: "1"
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
      changes:
{gl_paths}
  cache:
    key: chunk-sweep
    paths:
      - .cache/
  script:
    - pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
    - pip install "$CHUNK_SWEEP_INSTALL"
    - sweep baseline check tracking=off
"""


def existing(root: Path, files: Sequence[str]) -> list[str]:
    return [rel for rel in files if os.path.lexists(root / rel)]


def blocked(root: Path, files: Sequence[str], folders: Sequence[str] = (),
            theirs: Sequence[str] = ()) -> list[str]:
    """Why the targets cannot be written, before anything is: a folder on the way to one of
    ``files`` or ``folders`` (those included) that is a file or that leads out of ``root`` (a
    ``conf/`` or ``.github/`` that is a symbolic link to a folder elsewhere); one of
    ``theirs`` (a corpus folder, created only when missing, and free to live elsewhere) that
    is a file. Empty when every target can be written."""
    walks = [Path(rel).parts[:-1] for rel in files] + [Path(rel).parts for rel in folders]
    problems: list[str] = []
    for parts in walks:
        for i in range(1, len(parts) + 1):
            step, shown = root.joinpath(*parts[:i]), "/".join(parts[:i])
            if not os.path.lexists(step):
                break
            real = resolve_user_path(step, shown)
            if not real.is_relative_to(root):
                problems.append(f"{shown} leads outside the project (to {real})")
                break
            if not real.is_dir():
                problems.append(f"{shown} is a file where a folder must be")
                break
    for rel in theirs:
        if os.path.lexists(root / rel) and not resolve_user_path(root / rel, rel).is_dir():
            problems.append(f"{rel} is a file where a folder must be")
    return list(dict.fromkeys(problems))


def write_project(root: Path, files: dict[str, str], folders: Sequence[str] = ()) -> list[str]:
    """Write every file, or none (`SweepError` names why): not when one exists, when a folder
    it goes in is a file or leads outside ``root``. Also the ``conf/experiment`` link to
    ``experiments/``, ``folders`` (created when missing: the corpus) and a ``.gitignore`` when
    there is none.
    A write that fails part-way removes what it wrote. Returns what was written."""
    gitignore = not os.path.lexists(root / ".gitignore")
    taken = existing(root, [*files, "conf/experiment"])
    if taken:
        raise SweepError("sweep init writes nothing over existing files: " + ", ".join(taken),
                         hint="move them away, or run sweep init in another folder")
    targets = [*files, *([".gitignore"] if gitignore else []), "conf/experiment"]
    problems = blocked(root, targets, ["experiments/winners"], folders)
    if problems:
        raise SweepError("sweep init writes nothing: " + "; ".join(problems),
                         hint="move them away, or run sweep init in another folder")
    made: list[Path] = []  # in creation order, removed in reverse if a write fails

    def mkdirs(folder: Path) -> None:
        missing = [p for p in [folder, *folder.parents] if not os.path.lexists(p)]
        for p in reversed(missing):
            p.mkdir()
            made.append(p)

    def write(path: Path, text: str) -> None:
        mkdirs(path.parent)
        with path.open("x", encoding="utf-8") as fh:  # "x": never over a file that appeared
            made.append(path)
            fh.write(text)

    written = list(files)
    try:
        for rel, text in files.items():
            write(root / rel, text)
        # experiments/ is the `experiment` group, as in chunk-sweep's clone (conf/experiment
        # -> ../experiments); `sweep export` writes winners to experiments/winners/.
        for folder in ["experiments/winners", *folders]:
            mkdirs(root / folder)
        link = root / "conf" / "experiment"
        link.symlink_to(Path("..") / "experiments", target_is_directory=True)
        made.append(link)
        written.append("conf/experiment -> ../experiments")
        if gitignore:
            write(root / ".gitignore", "\n".join(GITIGNORE) + "\n")
            written.append(".gitignore")
    except BaseException as exc:
        for path in reversed(made):
            with contextlib.suppress(OSError):  # a folder someone else wrote into stays
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()
                else:
                    path.unlink()
        if not isinstance(exc, OSError):
            raise
        where = os.path.relpath(exc.filename, root) if exc.filename else "the project"
        raise SweepError(f"sweep init: cannot write {where} ({exc.strerror or exc}); "
                         "nothing was left behind") from None
    return written
