"""Replacing a file so that a crash leaves the old one or the new one, never half of either;
and the identity of a file or folder read from disk.

``atomic_write`` is used for everything the tool overwrites: job reports, the golden file the
labelling page edits, the baseline, exported winners.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from sweep.common.errors import SweepError, one_line


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open a folder; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# The blocks of `folder_syncs_once` open in each thread (a stack): each holds the folders
# whose fsync waits for its end, and, in a parallel block, the writes still under way.
_HELD = threading.local()


@dataclass
class _Block:
    folders: set[Path] = field(default_factory=set)
    pool: Any = None  # a parallel block's ThreadPoolExecutor
    writes: list[Any] = field(default_factory=list)  # its writes' futures, in call order
    last: dict[Path, Any] = field(default_factory=dict)  # each path's latest write's future


@contextlib.contextmanager
def folder_syncs_once(*, parallel: bool = False) -> Iterator[None]:
    """`atomic_write`s inside the block fsync each folder once, at the block's end (also on an
    error), not once per file: each file still reaches the disk before its rename, and the
    renames together after. A job folder's five files cost six fsyncs instead of ten (about
    0.1 s of a warm job on this machine's disk).

    ``parallel``: each `atomic_write` of the block (this thread's) hands its file to a thread
    of the block and returns, so that the caller makes the next file's text while the disk
    takes the last (a file's fsync waits on the disk, not on this process); the block's end
    waits for every write, raises the first failed one's error (unless the body raised its
    own), and then fsyncs the folders. Each file is written as `atomic_write` writes it, so
    whatever a crash leaves is the old file or the new one; a file written twice is written
    in that order. Only the writes' effects are deferred: the caller must not read the files
    back inside the block."""
    stack: list[_Block] = _HELD.__dict__.setdefault("stack", [])
    block = _Block()
    if parallel:
        from concurrent.futures import ThreadPoolExecutor

        block.pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="atomic-write")
    stack.append(block)
    body_failed = True
    try:
        yield
        body_failed = False
    finally:
        stack.pop()
        try:
            if block.pool is not None:
                block.pool.shutdown(wait=True)
                failed = [e for e in (w.exception() for w in block.writes) if e is not None]
                if failed and not body_failed:  # else the body's own error goes on up
                    raise failed[0]
        finally:
            for folder in sorted(block.folders):
                fsync_dir(folder)


def atomic_write(path: Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` (str as UTF-8, line ends as given): a temporary file in the
    same folder, fsync, the old file's permissions, rename, fsync of the folder (at the end of
    an enclosing `folder_syncs_once` block; in a parallel block, the rest too)."""
    held = _HELD.__dict__.get("stack")
    if not held:
        _replace(path, data)
        fsync_dir(path.parent)
        return
    block = held[-1]
    block.folders.add(path.parent)
    if block.pool is None:
        _replace(path, data)
    else:
        earlier = block.last.get(path)
        if earlier is not None:  # a file written twice in the block: the later text wins
            from concurrent.futures import wait

            wait([earlier])
        write = block.last[path] = block.pool.submit(_replace, path, data)
        block.writes.append(write)


def _replace(path: Path, data: bytes | str) -> None:
    """`atomic_write` but for the folder's fsync."""
    import shutil  # here: the gate's memo reads through this module on every check
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


class NotRegularFile(SweepError, OSError):
    """A path that is there but is no regular file (a FIFO, a device, a folder, a symlink
    loop). An OSError too, so a reader that already turns OSError into "unreadable" keeps
    doing so; a reader that does not gets a one-line `SweepError`."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.strerror = self.message


def open_regular(path: str | Path, shown: str | None = None) -> BinaryIO:
    """``path`` opened for reading in binary if it is a regular file (or a symlink to one).

    A FIFO, a socket, a device, a folder or a symlink loop raises `NotRegularFile` naming
    ``shown`` (default: the path) and what it is. The open itself does not block: opening a
    FIFO for reading otherwise waits for a writer forever (a restored CI cache can hold one
    where the gate memo should be). A missing or unreadable file raises the usual OSError, so
    callers keep telling "not there" from "not readable". Every reader of a user or cache file
    goes through this (or `read_bytes_regular`, `read_text_regular`, `read_regular`)."""
    name = one_line(shown if shown is not None else os.fspath(path))
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(f"{name}: a symlink loop (it never reaches a file)") from None
        if exc.errno == errno.EISDIR:
            raise NotRegularFile(f"{name}: a folder, not a file") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((k for test, k in _KINDS if test(mode)), "not a regular file")
            raise NotRegularFile(f"{name}: {kind}, not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes_regular(path: str | Path, shown: str | None = None) -> bytes:
    """The bytes of a regular file; see `open_regular` for what is refused and how."""
    with open_regular(path, shown) as fh:
        return fh.read()


def read_text_regular(path: str | Path, shown: str | None = None, *, encoding: str = "utf-8",
                      errors: str = "strict") -> str:
    """The text of a regular file, decoded (universal newlines, as `Path.read_text`)."""
    import io

    with open_regular(path, shown) as fh:
        return io.TextIOWrapper(fh, encoding=encoding, errors=errors).read()


def read_regular(path: Path, shown: str | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file (or a symlink to one), else a one-line
    `SweepError` naming ``shown`` (default: the path) and what it is: a folder, a FIFO, a
    device, a symlink loop, missing, unreadable."""
    try:
        return read_bytes_regular(path, shown)
    except NotRegularFile:
        raise
    except OSError as exc:
        name = one_line(shown if shown is not None else str(path))
        raise SweepError(f"{name}: cannot read ({exc.strerror or exc})") from None


# (path, size, mtime, ctime, inode) -> sha256: a model folder is read whole once per process.
# ctime is in the key because no user call sets it: an edit that restores the mtime still moves it.
_FILE_DIGESTS: dict[tuple[str, int, int, int, int], bytes] = {}

# Files at least this large have their digest kept on disk too (`folder_signature`'s
# ``memo``): hashing MiniLM's 91 MB of weights was ~0.1 s of every warm sweep's first job.
# Smaller files hash faster than a lookup.
DIGEST_MEMO_MIN_BYTES = 2**20
# The memo's folder inside a cache folder (`sweep cache clear` empties it).
DIGESTS_FOLDER = "file_digests"


def _stamp_name(stamp: tuple[str, int, int, int, int]) -> str:
    """The memo file of a file's stat stamp, on this machine (inodes and ctimes are local)."""
    return hashlib.sha256(repr((os.uname().nodename, *stamp)).encode()).hexdigest()[:32]


def _file_digest(f: Path, stamp: tuple[str, int, int, int, int], memo: Path | None) -> bytes:
    """sha256 of ``f``'s bytes, from the process memo, else the disk memo (large files with
    ``memo``), else read; what was read is remembered in both."""
    if stamp in _FILE_DIGESTS:
        return _FILE_DIGESTS[stamp]
    kept = memo / _stamp_name(stamp) if memo is not None and stamp[1] >= DIGEST_MEMO_MIN_BYTES \
        else None
    digest = None
    if kept is not None:
        with contextlib.suppress(OSError, ValueError):
            raw = read_bytes_regular(kept)
            digest = bytes.fromhex(raw.decode("ascii")) if len(raw) == 64 else None
    if digest is None:
        with open_regular(f) as fh:
            digest = hashlib.file_digest(fh, "sha256").digest()
        if kept is not None:
            with contextlib.suppress(OSError):  # only a lost saving: read again next time
                atomic_write(kept, digest.hex())
    _FILE_DIGESTS[stamp] = digest
    return digest


def folder_signature(path: str, memo: Path | None = None) -> str:
    """Identity of a model folder: file names, sizes and the sha256 of every byte (weights
    changed past their first bytes are another model; a fine-tune keeps the size). Each file is
    read once per process while its stat is unchanged, and with ``memo`` (a folder: the
    caller's cache) a large file once while its stat is unchanged: its digest is kept there
    under a hash of (machine, path, size, mtime, ctime, inode). Any write to the file moves
    its ctime, which no user call can set back, so a kept digest is never a changed file's.
    A path that does not exist (a hub id) is its own identity."""
    p = Path(path)
    if not p.exists():
        return path  # a hub id: its name is the best identity we have offline
    h = hashlib.sha256()
    for f in sorted(x for x in p.rglob("*") if x.is_file() and ".cache" not in x.parts):
        st = f.stat()
        h.update(str(f.relative_to(p)).encode())
        h.update(str(st.st_size).encode())
        stamp = (str(f), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        h.update(_file_digest(f, stamp, memo))
    return h.hexdigest()


def content_digest(path: str | Path) -> str:
    """sha256 over every byte under ``path``: a file's content, or a folder's files (symbolic
    links followed, ``__pycache__`` left out) with their paths relative to it, in sorted
    order. ``"missing"`` when nothing is there. Any edit, added or removed file changes it."""
    root = os.fspath(path)
    if os.path.isfile(root):
        files = [(os.path.basename(root), root)]
    elif os.path.isdir(root):
        # os.walk and plain strings: the gate's memo digests its inputs on every check, and
        # pathlib's objects cost more than the hashing
        cut = len(root.rstrip(os.sep)) + 1
        files = []
        seen: set[str] = set()
        for top, dirs, names in os.walk(root, followlinks=True):
            real = os.path.realpath(top)
            if real in seen or "__pycache__" in top:  # a link back up the tree: once is enough
                dirs[:] = []
                continue
            seen.add(real)
            files.extend((full[cut:], full) for full in (os.path.join(top, n) for n in names))
        files.sort()
    else:
        return "missing"
    h = hashlib.sha256()
    for rel, full in files:
        with open_regular(full) as fh:  # streamed: a corpus file may be hundreds of MB
            h.update(rel.encode("utf-8", "surrogateescape") + b"\0"
                     + hashlib.file_digest(fh, "sha256").digest())
    return h.hexdigest()
