"""A topic's own work: its commits, the paths they change, their line counts.

"Own" hides two kinds of commits a topic branch also contains: upstream's history (a
branch rebased by hand onto a newer release carries base..release too) and the commits of
the topics it depends_on (a stacked branch contains them all). One answer, computed once
per workspace (`Workspace.own(topic)`, an `OwnWorks`), so status, touches, check, export,
adopt, diff, preflight, test, the rebase plan, the integration build and resolutions cannot
disagree about what a topic carries. Paths and line counts are computed when first asked.

`OwnWorks` also answers for a series that is not the workspace's: a version of it read
from an operation or an export (`series diff`, with those heads), one being made (`series
init`, a provisional Series), or a rebase's (its --onto REF counted as upstream's too).
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
    start: pygit2.Commit  # what its own commits sit on
    commits: tuple[pygit2.Commit, ...]  # its own commits, oldest first
    on_base: bool  # start is upstream.base, or a dependency's head
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


def meant_start(topic: Topic, base: str) -> str:
    """What a topic's own commits are meant to sit on, in words: the base, or for a stacked
    topic its dependency's head (status, check and export say it alike)."""
    return f"the head of {' or '.join(topic.depends_on)}" if topic.depends_on else base


class OwnWorks:
    """The own work of one series' topics, each computed once when first asked.

    Upstream's history is walked once for all topics, not once per topic: on a clone
    with every PR head fetched that is thousands of refs and commits.
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        series: Series,
        base: pygit2.Commit,
        head_of: HeadOf | None = None,
        upstream: Sequence[pygit2.Oid] = (),
    ) -> None:
        """`head_of` gives a topic's head (default: its branch now); `upstream` adds
        commits whose history is upstream's besides its remote branches and release tags
        (a rebase's --onto REF)."""
        self.repo, self.series, self.base = repo, series, base
        self._head_of = head_of
        self._upstream = tuple(upstream)
        self._found: dict[str, OwnWork | None] = {}

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

    @cached_property
    def _tips(self) -> tuple[pygit2.Oid, ...]:
        return (*upstream_tips(self.repo, self.series.upstream.remote), *self._upstream)

    @cached_property
    def _beyond_upstream(self) -> frozenset[pygit2.Oid]:
        """The commits of the topics' branches that neither the base nor upstream's history
        (series.git.repo.upstream_tips: upstream's main and release branches, its version
        tags) contains: usually all of them. The remote's other branches are not upstream's
        history: a fork's server cloned as `upstream` carries the fork's integration
        branch, which contains every topic (issue 33)."""
        walker = self.repo.walk(self.base.id, pygit2.enums.SortMode.NONE)
        walker.reset()
        for topic in self.series.topics:
            head = self.head(topic)
            if head is not None:
                walker.push(head.id)
        walker.hide(self.base.id)
        for tip in self._tips:
            walker.hide(tip)
        return frozenset(c.id for c in walker)

    @cached_property
    def _line(self) -> frozenset[pygit2.Oid]:
        """The commits on the first-parent chains of upstream's tips beyond the base:
        upstream's own line, where a merged branch's commits are not (they hang off a
        merge's second parent)."""
        walker = self.repo.walk(self.base.id, pygit2.enums.SortMode.NONE)
        walker.reset()
        for tip in self._tips:
            walker.push(tip)
        walker.hide(self.base.id)
        # one walk for every tip (a tip older than the base adds nothing): each commit's first parent
        first_parent = {c.id: (c.parent_ids[0] if c.parent_ids else None) for c in walker}
        line: set[pygit2.Oid] = set()
        for tip in self._tips:
            oid: pygit2.Oid | None = tip
            # down to the base's history, or to a chain already walked
            while oid is not None and oid in first_parent and oid not in line:
                line.add(oid)
                oid = first_parent[oid]
        return frozenset(line)

    def _compute(self, topic: Topic) -> OwnWork | None:
        """A branch rebased by hand onto a newer release (or with upstream's main merged
        in) contains base..release too: those are upstream's, not the topic's. They are
        what the branch holds below a commit of upstream's line (_line). A topic's own
        commits that upstream merged as they are (a merge commit's second parent) stay
        the topic's: a rebase onto a release without that merge, or with its revert,
        replays them, as `git rebase --onto NEW BASE` does."""
        head = self.head(topic)
        if head is None:
            return None
        deps = [
            h
            for d in topic.depends_on
            if (dep := next((t for t in self.series.topics if t.name == d), None)) is not None
            and (h := self.head(dep)) is not None
        ]
        fork = self.repo.merge_base(self.base.id, head.id)

        def walk(hidden: Sequence[pygit2.Oid]) -> tuple[pygit2.Commit, ...]:
            # the topic's commits over where it forks from the base, its dependencies' hidden
            walker = self.repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
            for oid in [self.base.id, *([fork] if fork is not None else []), *(d.id for d in deps), *hidden]:
                walker.hide(oid)
            return tuple(walker)

        commits = walk(())
        if any(c.id not in self._beyond_upstream for c in commits):  # upstream's too
            line = self._line
            commits = walk([c.id for c in commits if c.id in line])
        start = (commits[0].parents[0] if commits[0].parents else self.base) if commits else head
        on_base = start.id in {self.base.id, *(h.id for h in deps)}
        return OwnWork(topic, head, start, commits, on_base, self.repo)


def built_on(works: OwnWorks, topic: Topic, candidates: Sequence[Topic]) -> Topic | None:
    """The topic among `candidates` that `topic`'s branch is built on (stacked on), or None:
    the one answer `series init` and `add` infer depends_on from, `check` holds the series
    to, and `diff` attributes commits by.

    A stacked branch holds the commits of the topic under it: a candidate qualifies when
    its own commits and `topic`'s (as `works` counts them: for a topic with no depends_on,
    everything over the base) share one, and `topic`'s head is neither the candidate's nor
    an ancestor of it (then the candidate is the one built on `topic`). A fixup committed
    on the candidate after the stack was made leaves a shared commit, not a shared head.
    Nearest first: a candidate whose head `topic` contains, then the one owning the most of
    the shared commits (a commit is owned by the first candidate holding it: siblings
    built on one base share its commits, which are the base's), then the one sharing the
    most, then the later one in `candidates`. Two branches that fork from one another's
    commits and neither contains the other's head answer each other: only the order of
    the series (the candidates before `topic`) tells which is under.
    """
    own = works.of(topic)
    if own is None or not own.commits:
        return None
    mine = {c.id for c in own.commits}
    owner: dict[pygit2.Oid, str] = {}
    found: list[tuple[int, Topic, OwnWork, int]] = []
    for position, other in enumerate(candidates):
        theirs = works.of(other) if other.name != topic.name else None
        if theirs is None or theirs.head.id == own.head.id:
            continue
        shared = [c.id for c in theirs.commits if c.id in mine]
        for oid in shared:
            owner.setdefault(oid, other.name)
        if shared and not works.repo.descendant_of(theirs.head.id, own.head.id):
            found.append((position, other, theirs, len(shared)))
    best: tuple[tuple[bool, int, int, int], Topic] | None = None
    for position, other, theirs, count in found:
        owned = sum(1 for name in owner.values() if name == other.name)
        key = (works.repo.descendant_of(own.head.id, theirs.head.id), owned, count, position)
        if best is None or key > best[0]:
            best = (key, other)
    return best[1] if best is not None else None
