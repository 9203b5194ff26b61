"""How text reaches the user's terminal: whether it is coloured, and the pager it goes through.

Set once by the global options (series.cli), read by emit() (series.cli_support). Click
stays there: this module decides, the CLI prints.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from series.errors import SeriesError


class Output:
    """The global output options, and what they mean for one stream.

    One mutable instance per process, set by the group's options: a plain class, not a
    dataclass, so `series --help` and a usage error do not import dataclasses (~1 ms)."""

    def __init__(self) -> None:
        self.quiet = False
        self.color = "auto"  # auto | always | never
        self.pager = True
        self.verbose = False
        self.directory: Path | None = None  # where core.pager is read, as git would (-C DIR)

    def colored(self, stream: object) -> bool:
        """The flag wins; under auto, NO_COLOR (no-color.org) beats CLICOLOR_FORCE
        (bixense.com/clicolors): a user who asked for no colour anywhere gets none."""
        if self.color != "auto":
            return self.color == "always"
        if os.environ.get("NO_COLOR"):
            return False
        if os.environ.get("CLICOLOR_FORCE", "0") != "0":
            return True
        return bool(getattr(stream, "isatty", lambda: False)()) and os.environ.get("TERM") != "dumb"

    def log_level(self) -> int:
        import logging  # here, not at the top: `series --help` never logs

        return logging.DEBUG if self.verbose else logging.ERROR if self.quiet else logging.WARNING

    def pager_command(self) -> str | None:
        """git's order (git_pager() in pager.c), with SERIES_PAGER first: a variable set
        to "" counts as set; "" or cat means no pager."""
        pager = next((os.environ[name] for name in ("SERIES_PAGER", "GIT_PAGER") if name in os.environ), None)
        if pager is None:
            pager = _core_pager(self.directory or Path.cwd())
        if pager is None:
            pager = os.environ.get("PAGER")
        if pager is None:
            import shutil  # here, not at the top: only a terminal's long output asks

            pager = "less" if shutil.which("less") else ""
        return None if pager.strip() in ("", "cat") else pager


def _core_pager(directory: Path) -> str | None:
    from series.git.command import git

    try:
        proc = git(directory, "config", "--get", "core.pager", check=False)
    except (SeriesError, OSError):  # no git, or no such directory: nothing configured
        return None
    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None


def page(pager: str, text: str) -> bool:
    """Pipe text through the pager as git does (a shell command, LESS=FRX and LV=-c unless
    set: quit when it fits, keep colour); False when it cannot start, so the text is printed."""
    import subprocess  # here, not at the top: only a long text on a terminal is paged

    env = {"LESS": "FRX", "LV": "-c", **os.environ}
    sys.stdout.flush()
    try:
        proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, env=env)  # noqa: S602 (the user's own command)
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode(sys.stdout.encoding or "utf-8", errors="replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the user quit the pager before the end
        pass
    while True:
        try:
            proc.wait()
            return True
        except KeyboardInterrupt:  # Ctrl-C belongs to the pager (less keeps running), as in git
            continue
