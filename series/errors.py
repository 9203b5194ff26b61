"""The three ways a command ends badly, and what the user sees for each.

Exit codes follow StGit: 1 the user can fix it, 2 usage (click), 3 conflict, 4 a bug.
A bug gets a log file with versions and the traceback, never the environment, so a
GitHub token can never end up in it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from series.cache import user_cache

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CONFLICT = 3
EXIT_BUG = 4
EXIT_WORSE = 5  # series test --run: a test is worse than on the base release (1 stays 'an error you can fix')
EXIT_WARNINGS = 6  # series check: warnings and no problem (1 stays 'a problem to fix', so CI can tell them apart)


class SeriesError(Exception):
    """A mistake the user can fix: bad input, unknown ref, dirty worktree, network.

    `message` says what was refused and why, in one line; `hint`, when there is one, says
    how to go on (the flag, the command to run) and is printed on a line of its own, as
    git prints its `hint:` lines. str() is the message alone; `text` carries both in one
    line, for a caller that words the error into a report or another error."""

    exit_code = EXIT_ERROR

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    @property
    def text(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConflictError(SeriesError):
    """A rebase or adopt stopped on a conflict; the message says how to go on."""

    exit_code = EXIT_CONFLICT


# Credentials this process holds (the GitHub token): whatever series prints or writes
# about an error passes through redact() first, so no code path can leak one.
_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    if len(value) >= 4:
        _SECRETS.add(value)


def redact(text: str) -> str:
    for secret in _SECRETS:
        text = text.replace(secret, "[token]")
    return text


def log_dir() -> Path:
    return user_cache("logs", "SERIES_LOG_DIR")


def write_bug_log(exc: BaseException) -> Path:
    """Write versions, the command line and the traceback; return the file's path."""
    import datetime  # here, not at the top: every command imports this module, few write a log
    import platform
    import traceback

    import pygit2

    from series import __version__

    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S")
    path = directory / f"series-{stamp}-{os.getpid()}.log"
    lines = [
        f"series {__version__}",
        f"python {platform.python_version()} ({sys.executable})",
        f"pygit2 {getattr(pygit2, '__version__', '?')}, libgit2 {pygit2.LIBGIT2_VERSION}",
        f"platform {platform.platform()}",
        f"argv {' '.join(sys.argv[1:])}",
        "",
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    ]
    path.write_text(redact("\n".join(lines)))
    return path
