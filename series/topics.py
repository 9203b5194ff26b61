"""A topic's own work: its commits, the paths they change, their line counts.

"Own" hides two kinds of commits a topic branch also contains: upstream's history (a
branch rebased by hand onto a newer release carries base..release too) and the commits of
the topics it depends_on (a stacked branch contains them all). One answer, computed once
per workspace (`Workspace.own(topic)`, an `OwnWorks`), so status, touches, check, export, adopt, diff,
preflight, test, the integration build and resolutions cannot disagree about what a topic
carries. Everything past the commits (paths, line counts) is computed when first asked.

`OwnWorks` also answers for a series that is not the workspace's: a version of it read
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


class OwnWorks:
    """The own work of one series' topics, each computed once when first asked, with
    upstream's tips listed once (a clone with every PR head fetched holds thousands of refs:
    listing them per topic was most of `series status`)."""

    def __init__(self, repo: pygit2.Repository, series: Series, base: pygit2.Commit,
                 head_of: HeadOf | None = None) -> None:
        """`head_of` gives a topic's head (default: its branch now)."""
        self.repo, self.series, self.base = repo, series, base
        self._head_of = head_of
        self._found: dict[str, OwnWork | None] = {}
        self._tips: list[pygit2.Oid] | None = None

    def head(self, topic: Topic) -> pygit2.Commit | None:
        if self._head_of is not None:
            return self._head_of(topic)
        return branch_commit(self.repo, topic.branch)

    def of(self, topic: Topic) -> OwnWork | None:
        """None when the topic has no head; a dependency without one hides nothing (its
        commits are the stack's now, and the rebase replays them with it)."""
        if topic.name not in self._found:
            self._found[topic.name] = self._compute(topic)
        return self._found[topic.name]

    def _compute(self, topic: Topic) -> OwnWork | None:
        head = self.head(topic)
        if head is None:
            return None
        deps = [h for d in topic.depends_on
                if (dep := next((t for t in self.series.topics if t.name == d), None)) is not None
                and (h := self.head(dep)) is not None]
        if self._tips is None:
            self._tips = upstream_tips(self.repo, self.series.upstream.remote)
        start, commits = _own_range(self.repo, self.base, head, self._tips, [h.id for h in deps])
        on_base = start.id in {self.base.id, *(h.id for h in deps)}
        return OwnWork(topic, head, start, commits, on_base, self.repo)


def _own_range(repo: pygit2.Repository, base: pygit2.Commit, head: pygit2.Commit,
               upstream: Sequence[pygit2.Oid],
               hide: Sequence[pygit2.Oid]) -> tuple[pygit2.Commit, tuple[pygit2.Commit, ...]]:
    """(what the own commits sit on, the own commits oldest first) of a branch.

    A topic that was rebased by hand onto a newer upstream contains base..newer too: those
    commits are upstream's (`upstream`: every remote branch and release tag, series.git.repo
    .upstream_tips), not the topic's. `hide` adds the heads of the topics it depends_on.
    """
    merge_base = repo.merge_base(base.id, head.id)
    walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    if merge_base is not None:
        walker.hide(merge_base)
    for tip in upstream:
        walker.hide(tip)
    for oid in hide:
        walker.hide(oid)
    own = tuple(walker)
    if not own:
        return head, own
    return (own[0].parents[0] if own[0].parents else base), own
