"""The conflict protocol: what a conflicting path looks like, and who may resolve it.

During a replay, a path whose three-way merge fails becomes a `ReplayConflict` (the ancestor,
ours and theirs blob bytes, and the merged text with conflict markers). Before the
replay stops, the engine asks a *resolver*:

    resolver(topic_name, path, conflict) -> bytes | None

Bytes are used as the file's content and the report says "resolved from memory"; None
leaves the conflict to a human. After the human resolves it in the rebase worktree,
the operation's `--continue` calls a *recorder* for each path that had conflicted:

    recorder(topic_name, path, conflict, resolved_bytes) -> None

Before it records or commits anything, `--continue` asks a *check* about every file the
resolution changes against the head the commit was applied to (`ResolvedFile`):

    check(topic_name, files) -> list[str]

Each string is one refused file ("path:line: message"); any refuses the whole resolution:
nothing is recorded, nothing moves, the worktree stays for the human to fix.

Where they come from: the caller. A verb hands the engine its `Hooks` (the shared conflict
memory's are `series.resolutions.engine_hooks(series)`); the engine never imports that
store (CONTRIBUTING.md rule 4, and no import cycle: the store imports these types). Without hooks
the no-op ones below are used. The call points are `series.engine.replay.replay_commits`
(resolver) and `series.engine.rebase.continue_rebase` (check, then recorder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

# The conflict kinds series names itself; the rest are git's own words (merge-ort's short
# descriptions, "relied upon by external tools" and added to over git's versions), kept
# as git says them: an open vocabulary, so a string and not an enum.
CONTENT = "content"  # git's "contents": both sides edited the same lines
ADD_ADD = "add/add"  # a contents conflict with no merge base


@dataclass(frozen=True)
class ReplayConflict:
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

    @property
    def textual(self) -> bool:
        """Markers in the file, the only conflicts the conflict memory keys on: a
        modify/delete or binary one has no merged text that could be replayed."""
        return self.kind in (CONTENT, ADD_ADD)

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "kind": self.kind,
            "ancestor": self.ancestor_entry,
            "ours": self.ours_entry,
            "theirs": self.theirs_entry,
        }


@dataclass(frozen=True)
class ResolvedFile:
    """A file a human's resolution leaves changed: its bytes, and the replayed commit's own
    version of it (None: the commit has no such file), so a check can tell what the
    resolution brought from what the topic already had."""

    path: str
    data: bytes
    original: bytes | None


class Resolver(Protocol):
    def __call__(self, topic: str, path: str, conflict: ReplayConflict) -> bytes | None: ...


class Recorder(Protocol):
    def __call__(self, topic: str, path: str, conflict: ReplayConflict, resolved: bytes) -> None: ...


class Check(Protocol):
    def __call__(self, topic: str, files: Sequence[ResolvedFile]) -> list[str]: ...


def no_resolver(topic: str, path: str, conflict: ReplayConflict) -> bytes | None:
    return None


def no_recorder(topic: str, path: str, conflict: ReplayConflict, resolved: bytes) -> None:
    return None


def no_check(topic: str, files: Sequence[ResolvedFile]) -> list[str]:
    return []


@dataclass(frozen=True)
class Hooks:
    resolver: Resolver = no_resolver
    recorder: Recorder = no_recorder
    check: Check = no_check


NO_HOOKS = Hooks()
