"""Where on upstream's main line the series stops applying, found by bisection.

    mainline(repo, old, new)               the first-parent commits old..new, oldest first
    first_breaking(ws, runs, ...)          per conflicting topic: the first of them at which
                                           it no longer applies (log2(N) replays per topic)
    as_far_as_possible(ws, runs, ...)      the newest of them where every active topic still
                                           applies, and the commit that blocks the next step

A probe replays topics onto one upstream commit with the public replay engine
(series.engine.replay.replay_commits) in memory: no checkout, nothing written but
objects in a MemOdb that is never persisted (git merge-tree's own writes go to its scratch
directory); renames are merge-ort's, followed per probe. "Applies" is what the rebase would say:
no conflict left after the series' remembered resolutions, or the topic is merged there.
Bisection assumes a topic that stops applying at commit k does not apply after k either,
which is how upstream history behaves for a topic nobody touched in between.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import pygit2

from series import persisted
from series.git.upstream_commit import UpstreamCommit
from series.engine import merged
from series.engine.odb import MemOdb
from series.engine.replay import replay_commits
from series.git.repo import committer
from series.engine.resolve import Hooks
from series.engine.rebase_state import TopicOutcome, TopicRun
from series.engine.ports import SeriesRepo
from series.persisted import Json


def mainline(repo: pygit2.Repository, old: pygit2.Commit, new: pygit2.Commit) -> list[pygit2.Commit]:
    """new's first-parent chain back to old (or to the first commit old already contains),
    oldest first, old itself left out."""
    chain: list[pygit2.Commit] = []
    commit = new
    while commit.id != old.id:
        if commit.commit_time <= old.commit_time and repo.descendant_of(old.id, commit.id):
            break  # old sits on a side line; from here on old has it all
        chain.append(commit)
        if not commit.parents:
            break
        commit = commit.parents[0]
    chain.reverse()
    return chain


@dataclass(frozen=True)
class Probe:
    """What replaying the series onto one upstream commit gave."""

    at: str
    conflicts: dict[str, tuple[str, ...]]  # topic -> conflicting files (blocked: ())

    @property
    def clean(self) -> bool:
        return not self.conflicts


@dataclass
class Prober:
    """Replays topics onto the commits of `line`, counting replays (what bisection pays).

    What one probe learns serves the next: a topic that applied at commit k applies at
    every earlier one, and one that failed at k fails at every later one (the module's
    assumption), so a probe replays only the topics still in doubt there, and what they
    depend on.
    """

    ws: SeriesRepo
    runs: Sequence[TopicRun]
    line: Sequence[pygit2.Commit]
    hooks: Hooks
    replays: int = 0
    odb: MemOdb = field(init=False)
    good: dict[str, int] = field(default_factory=dict)  # topic -> latest index it applied at
    bad: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)  # earliest failure

    def __post_init__(self) -> None:
        self.odb = MemOdb(self.ws.repo)
        self.committer = committer(self.ws.repo)
        self.old_base = self.ws.base_commit()

    def probe(self, index: int, only: set[str] | None = None) -> Probe:
        """Replay every pending topic (or `only` those and what they depend on) onto line[index]."""
        point = self.line[index]
        runs = [r for r in self.runs if r.outcome != TopicOutcome.SKIPPED]
        if only is not None:
            wanted = self._closure(only)
            runs = [r for r in runs if r.name in wanted]
        doubt = {
            r.name
            for r in runs
            if self.good.get(r.name, -1) < index and self.bad.get(r.name, (len(self.line), ()))[0] > index
        }
        needed = self._closure(doubt)

        heads: dict[str, pygit2.Oid] = {}
        conflicts: dict[str, tuple[str, ...]] = {}
        for run in runs:
            known = self.bad.get(run.name)
            if known is not None and known[0] <= index:
                conflicts[run.name] = known[1]
                continue
            if run.name not in needed:
                continue  # applied at a later commit already: applies here
            if run.depends_on and run.depends_on in conflicts:
                conflicts[run.name] = ()
            else:
                failed = self._replay(run, point, heads.get(run.depends_on or "", point.id), heads)
                if failed is not None:
                    conflicts[run.name] = failed
            if run.name in conflicts:
                self.bad[run.name] = (index, conflicts[run.name])
            else:
                self.good[run.name] = max(index, self.good.get(run.name, -1))
        return Probe(str(point.id), conflicts)

    def _replay(
        self, run: TopicRun, point: pygit2.Commit, onto: pygit2.Oid, heads: dict[str, pygit2.Oid]
    ) -> tuple[str, ...] | None:
        """Replay one topic; its conflicting files, or None when it applies."""
        repo = self.ws.repo
        commits = tuple(repo[pygit2.Oid(hex=c)].peel(pygit2.Commit) for c in run.commits)
        topic = self.ws.series.topic(run.name)
        verdict = (
            merged.first_verdict(
                merged.MergedContext(
                    repo, topic, self.old_base, point, str(point.id), commits, self.ws.series.upstream.github
                )
            )
            if topic.upstream_pr is not None
            else None
        )
        if verdict is not None and not verdict.reverted:
            heads[run.name] = onto  # merged there: retired, not replayed
            return None
        self.replays += 1
        result = replay_commits(
            repo, commits, onto, committer=self.committer, topic=run.name, odb=self.odb, resolver=self.hooks.resolver
        )
        heads[run.name] = result.head
        if result.conflict is not None:
            return tuple(c.path for c in result.conflict.conflicts)
        return None

    def _closure(self, names: set[str]) -> set[str]:
        by_name = {r.name: r for r in self.runs}
        out: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name in out or name not in by_name:
                continue
            out.add(name)
            if by_name[name].depends_on:
                todo.append(by_name[name].depends_on or "")
        return out


def _bisect(count: int, fails: Callable[[int], bool]) -> int:
    """The index of the first of `count` commits that fails, given the last one fails
    and the commit before the first does not."""
    lo, hi = -1, count - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class Breaking:
    """The first upstream commit on the main line at which a topic stops applying."""

    topic: str
    commit: UpstreamCommit
    position: int  # 1-based, on the first-parent path old base..REF
    total: int
    files: tuple[str, ...]  # what conflicts there
    replays: int

    def to_json(self) -> dict[str, Json]:
        return {
            "topic": self.topic,
            **self.commit.to_json(),
            "position": self.position,
            "total": self.total,
            "files": list(self.files),
            "replays": self.replays,
        }

    @classmethod
    def from_json(cls, data: Json) -> "Breaking":
        d = persisted.read_object(data, "first_breaking")
        return cls(
            persisted.read_str(d, "topic"),
            UpstreamCommit.from_json(d, "first_breaking"),
            persisted.read_int(d, "position"),
            persisted.read_int(d, "total"),
            tuple(persisted.read_strs(d, "files")),
            persisted.read_int(d, "replays"),
        )


def first_breaking(
    ws: SeriesRepo, runs: Sequence[TopicRun], line: Sequence[pygit2.Commit], names: Sequence[str], hooks: Hooks
) -> list[Breaking]:
    """For each topic in `names` (each conflicts at line[-1]), where it starts to."""
    out = []
    for name in names:
        prober = Prober(ws, runs, line, hooks)
        probes: dict[int, Probe] = {}

        def fails(index: int) -> bool:
            probes[index] = found = prober.probe(index, {name})
            return name in found.conflicts

        if not line or not fails(len(line) - 1):
            continue  # applies at REF after all (a remembered resolution, say)
        at = _bisect(len(line), fails)
        files = probes[at].conflicts.get(name, ())
        out.append(Breaking(name, UpstreamCommit.of(line[at]), at + 1, len(line), files, prober.replays))
    return out


@dataclass(frozen=True)
class Reach:
    """How far along upstream's main line the whole series still applies."""

    target: UpstreamCommit | None  # the newest commit where every topic applies (None: not even the first)
    position: int  # its 1-based position on old base..REF (0: none)
    total: int
    blocker: UpstreamCommit | None  # the next commit, where something stops applying
    blocked: dict[str, tuple[str, ...]]  # topic -> conflicting files at the blocker
    replays: int

    @property
    def complete(self) -> bool:
        return self.position == self.total

    def to_json(self) -> dict[str, Json]:
        return {
            "target": None if self.target is None else self.target.to_json(),
            "position": self.position,
            "total": self.total,
            "blocker": None if self.blocker is None else self.blocker.to_json(),
            "blocked": {k: list(v) for k, v in self.blocked.items()},
            "replays": self.replays,
        }

    @classmethod
    def from_json(cls, data: Json) -> "Reach":
        d = persisted.read_object(data, "as_far_as_possible")
        blocked = persisted.read_object(d.get("blocked"), "blocked")
        return cls(
            None if d.get("target") is None else UpstreamCommit.from_json(d["target"], "target"),
            persisted.read_int(d, "position"),
            persisted.read_int(d, "total"),
            None if d.get("blocker") is None else UpstreamCommit.from_json(d["blocker"], "blocker"),
            {name: tuple(persisted.read_strs(blocked, name)) for name in blocked},
            persisted.read_int(d, "replays"),
        )


def as_far_as_possible(ws: SeriesRepo, runs: Sequence[TopicRun], line: Sequence[pygit2.Commit], hooks: Hooks) -> Reach:
    if not line:
        return Reach(None, 0, 0, None, {}, 0)
    prober = Prober(ws, runs, line, hooks)
    probes = {len(line) - 1: prober.probe(len(line) - 1)}
    if probes[len(line) - 1].clean:
        return Reach(UpstreamCommit.of(line[-1]), len(line), len(line), None, {}, prober.replays)

    def fails(index: int) -> bool:
        probes[index] = found = prober.probe(index)
        return not found.clean

    at = _bisect(len(line), fails)
    target = UpstreamCommit.of(line[at - 1]) if at > 0 else None
    return Reach(target, at, len(line), UpstreamCommit.of(line[at]), dict(probes[at].conflicts), prober.replays)
