"""Named fault points, so tests can prove that no kill and no full disk loses work.

    SERIES_FAULT=<point>          the process exits (99) at that point
    SERIES_FAULT_GROUP=1          ... by SIGKILL of its whole process group (git children
                                  too), as a CI cancellation does
    SERIES_FAULT=enospc:<name>    writing a file called <name>, or in a directory called
                                  <name>, fails: no space left
    SERIES_FAULT=ebusy:<name>     replacing a file called <name> fails (EBUSY; eperm:<name>
                                  fails as over an immutable file), after it was written
    SERIES_PAUSE=<point>          wait at that point while SERIES_PAUSE_FILE exists (the
                                  test creates it, and removes it to let go), so a test can
                                  run another command while this one holds the lock
Nothing happens unless the variables are set.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path


def fault(point: str) -> None:
    if os.environ.get("SERIES_FAULT") == point:
        if os.environ.get("SERIES_FAULT_GROUP"):
            os.killpg(os.getpgid(0), signal.SIGKILL)
        os._exit(99)
    if os.environ.get("SERIES_PAUSE") == point:
        marker = Path(os.environ["SERIES_PAUSE_FILE"])
        (marker.parent / (marker.name + ".reached")).write_text(str(os.getpid()))
        while marker.exists():
            time.sleep(0.02)


def replace(path: Path) -> None:
    """Before renaming a written file over `path`: fail as a busy or immutable file does."""
    for code in (errno.EBUSY, errno.EPERM):
        if os.environ.get("SERIES_FAULT") == f"{errno.errorcode[code].lower()}:{path.name}":
            raise OSError(code, os.strerror(code), str(path))


def disk(path: Path) -> None:
    """Before writing `path`: fail as a full disk would, when a test asks."""
    if os.environ.get("SERIES_FAULT") in (f"enospc:{path.name}", f"enospc:{path.parent.name}"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
