"""A corpus folder as it was at a git revision: `sweep golden rebase --old HEAD~20`.

Git itself reads the revision (``git archive``, through subprocess): the files are exactly
what was committed, with no checkout touching the working tree. The archive is unpacked into
a temporary folder that the caller owns, and the corpus loader reads it like any folder. A
committed symbolic link that leads out of the tree (an absolute target, or ``../..`` past the
top) is not extracted: a warning names it, the rest of the revision is read.
"""

from __future__ import annotations

import io
import logging
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from sweep.common.errors import SweepError, one_line

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CorpusSource:
    folder: Path  # a folder to load the corpus from
    label: str  # what the user gave, as reports show it
    revision: str = ""  # the commit id when it came from git


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    if git is None:
        raise SweepError("git is not installed: give the corpus versions as folders")
    return subprocess.run([git, *args], cwd=cwd, capture_output=True, check=False)


def corpus_at(value: str, corpus_dir: str | Path, tmp: Path) -> CorpusSource:
    """``value`` as a corpus: an existing folder, else a git revision of ``corpus_dir`` (a
    folder inside a git working tree) unpacked under ``tmp``."""
    if Path(value).is_dir():
        return CorpusSource(Path(value), value)
    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        raise SweepError(f"{value!r} is not a folder, and the corpus folder {corpus_dir} (the "
                         "folder whose git history it would name) does not exist",
                         hint="give --corpus DIR inside a git repository, or folders")
    top = _git(["rev-parse", "--show-toplevel"], corpus_dir)
    if top.returncode != 0:
        raise SweepError(f"{value!r} is not a folder, and {corpus_dir} is not inside a git "
                         "repository to read it as a revision from")
    prefix = _git(["rev-parse", "--show-prefix"], corpus_dir).stdout.decode().strip()
    rev = _git(["rev-parse", "--verify", "--quiet", f"{value}^{{commit}}"], corpus_dir)
    if rev.returncode != 0:
        raise SweepError(f"{value!r} is neither a folder nor a git revision of "
                         f"{top.stdout.decode().strip()}")
    sha = rev.stdout.decode().strip()
    # From the top, so the archive's paths are the repository's (prefix included).
    archive = _git(["archive", "--format=tar", sha, "--", prefix or "."],
                   Path(top.stdout.decode().strip()))
    if archive.returncode != 0:
        message = " ".join(archive.stderr.decode(errors="replace").split())
        raise SweepError(f"{value} ({sha[:10]}): {prefix or 'the repository'} cannot be read "
                         f"at that revision ({message})")
    root = tmp / sha[:12]
    root.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []

    def inside_only(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        # tarfile's "data" filter (no links out of the folder, no odd modes), but a member
        # it refuses is left out with a warning instead of ending the command in a traceback
        try:
            return tarfile.data_filter(member, dest)
        except tarfile.FilterError as exc:
            skipped.append(member.name)
            log.warning("%s (%s): %s not extracted: %s", one_line(value), sha[:10],
                        one_line(member.name), one_line(str(exc)))
            return None

    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(root, filter=inside_only)
    folder = root / prefix if prefix else root
    if not folder.is_dir():
        raise SweepError(f"{value} ({sha[:10]}): {prefix} holds no files at that revision")
    return CorpusSource(folder, f"{value} ({sha[:10]}) of {prefix.rstrip('/') or '.'}", sha)
