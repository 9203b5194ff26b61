"""A halted operation's state, as the engine keeps it: each topic's run (`TopicRun`), its
outcome, the commit it stopped at, and the whole `RebaseState`, saved in the halt record
(series.ops.halted: the file, its temporary refs and the guard that reads it) whenever the
operation halts or is about to move refs, so that `--continue` and `--abort` go on from it
in another shell or after a kill.

Phases: CONFLICT (a conflict is materialized, or about to be, in the worktree
.git/series/rebase/worktree; no branch has moved) and COMMITTING (every topic is
replayed; the journal entry `op_id` is being applied). The new commits of a halted
operation are reachable from refs/series/rebase/<topic> (`protect`) so `git gc` cannot
prune them; those refs go when it finishes or is aborted.

What is read back is validated field by field (`RebaseState.from_json`): a state file someone
edited or truncated is a one-line error naming the file and the field, never a traceback.
The JSON is the halt record's on-disk format: a change here is a new halted.VERSION.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Mapping

import pygit2

from series.ops import halted
from series.ops.halted import Halt
from series.ops.journal import FileChange
from series.persisted import (
    Json,
    read_bool,
    read_list,
    read_enum,
    read_int,
    read_object,
    read_opt_str,
    read_pairs,
    read_str,
    read_str_map,
    read_strs,
)


class TopicOutcome(str, enum.Enum):
    """Where one topic stands in the operation (the str mixin keeps the JSON value)."""

    PENDING = "pending"
    CLEAN = "clean"
    CONFLICT = "conflict"
    MERGED = "merged"
    BLOCKED = "blocked"
    SKIPPED = "skipped"  # left where it was by this operation (asked, or its dependency was)
    DROPPED = "dropped"  # retired during a halt, as asked: status dropped, branch kept
    EMPTY = "empty"  # nothing left after a human resolution (not "merged": no rule proved it)

    @property
    def left_out(self) -> bool:
        """Out of the operation: it moves no branch (a merged topic's is kept too)."""
        return self in (TopicOutcome.SKIPPED, TopicOutcome.DROPPED, TopicOutcome.MERGED)


class Phase(str, enum.Enum):
    CONFLICT = "conflict"
    COMMITTING = "committing"


@dataclass(frozen=True)
class HaltedCommit:
    """The commit a topic stopped at: what the report and the verbs show of a conflict."""

    commit: str
    subject: str
    files: tuple[str, ...]
    kinds: Mapping[str, str]  # path -> resolve.Conflict.kind

    def to_json(self) -> dict[str, Json]:
        return {"commit": self.commit, "subject": self.subject, "files": list(self.files), "kinds": dict(self.kinds)}

    @classmethod
    def from_json(cls, data: Json) -> "HaltedCommit":
        d = read_object(data, "conflict")
        return cls(
            read_str(d, "commit"), read_str(d, "subject"), tuple(read_strs(d, "files")), read_str_map(d, "kinds")
        )


@dataclass(frozen=True)
class TopicRun:
    """One topic's progress through the operation (a value: each step makes a new one,
    dataclasses.replace, and RebaseState.with_topic puts it in a new state)."""

    name: str
    branch: str
    old_head: str
    start: str  # the old commit its own commits sit on
    commits: tuple[str, ...]  # its own commits, oldest first
    depends_on: str | None = None  # the topic whose new head it goes onto (None: REF)
    outcome: TopicOutcome = TopicOutcome.PENDING
    new_head: str | None = None  # clean/merged: final; conflict: the partial head
    new_start: str | None = None  # what it was replayed onto
    done: int = 0  # commits handled so far
    mapping: Mapping[str, str] = field(default_factory=dict)  # old commit -> new commit
    dropped: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    resolved: tuple[tuple[str, str], ...] = ()  # (commit, path) from memory
    by_hand: tuple[tuple[str, str], ...] = ()  # (commit, path) in the worktree
    conflict: HaltedCommit | None = None
    reason: str = ""  # merged / skipped / blocked: why
    modified: bool = False  # merged upstream in modified form
    detail: str = ""

    def to_json(self) -> dict[str, Json]:
        return {
            "name": self.name,
            "branch": self.branch,
            "old_head": self.old_head,
            "start": self.start,
            "commits": list(self.commits),
            "depends_on": self.depends_on,
            "outcome": self.outcome.value,
            "new_head": self.new_head,
            "new_start": self.new_start,
            "done": self.done,
            "mapping": dict(self.mapping),
            "dropped": list(self.dropped),
            "changed": list(self.changed),
            "resolved": [[c, p] for c, p in self.resolved],
            "by_hand": [[c, p] for c, p in self.by_hand],
            "conflict": self.conflict.to_json() if self.conflict else None,
            "reason": self.reason,
            "modified": self.modified,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Json) -> "TopicRun":
        d = read_object(data, "topics[]")
        conflict = d.get("conflict")
        return cls(
            name=read_str(d, "name"),
            branch=read_str(d, "branch"),
            old_head=read_str(d, "old_head"),
            start=read_str(d, "start"),
            commits=tuple(read_strs(d, "commits")),
            depends_on=read_opt_str(d, "depends_on"),
            outcome=read_enum(TopicOutcome, d, "outcome"),
            new_head=read_opt_str(d, "new_head"),
            new_start=read_opt_str(d, "new_start"),
            done=read_int(d, "done"),
            mapping=dict(read_str_map(d, "mapping")),
            dropped=tuple(read_strs(d, "dropped")),
            changed=tuple(read_strs(d, "changed")),
            resolved=tuple(read_pairs(d, "resolved")),
            by_hand=tuple(read_pairs(d, "by_hand")),
            conflict=HaltedCommit.from_json(conflict) if conflict is not None else None,
            reason=read_str(d, "reason"),
            modified=read_bool(d, "modified"),
            detail=read_str(d, "detail"),
        )


@dataclass(frozen=True)
class RebaseState:
    id: str
    onto_spec: str
    onto_name: str
    onto_sha: str
    old_base_name: str
    old_base_sha: str
    config_path: str
    config_before: str
    topics: tuple[TopicRun, ...]
    halt: Halt
    skip: tuple[str, ...] = ()
    phase: Phase = Phase.CONFLICT
    current: str | None = None  # the topic materialized in the worktree
    materialized: bool = False
    op_id: str | None = None
    started: str = ""
    version: int = halted.VERSION
    # what the hooks wrote through the transaction while the operation went on (a recorded conflict
    # resolution), kept here until the operation commits it: a step killed before its transaction
    # committed hands it to the next step's transaction
    recorded: tuple[FileChange, ...] = ()

    def topic(self, name: str) -> TopicRun:
        for run in self.topics:
            if run.name == name:
                return run
        raise KeyError(name)

    def with_topic(self, run: TopicRun) -> "RebaseState":
        """This state with `run` in place of the topic of the same name."""
        return replace(self, topics=tuple(run if t.name == run.name else t for t in self.topics))

    def to_json(self) -> dict[str, Json]:
        return {
            "version": self.version,
            "id": self.id,
            "onto_spec": self.onto_spec,
            "onto_name": self.onto_name,
            "onto_sha": self.onto_sha,
            "old_base_name": self.old_base_name,
            "old_base_sha": self.old_base_sha,
            "config_path": self.config_path,
            "config_before": self.config_before,
            "topics": [t.to_json() for t in self.topics],
            "halt": self.halt.to_json(),
            "skip": list(self.skip),
            "phase": self.phase.value,
            "current": self.current,
            "materialized": self.materialized,
            "op_id": self.op_id,
            "started": self.started,
            "recorded": [f.to_json() for f in self.recorded],
        }

    @classmethod
    def from_json(cls, data: Json) -> "RebaseState":
        d = read_object(data, "state")
        topics = read_list(d, "topics")
        return cls(
            id=read_str(d, "id"),
            onto_spec=read_str(d, "onto_spec"),
            onto_name=read_str(d, "onto_name"),
            onto_sha=read_str(d, "onto_sha"),
            old_base_name=read_str(d, "old_base_name"),
            old_base_sha=read_str(d, "old_base_sha"),
            config_path=read_str(d, "config_path"),
            config_before=read_str(d, "config_before"),
            topics=tuple(TopicRun.from_json(t) for t in topics),
            halt=Halt.from_json(d.get("halt")),
            skip=tuple(read_strs(d, "skip")),
            phase=read_enum(Phase, d, "phase"),
            current=read_opt_str(d, "current"),
            materialized=read_bool(d, "materialized"),
            op_id=read_opt_str(d, "op_id"),
            started=read_str(d, "started"),
            version=read_int(d, "version"),
            recorded=tuple(FileChange.from_json(read_object(f, "recorded[]")) for f in read_list(d, "recorded", [])),
        )


def load(repo: pygit2.Repository) -> RebaseState | None:
    """The halted operation's state, or None when nothing is halted."""
    data = halted.read_record(repo)
    if data is None:
        return None
    try:
        return RebaseState.from_json(data)
    except (ValueError, TypeError, RecursionError) as exc:
        raise halted.unreadable(repo, exc) from None


def save(repo: pygit2.Repository, state: RebaseState) -> None:
    halted.write_record(repo, state.to_json())


def protect(repo: pygit2.Repository, state: RebaseState) -> None:
    """Keep every new commit of a halted operation reachable (refs/series/rebase/<topic>)."""
    halted.keep_only(
        repo,
        {
            f"{halted.TEMP_PREFIX}/{t.name}": t.new_head
            for t in state.topics
            if t.new_head and t.new_head != t.new_start and t.new_head != t.old_head
        },
    )
