"""A topic's own work: its commits, the paths they change, their line counts.

"Own" hides two kinds of commits a topic branch also contains: upstream's history (a
branch rebased by hand onto a newer release carries base..release too) and the commits of
the topics it depends_on (a stacked branch contains them all). One answer, computed once
per workspace (`Workspace.own(topic)`), so status, touches, check, export, adopt and
resolutions cannot disagree about what a topic carries.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pygit2

from series.git.repo import FileStat, branch_commit, changed_paths, file_stats, topic_range
from series.model import Series, Topic


@dataclass(frozen=True)
class OwnWork:
    topic: Topic
    head: pygit2.Commit
    start: pygit2.Commit                 # what its own commits sit on
    commits: tuple[pygit2.Commit, ...]   # its own commits, oldest first
    on_base: bool                        # start is upstream.base, or a dependency's head
    repo: pygit2.Repository

    @cached_property
    def paths(self) -> tuple[str, ...]:
        """Paths its own diff (start..head) changes."""
        return tuple(c.path for c in changed_paths(self.repo, self.start.tree, self.head.tree))

    @cached_property
    def stats(self) -> tuple[FileStat, ...]:
        return tuple(file_stats(self.repo, self.start.tree, self.head.tree))

    @cached_property
    def commit_paths(self) -> frozenset[str]:
        """Paths any of its own commits changes (a change reverted later included)."""
        found: set[str] = set()
        for commit in self.commits:
            parent = commit.parents[0].tree if commit.parents else None
            found.update(c.path for c in changed_paths(self.repo, parent, commit.tree))
        return frozenset(found)


def own_work(repo: pygit2.Repository, series: Series, base: pygit2.Commit, topic: Topic) -> OwnWork | None:
    """None when the topic's branch does not exist."""
    head = branch_commit(repo, topic.branch)
    if head is None:
        return None
    deps = [h for d in topic.depends_on
            if (dep := next((t for t in series.topics if t.name == d), None)) is not None
            and (h := branch_commit(repo, dep.branch)) is not None]
    span = topic_range(repo, base, head, series.upstream.remote, hide=[h.id for h in deps])
    on_base = span.start.id in {base.id, *(h.id for h in deps)}
    return OwnWork(topic, head, span.start, tuple(span.commits), on_base, repo)
