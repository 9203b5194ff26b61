"""The conflict protocol: what a conflicting path looks like, and who may resolve it.

During a replay, a path whose three-way merge fails becomes a `Conflict` (the ancestor,
ours and theirs blob bytes, and the merged text with conflict markers). Before the
replay stops, the engine asks a *resolver*:

    resolver(topic_name, path, conflict) -> bytes | None

Bytes are used as the file's content and the report says "resolved from memory"; None
leaves the conflict to a human. After the human resolves it in the rebase worktree,
`series rebase --continue` calls a *recorder* for each path that had conflicted:

    recorder(topic_name, path, conflict, resolved_bytes) -> None

Where they come from: `hooks(series)`. When the module `series.resolutions` (the shared
conflict memory, issue 6) defines `engine_hooks(series) -> Hooks`, that is used;
otherwise the no-op pair below. The call points are `series.engine.replay.replay_commits`
(resolver) and `series.engine.rebase.continue_rebase` (recorder).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Conflict:
    """One conflicting path of one commit being replayed.

    kind: "content" (both sides edited the same lines), "add/add", "modify/delete"
    (we modified, they deleted), "delete/modify", "mode", "binary", "file/directory".
    ancestor/ours/theirs: blob bytes (None when that side has no file); ours is the new
    base side, theirs the commit being replayed. merged: the file with conflict markers
    (ours' bytes when there is no textual merge, e.g. binary).
    The *_entry fields are (mode, hex id) of each side, for materializing the index stages.
    """

    path: str
    kind: str
    ancestor: bytes | None
    ours: bytes | None
    theirs: bytes | None
    merged: bytes
    ancestor_entry: tuple[int, str] | None = None
    ours_entry: tuple[int, str] | None = None
    theirs_entry: tuple[int, str] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "ancestor": self.ancestor_entry,
                "ours": self.ours_entry, "theirs": self.theirs_entry}


class Resolver(Protocol):
    def __call__(self, topic: str, path: str, conflict: Conflict) -> bytes | None: ...


class Recorder(Protocol):
    def __call__(self, topic: str, path: str, conflict: Conflict, resolved: bytes) -> None: ...


def no_resolver(topic: str, path: str, conflict: Conflict) -> bytes | None:
    return None


def no_recorder(topic: str, path: str, conflict: Conflict, resolved: bytes) -> None:
    return None


@dataclass(frozen=True)
class Hooks:
    resolver: Resolver = no_resolver
    recorder: Recorder = no_recorder


def hooks(series: Any) -> Hooks:
    """The resolver and recorder for this series (see the module docstring)."""
    from series import resolutions  # the store; it imports this module's types

    return resolutions.engine_hooks(series)
