"""A halted operation, on disk: .git/series/rebase/state.json.

Written (atomically) whenever the operation halts or is about to move refs, so that
another shell, or the same command after the process was killed at any point, can go on
with `--continue` or put everything back with `--abort`.

Every operation that runs through the engine's resumable flow (a rebase, an adoption)
uses this one file. What it is and how to go on with it is data, not code: `halt` names
the operation's ending (`Halt.kind`, the identity the verb that resumes it hands in
again), the sentence the halt guard shows (`Halt.what`), the command that goes on
with it (`Halt.resume`) and the verb's own words for going on and stopping (`go_on`, `stop`), and the ending's own payload
(JSON that the ending validates when it reads it back). The engine never names a verb:
`halted_message()` words a refusal from that record alone, so any verb (or `series
status`) can say what is halted and how to go on without importing the one that halted.
Only one operation can be halted at a time: every other verb that moves refs or edits
series.yaml refuses meanwhile.

The rest of the record is the engine's (series.engine.rebase_state: each topic's run, the
phase), which it validates when it reads the record back; this module holds what the write
path needs of it: the file, the temporary refs that keep a halted operation's commits, and
the guard, which reads only `halt`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import pygit2

from series.ops import faults
from series.ops.fs import state_dir, write_atomically
from series.errors import SeriesError
from series.git import checkouts, refs
from series.persisted import Json, JsonObject, read_object, read_str

TEMP_PREFIX = "refs/series/rebase"
VERSION = 2  # 2: `halt` (the ending's identity and payload) replaced `kind` and `adoption`


@dataclass(frozen=True)
class Halt:
    """Which ending a halted operation has, in data (module docstring)."""

    kind: str  # the ending's identity: the resuming verb hands it in again
    what: str  # "a series rebase is in progress"
    resume: str  # "series rebase": the command that goes on with it
    payload: JsonObject = field(default_factory=dict)  # the ending's own data
    go_on: str = ""  # "series rebase --continue": the verb's words, as it handed them in
    stop: str = ""  # "series rebase --abort"

    def to_json(self) -> dict[str, Json]:
        return {
            "kind": self.kind,
            "what": self.what,
            "resume": self.resume,
            "payload": dict(self.payload),
            "go_on": self.go_on,
            "stop": self.stop,
        }

    @classmethod
    def from_json(cls, data: Json) -> "Halt":
        d = read_object(data, "halt")
        resume = read_str(d, "resume")
        # a record written before the verb handed its hints in: the two commands it meant
        go_on = read_str(d, "go_on") if "go_on" in d else f"{resume} --continue"
        stop = read_str(d, "stop") if "stop" in d else f"{resume} --abort"
        return cls(
            read_str(d, "kind"), read_str(d, "what"), resume, read_object(d.get("payload", {}), "payload"), go_on, stop
        )


# -- the halted operation in words, from its record alone ----------------------------------------


def halted_message(halt: Halt, verb: str) -> str:
    """The one-line refusal for `verb` while an operation is halted."""
    return f"{halt.what}: finish it with '{halt.go_on}' or '{halt.stop}' before '{verb}'"


def rebase_dir(repo: pygit2.Repository) -> Path:
    return state_dir(repo) / "rebase"


def worktree_path(repo: pygit2.Repository) -> Path:
    return rebase_dir(repo) / "worktree"


def state_file(repo: pygit2.Repository) -> Path:
    return rebase_dir(repo) / "state.json"


def unreadable(repo: pygit2.Repository, exc: Exception) -> SeriesError:
    return SeriesError(
        f"{state_file(repo)}: unreadable state of a halted operation ({exc})",
        "remove it and 'git worktree prune' to start over",
    )


def read_record(repo: pygit2.Repository) -> Json | None:
    """The record as JSON (its version checked), or None when nothing is halted."""
    path = state_file(repo)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SeriesError(
            f"{path}: cannot read the halted operation's state ({exc}); "
            "fix the file's permissions, or remove it and 'git worktree prune' to start over"
        ) from None
    try:
        data: Json = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise unreadable(repo, exc) from None
    version = data.get("version") if isinstance(data, dict) else None
    if isinstance(version, int) and version != VERSION:
        raise SeriesError(
            f"{path}: written by another series version (state version {version}); finish it with that version"
        )
    return data


def write_record(repo: pygit2.Repository, data: dict[str, Json]) -> None:
    path = state_file(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(data))  # compact: the C encoder, ~5x faster than indent=


def load_halt(repo: pygit2.Repository) -> Halt | None:
    """What is halted (the guard's question), or None: the record's `halt` alone."""
    data = read_record(repo)
    if data is None:
        return None
    try:
        return Halt.from_json(read_object(data, "state").get("halt"))
    except (ValueError, TypeError) as exc:
        raise unreadable(repo, exc) from None


def keep_only(repo: pygit2.Repository, wanted: Mapping[str, str]) -> None:
    """refs/series/rebase/ holds exactly `wanted` (name -> commit) afterwards: one git
    transaction (series.git.refs, the one writer of refs), each old value checked; none
    when nothing changes (the common case: no halted operation, no temporary ref)."""
    moves = [
        refs.RefMove(name, refs.current(repo, name), None)
        for name in repo.references
        if name.startswith(TEMP_PREFIX + "/") and name not in wanted
    ]
    moves += [
        refs.RefMove(name, old, target)
        for name, target in wanted.items()
        if (old := refs.current(repo, name)) != target
    ]
    if moves:
        # a lock file there is a killed git's (no one but series writes these refs, and the
        # caller holds the series lock): git would refuse the transaction while it stays
        for lock in (checkouts.common_dir(repo) / TEMP_PREFIX).rglob("*.lock"):
            lock.unlink(missing_ok=True)
        faults.fault("halted-before-temporary-refs")
        refs.update(repo, moves, "series: the new commits of a halted operation")


def clear(repo: pygit2.Repository) -> None:
    """Forget the operation: temporary refs, then the state (the worktree is removed before)."""
    keep_only(repo, {})
    directory = rebase_dir(repo)
    state_file(repo).unlink(missing_ok=True)
    if directory.exists() and not worktree_path(repo).exists():
        shutil.rmtree(directory, ignore_errors=True)


def refuse_if_halted(repo: pygit2.Repository, verb: str) -> None:
    """A halted operation rewrites series.yaml and the branches when it finishes; a change
    made in between would be lost or would block its --abort."""
    halt = load_halt(repo)
    if halt is not None:
        raise SeriesError(halted_message(halt, verb))
