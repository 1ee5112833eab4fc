"""Where the package, its bundled configuration and demo, and the project it runs for live.

Two layouts:

- **a clone** (an editable install from ``src/``): the clone's root holds ``conf/``,
  ``experiments/``, ``evals/``, ``data/demo`` and ``.cache``, as it always has;
- **an installed wheel**: the package carries ``sweep/conf`` (the configuration groups and
  the shipped experiments) and ``sweep/demo`` (the demo corpus and golden set); the project is
  the nearest folder from the working one up that holds a ``conf/`` (`project_root`), whose
  own ``conf/`` is layered over the bundled one on
  Hydra's search path (``hydra_plugins/chunk_sweep_searchpath``) and which receives
  ``experiments/winners/``, ``evals/``, ``.cache`` and ``mlflow.db``.

In the clone, ``src/sweep/conf`` and ``src/sweep/demo`` are symbolic links to ``conf/`` and
``data/demo`` (setuptools follows them into the wheel), but the clone's own folders are used
directly, so a checkout without symbolic links still runs.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
# The clone's root, when the package is imported from a clone's src/.
CLONE_ROOT = PACKAGE_DIR.parent.parent
# `sweep init` writes conf/project/; a folder holding one is a user's project even when the
# package is imported from a clone (an editable install used from another repository).
PROJECT_MARKER = Path("conf") / "project"
ROOT_ENV = "CHUNK_SWEEP_PROJECT_ROOT"


def in_clone() -> bool:
    """True when the package is imported from a clone of chunk-sweep (not an installed wheel)."""
    return (CLONE_ROOT / "pyproject.toml").is_file() and (CLONE_ROOT / "conf" / "config.yaml"
                                                          ).is_file()


def find_project(start: Path, marker: Path = Path("conf")) -> Path | None:
    """The nearest folder from ``start`` up holding ``marker`` (a project's ``conf/``, or
    `PROJECT_MARKER`), so a command run from a sub-folder (``cd docs && sweep validate``)
    works for the project; the search stops at the top of a git repository, so a ``conf/``
    above the user's repository is never taken for theirs. None when there is none."""
    for folder in (start, *start.parents):
        if (folder / marker).is_dir():
            return folder
        if (folder / ".git").exists():
            return None
    return None


def project_root(cwd: Path | None = None) -> Path:
    """The project the command works for: ``$CHUNK_SWEEP_PROJECT_ROOT``; else the nearest
    folder from the working folder up with ``conf/project/`` (`sweep init`'s marker); else,
    with the package installed, the nearest one with ``conf/``, or the working folder itself
    (then the bundled demo configuration is used, and `no_project_note` says so); in a clone,
    the clone."""
    env = os.environ.get(ROOT_ENV)
    if env:
        return Path(env).resolve()
    here = (cwd or Path.cwd()).resolve()
    marked = find_project(here, PROJECT_MARKER)
    if marked is not None:
        return marked
    if not in_clone():
        return find_project(here) or here
    return CLONE_ROOT


def no_project_note(cwd: Path | None = None) -> str | None:
    """One line when a command outside a clone found no project (no ``conf/`` from the working
    folder up): it runs on the bundled demo's configuration, which is never silent."""
    if os.environ.get(ROOT_ENV) or in_clone():
        return None
    here = (cwd or Path.cwd()).resolve()
    if find_project(here) is not None:
        return None
    return (f"note: no conf/ in {here} or any folder above it (up to the repository's top): "
            "using chunk-sweep's bundled demo configuration; `sweep init` makes this folder a "
            "project, or run the command from the project's folder")


# Read once, at import: every command runs for one project.
PROJECT_ROOT = project_root()


def bundled_conf_path() -> Path:
    """The configuration the package ships (the clone's ``conf/`` in a clone)."""
    return (CLONE_ROOT / "conf" if in_clone() else PACKAGE_DIR / "conf").resolve()


def demo_path() -> Path:
    """The bundled demo folder (corpus/, golden.jsonl and its reference sidecar)."""
    return (CLONE_ROOT / "data" / "demo" if in_clone() else PACKAGE_DIR / "demo").resolve()


def conf_path() -> Path:
    """Where the primary ``conf/`` folder should be (``$CHUNK_SWEEP_CONF_DIR`` overrides it),
    whether or not it is there (``sweep.config.schema.conf_dir`` checks)."""
    env = os.environ.get("CHUNK_SWEEP_CONF_DIR")
    return Path(env).resolve() if env else bundled_conf_path()


def user_conf_path() -> Path | None:
    """The project's own ``conf/``, layered over the primary one; None when there is none or
    when it is the bundled one (the clone run for itself, also under $CHUNK_SWEEP_CONF_DIR)."""
    user = (PROJECT_ROOT / "conf").resolve()
    if not user.is_dir() or user in (conf_path(), bundled_conf_path()):
        return None
    return user


def resolve_user_path(path: str | os.PathLike[str], setting: str | None = None) -> Path:
    """``path`` made absolute with symbolic links followed, as `Path.resolve` does, but a path
    that cannot be resolved (a symlink loop: Python 3.11 raises RuntimeError, later versions
    OSError) is one `SweepError` line naming ``setting`` and the path instead of a traceback.
    Every path a user gives (golden.path, corpus.path, cache.dir, --out) goes through this."""
    from sweep.common.errors import SweepError

    where = f"{setting}={os.fspath(path)!r}" if setting else os.fspath(path)
    try:
        return Path(path).resolve()
    except RuntimeError as exc:  # "Symlink loop from ...": the only RuntimeError it raises
        raise SweepError(f"{where}: a symlink loop (it never reaches a file or folder)"
                         ) from exc
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP:
            raise SweepError(f"{where}: a symlink loop (it never reaches a file or folder)"
                             ) from exc
        raise SweepError(f"{where}: cannot resolve ({exc.strerror or exc})") from exc


def unwritable_output(path: str | os.PathLike[str]) -> str | None:
    """Why Hydra could not create the output folder ``path`` (its nearest existing folder is
    not a writable folder), in one line; None when it can."""
    target = Path(path).absolute()
    existing = next((p for p in [target, *target.parents] if p.exists()), None)
    if existing is None or not existing.is_dir() or not os.access(existing, os.W_OK):
        return (f"cannot create the output folder {target}: {existing} is not a writable "
                "folder (set hydra.run.dir / hydra.sweep.dir elsewhere)")
    return None
