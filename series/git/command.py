"""The one door to the git binary.

Used only where the user's own git setup matters: fetch and push (their credentials,
proxies), range-diff, rerere, worktrees, and update-ref --stdin (atomic multi-ref moves
that honour their reflog settings and reference-transaction hooks). Everything else is
pygit2. Inherited GIT_* variables that point git at another repository are dropped, so a
hook or an outer `git rebase -x` cannot redirect us.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from pathlib import Path

from series.errors import SeriesError

log = logging.getLogger("series.git")

# Identity and date variables are the user's to set; location variables are not ours.
_KEEP = {
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_TERMINAL_PROMPT",
    "GIT_TRACE",
    "GIT_EDITOR",
}


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP}
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    if extra:
        env.update(extra)
    return env


# Commands that talk to a remote: a remote name or object id from outside that reads as
# an option (--upload-pack=...) would run a program, so their callers must end options.
_TRANSPORT = {"fetch", "push", "ls-remote", "clone", "pull"}


def _subcommand(args: tuple[str, ...]) -> str | None:
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def git(
    cwd: Path, *args: str, input: str | None = None, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run git in `cwd`; a failure becomes a SeriesError with git's own last line.

    Values from outside (series.yaml, an API answer) go after `--end-of-options` (or
    `--` where git takes paths): for the transport commands that is enforced here.
    """
    if _subcommand(args) in _TRANSPORT and "--end-of-options" not in args:
        raise AssertionError(f"git {_subcommand(args)} without --end-of-options: {shlex.join(args)}")
    log.debug("$ git %s", shlex.join(args))
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            env=clean_env(env),
        )
    except FileNotFoundError:
        raise SeriesError("git is not installed or not on PATH") from None
    if check and proc.returncode != 0:
        detail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        last = detail[-1] if detail else f"exit {proc.returncode}"
        raise SeriesError(f"git {args[0]} failed: {last}")
    return proc


def git_many(cwd: Path, commands: list[tuple[str, ...]], width: int = 4) -> list[subprocess.CompletedProcess[str]]:
    """Run independent read-only git commands side by side, `width` at a time; their
    results in order, unchecked. For work like one range-diff per topic, where the git
    processes, not this one, do the work."""
    for args in commands:
        if _subcommand(args) in _TRANSPORT:
            raise AssertionError(f"git {_subcommand(args)} is not run side by side: {shlex.join(args)}")
    done: list[subprocess.CompletedProcess[str]] = []
    for start in range(0, len(commands), width):
        batch = commands[start : start + width]
        for args in batch:
            log.debug("$ git %s &", shlex.join(args))
        try:
            procs = [
                subprocess.Popen(
                    ["git", *args],
                    cwd=cwd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    env=clean_env(),
                )
                for args in batch
            ]
        except FileNotFoundError:
            raise SeriesError("git is not installed or not on PATH") from None
        for args, proc in zip(batch, procs):
            out, err = proc.communicate()
            done.append(subprocess.CompletedProcess(["git", *args], proc.returncode, out, err))
    return done
