"""A rebase in progress, on disk: .git/series/rebase/state.json.

Written (atomically) whenever the rebase halts or is about to move refs, so that another
shell, or the same command after the process was killed at any point, can go on with
`series rebase --continue` or put everything back with `--abort`.

The same machinery carries an adoption (`series adopt-upstream N`) that conflicts:
`kind` says which operation is halted ("rebase" or "adopt") and so which command goes on
with it; an adoption also records in `adoption` what its end commits (series.engine.adoption).
Only one operation can be halted at a time: every other verb that moves refs or edits
series.yaml refuses meanwhile (`halted_message`).

Phases: "conflict" (a conflict is materialized, or about to be, in the worktree
.git/series/rebase/worktree; no branch has moved) and "committing" (every topic is
replayed; the journal entry `op_id` is being applied). The new commits of a halted rebase
are reachable from refs/series/rebase/<topic> so `git gc` cannot prune them; those refs
go when the rebase finishes or is aborted.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from series import faults
from series.config import write_text_atomically
from series.errors import SeriesError
from series.git.refs import state_dir

TEMP_PREFIX = "refs/series/rebase"
VERSION = 1


fault = faults.fault  # kept here: the engine's points are named st.fault(...)


@dataclass
class TopicRun:
    """One topic's progress through the rebase (mutable while the rebase runs)."""

    name: str
    branch: str
    old_head: str
    start: str                          # the old commit its own commits sit on
    commits: list[str]                  # its own commits, oldest first
    depends_on: str | None = None       # the topic whose new head it goes onto (None: REF)
    outcome: str = "pending"            # pending clean conflict merged blocked skipped
    new_head: str | None = None         # clean/merged: final; conflict: the partial head
    new_start: str | None = None        # what it was replayed onto
    done: int = 0                       # commits handled so far
    mapping: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    resolved: list[list[str]] = field(default_factory=list)   # [commit, path] from memory
    by_hand: list[list[str]] = field(default_factory=list)    # [commit, path] in the worktree
    conflict: dict[str, Any] | None = None                    # {commit, subject, files: [...]}
    reason: str = ""                    # merged / skipped / blocked: why
    modified: bool = False              # merged upstream in modified form
    detail: str = ""


@dataclass
class RebaseState:
    id: str
    onto_spec: str
    onto_name: str
    onto_sha: str
    old_base_name: str
    old_base_sha: str
    config_path: str
    config_before: str
    topics: list[TopicRun]
    skip: list[str] = field(default_factory=list)
    phase: str = "conflict"
    current: str | None = None          # the topic materialized in the worktree
    materialized: bool = False
    op_id: str | None = None
    started: str = ""
    version: int = VERSION
    kind: str = "rebase"                # "rebase", or "adopt" (series.engine.adoption)
    adoption: dict[str, Any] | None = None  # kind "adopt": the PR, the branch, series.yaml after

    def topic(self, name: str) -> TopicRun:
        for run in self.topics:
            if run.name == name:
                return run
        raise KeyError(name)

    def to_json(self) -> str:
        return json.dumps(asdict(self))  # compact: the C encoder, ~5x faster than indent=

    @classmethod
    def from_json(cls, text: str) -> "RebaseState":
        data = json.loads(text)
        data["topics"] = [TopicRun(**t) for t in data["topics"]]
        return cls(**data)


def resume_command(state: RebaseState) -> str:
    """The command whose --continue / --abort go on with this halted operation."""
    return "series adopt-upstream" if state.kind == "adopt" else "series rebase"


def halted_what(state: RebaseState) -> str:
    if state.kind == "adopt":
        number = (state.adoption or {}).get("number", "?")
        return f"an adoption of PR #{number} is halted on a conflict"
    return "a series rebase is in progress"


def halted_message(state: RebaseState, verb: str) -> str:
    """The one-line refusal for `verb` while an operation is halted."""
    command = resume_command(state)
    return (f"{halted_what(state)}: finish it with '{command} --continue' or '{command} --abort' "
            f"before '{verb}'")


def rebase_dir(repo: pygit2.Repository) -> Path:
    return state_dir(repo) / "rebase"


def worktree_path(repo: pygit2.Repository) -> Path:
    return rebase_dir(repo) / "worktree"


def state_file(repo: pygit2.Repository) -> Path:
    return rebase_dir(repo) / "state.json"


def load(repo: pygit2.Repository) -> RebaseState | None:
    path = state_file(repo)
    if not path.exists():
        return None
    try:
        state = RebaseState.from_json(path.read_text())
    except (ValueError, TypeError, KeyError) as exc:
        raise SeriesError(f"{path}: unreadable rebase state ({exc}); remove it and "
                          f"'git worktree prune' to start over") from None
    if state.version != VERSION:
        raise SeriesError(f"{path}: written by another series version; finish it with that version")
    return state


def save(repo: pygit2.Repository, state: RebaseState) -> None:
    path = state_file(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, state.to_json())


def clear(repo: pygit2.Repository) -> None:
    """Forget the rebase: temporary refs, then the state (the worktree is removed before)."""
    for name in list(repo.references):
        if name.startswith(TEMP_PREFIX + "/"):
            repo.references.delete(name)
    directory = rebase_dir(repo)
    state_file(repo).unlink(missing_ok=True)
    if directory.exists() and not worktree_path(repo).exists():
        shutil.rmtree(directory, ignore_errors=True)


def protect(repo: pygit2.Repository, state: RebaseState) -> None:
    """Keep every new commit of a halted rebase reachable (refs/series/rebase/<topic>)."""
    wanted = {f"{TEMP_PREFIX}/{t.name}": t.new_head for t in state.topics
              if t.new_head and t.new_head != t.new_start and t.new_head != t.old_head}
    for name in list(repo.references):
        if name.startswith(TEMP_PREFIX + "/") and name not in wanted:
            repo.references.delete(name)
    for name, target in wanted.items():
        repo.references.create(name, pygit2.Oid(hex=target), force=True)


def refuse_if_halted(repo: pygit2.Repository, verb: str) -> None:
    """A halted rebase (or adoption) rewrites series.yaml and the branches when it finishes;
    a change made in between would be lost or would block its --abort."""
    halted = load(repo)
    if halted is not None:
        raise SeriesError(halted_message(halted, verb))
