"""Tests that fail when the lock and the atomic write are wrong in small ways (issue 37:
each kills a mutant that survived; tools/mutate.py finds more)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pygit2

from series.ops import fs


def _free(path: Path) -> bool:
    """Whether another open file description can take the lock now (flock is per open
    file, so this sees a holder in this process as another process would)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_the_lock_is_held_until_the_outermost_exit_and_then_released(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"))
    outer = fs.Lock(repo, "outer")
    with outer:
        with fs.Lock(repo, "inner"):  # re-entrant: an operation calling another's code
            assert not _free(outer.path)
        assert not _free(outer.path), "the inner exit released the outer operation's lock"
    assert _free(outer.path), "the lock is still held after the operation ended"


def test_the_lock_leaves_no_file_descriptor_open(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"))
    fs.state_dir(repo)
    lock = fs.Lock(repo, "x")
    for _ in range(3):
        with fs.Lock(repo, "x"):
            pass
    # only the lock file's own descriptors: other threads of the test process (xdist's, a
    # server's) open and close fds of their own meanwhile
    held = [
        fd
        for fd in os.listdir("/proc/self/fd")
        if os.path.realpath(f"/proc/self/fd/{fd}") == os.path.realpath(lock.path)
    ]
    assert held == [], held  # one fd per command left open would run out in a long process


def test_a_holder_that_has_not_written_its_line_yet_is_said_to_be_starting(tmp_path: Path) -> None:
    """The lock file is emptied when released: another command that finds the lock taken
    before its holder wrote who it is says so, not a leftover of the previous holder."""
    import pytest

    from series.errors import SeriesError

    repo = pygit2.init_repository(str(tmp_path / "r"))
    lock = fs.Lock(repo, "first")
    with lock:
        pass
    fd = os.open(lock.path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a holder that has only just taken it
        with pytest.raises(SeriesError, match=r"\(its holder is starting\)"):
            with fs.Lock(repo, "second"):
                pass
    finally:
        os.close(fd)
