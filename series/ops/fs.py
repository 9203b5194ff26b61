"""Files of ours on disk: where the state dir is, the one atomic write, the one lock.

Every file the tool replaces (series.yaml, the journal, the halted state, reports, caches,
conflict records, packs it hands git) is written through `write_atomically` (or its two
halves, `stage` and `replace_staged`, where something must happen between them): readers
see the old content or the new, never a part, and a full disk leaves the old. The
temporary file beside the target is created with O_CREAT|O_EXCL, so a file or symlink
planted at its name is never written through: a stale one is removed (unlink does not
follow a link) and the name created afresh, once.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import socket
from pathlib import Path
from typing import BinaryIO, Iterator

import pygit2

from series.ops import faults
from series.errors import SeriesError
from series.git import checkouts


def state_dir(repo: pygit2.Repository) -> Path:
    """.git/series/ of the main repository (shared by all worktrees)."""
    directory = checkouts.common_dir(repo) / "series"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def read_text(path: Path) -> str | None:
    """A file of ours as text, None if it does not exist (CRLF kept: the editor keeps it)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


# -- the one atomic write -------------------------------------------------------------------------


def _create(tmp: Path) -> int:
    """A new file at `tmp`, never one already there (O_EXCL does not follow a symlink).
    0o666 before the umask: the mode a plain open() gives, as the writes had before."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(tmp, flags, 0o666)
    except FileExistsError:
        tmp.unlink()  # left by a killed write (or planted): the link goes, not its target
        return os.open(tmp, flags, 0o666)


@contextlib.contextmanager
def replacing(
    path: Path, tmp: Path | None = None, *, mode: int | None = None, buffering: int = -1
) -> Iterator[BinaryIO]:
    """Stream the new content of `path` into a file beside it; on a clean exit it is
    renamed over `path` (with `mode`, if given), on an exception removed and `path` left."""
    tmp = tmp or path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with _staging(path, tmp, mode, buffering) as out:
        yield out
    replace_staged(tmp, path)


@contextlib.contextmanager
def _staging(path: Path, tmp: Path, mode: int | None, buffering: int = -1) -> Iterator[BinaryIO]:
    fd = _create(tmp)
    try:
        with os.fdopen(fd, "wb", buffering) as out:
            faults.disk(path)
            yield out
            if mode is not None:
                os.fchmod(out.fileno(), mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def stage(path: Path, data: str | bytes, tmp: Path | None = None, *, mode: int | None = None) -> Path:
    """The first half of an atomic write: `data` (text as UTF-8, newlines as given) in a
    file beside `path`, the half a full disk stops. The transaction stages series.yaml
    before any ref moves."""
    tmp = tmp or path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with _staging(path, tmp, mode) as out:
        out.write(data.encode("utf-8") if isinstance(data, str) else data)
    return tmp


def replace_staged(tmp: Path, path: Path) -> None:
    """The second half: the staged file over `path` in one rename (which still fails on an
    immutable or busy file, even as root)."""
    try:
        faults.replace(path)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomically(path: Path, data: str | bytes, *, mode: int | None = None, tmp: Path | None = None) -> None:
    """Readers see the old content or the new, never a part (a full disk leaves the old)."""
    replace_staged(stage(path, data, tmp, mode=mode), path)


# -- the lock -------------------------------------------------------------------------------------


class Lock:
    """One series operation at a time per repository: a kernel lock (fcntl.flock) on
    .git/series/lock, so a killed process can never leave it held. The file keeps the
    holder's command, pid and host for the message another command prints; it is never
    removed (removing a flock'd file lets two processes lock two different files).
    Re-entrant within a process: an operation that calls another's code keeps the lock."""

    _held: dict[str, list[int]] = {}  # path -> [fd, depth]

    def __init__(self, repo: pygit2.Repository, command: str = "series"):
        self.path = state_dir(repo) / "lock"
        self.command = command

    def __enter__(self) -> "Lock":
        key = str(self.path)
        if key in Lock._held:
            Lock._held[key][1] += 1
            return self
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SeriesError(
                f"{self.path}: cannot open the lock file ({exc.strerror}); check the permissions of .git/series"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            raise SeriesError(
                f"another series command is running in this repository ({holder or 'its holder is starting'}); "
                "wait for it to finish (the lock goes when that process ends, even if it is killed)"
            ) from None
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        try:  # the kernel lock is what counts: a full disk only loses the holder line
            os.ftruncate(fd, 0)
            os.pwrite(
                fd, f"series {self.command}, pid {os.getpid()} on {socket.gethostname()}, since {stamp}\n".encode(), 0
            )
        except OSError:
            pass
        Lock._held[key] = [fd, 1]
        return self

    def __exit__(self, *exc: object) -> None:
        key = str(self.path)
        entry = Lock._held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del Lock._held[key]
        try:
            os.ftruncate(entry[0], 0)
        except OSError:
            pass
        fcntl.flock(entry[0], fcntl.LOCK_UN)
        os.close(entry[0])
