"""A topic's own work: its commits, the paths they change, their line counts.

"Own" hides two kinds of commits a topic branch also contains: upstream's history (a
branch rebased by hand onto a newer release carries base..release too) and the commits of
the topics it depends_on (a stacked branch contains them all). One answer, computed once
per workspace (`Workspace.own(topic)`), so status, touches, check, export, adopt, diff,
preflight, test, the integration build and resolutions cannot disagree about what a topic
carries. Everything past the commits (paths, line counts) is computed when first asked.

`own_work` also answers for a series that is not the workspace's: a version of it read
from an operation or an export (`series diff`, with those heads), or one being made
(`series add`, `series init`, with a provisional Series).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Sequence

import pygit2

from series.git.repo import FileStat, PathChange, branch_commit, changed_paths, file_stat, upstream_tips
from series.model import Series, Topic

HeadOf = Callable[[Topic], pygit2.Commit | None]


@dataclass(frozen=True)
class OwnWork:
    topic: Topic
    head: pygit2.Commit
    start: pygit2.Commit                 # what its own commits sit on
    commits: tuple[pygit2.Commit, ...]   # its own commits, oldest first
    on_base: bool                        # start is upstream.base, or a dependency's head
    repo: pygit2.Repository
    _stats: dict[str, FileStat] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def changes(self) -> tuple[PathChange, ...]:
        """Its own diff (start..head), path by path; `changed_paths` descends only into
        subtrees whose ids differ, so this costs the size of the change, not of the tree."""
        return tuple(changed_paths(self.repo, self.start.tree, self.head.tree))

    @property
    def paths(self) -> tuple[str, ...]:
        """Paths its own diff changes."""
        return tuple(c.path for c in self.changes)

    def stat(self, change: PathChange) -> FileStat:
        """Line counts of one of its changes (touches counts only the files it shows)."""
        if change.path not in self._stats:
            self._stats[change.path] = file_stat(self.repo, change)
        return self._stats[change.path]

    @property
    def stats(self) -> tuple[FileStat, ...]:
        return tuple(self.stat(c) for c in self.changes)

    @cached_property
    def commit_paths(self) -> frozenset[str]:
        """Paths any of its own commits changes (a change reverted later included)."""
        found: set[str] = set()
        for commit in self.commits:
            parent = commit.parents[0].tree if commit.parents else None
            found.update(c.path for c in changed_paths(self.repo, parent, commit.tree))
        return frozenset(found)


def own_work(repo: pygit2.Repository, series: Series, base: pygit2.Commit, topic: Topic,
             head_of: HeadOf | None = None) -> OwnWork | None:
    """None when the topic has no head. `head_of` gives a topic's head (default: its
    branch now); a dependency without one hides nothing (its commits are the stack's
    now, and the rebase replays them with it)."""
    def branch_head(t: Topic) -> pygit2.Commit | None:
        return branch_commit(repo, t.branch)

    find = head_of if head_of is not None else branch_head
    head = find(topic)
    if head is None:
        return None
    deps = [h for d in topic.depends_on
            if (dep := next((t for t in series.topics if t.name == d), None)) is not None
            and (h := find(dep)) is not None]
    start, commits = _own_range(repo, base, head, series.upstream.remote, [h.id for h in deps])
    on_base = start.id in {base.id, *(h.id for h in deps)}
    return OwnWork(topic, head, start, commits, on_base, repo)


def _own_range(repo: pygit2.Repository, base: pygit2.Commit, head: pygit2.Commit, remote: str,
               hide: Sequence[pygit2.Oid]) -> tuple[pygit2.Commit, tuple[pygit2.Commit, ...]]:
    """(what the own commits sit on, the own commits oldest first) of a branch.

    A topic that was rebased by hand onto a newer upstream contains base..newer too: those
    commits are upstream's (every remote branch and release tag, series.git.repo
    .upstream_tips), not the topic's. `hide` adds the heads of the topics it depends_on.
    """
    merge_base = repo.merge_base(base.id, head.id)
    walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    if merge_base is not None:
        walker.hide(merge_base)
    for tip in upstream_tips(repo, remote):
        walker.hide(tip)
    for oid in hide:
        walker.hide(oid)
    own = tuple(walker)
    if not own:
        return head, own
    return (own[0].parents[0] if own[0].parents else base), own
