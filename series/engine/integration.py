"""The integration branch: the base plus every active topic, in order, built in memory.

One merge commit per topic on a first-parent chain from the base: parents (chain so far,
topic head), tree = the chain's tree with the topic's own changes (its start..head diff)
merged in by the same merge as a replayed commit (series.engine.merge: git's merge-ort
answer, in memory where provably the same). So `git log --first-parent`
lists the topics, each topic's commits stay reachable, and base..integration is the whole
series' diff (what the wheel overlay applies).

A path that conflicts while merging topic Y is reported against the earlier topic(s) X
that changed the same path, but a pair is named ("topic X vs topic Y, file F") only where
git's own merge of the two branches (`git merge-tree --write-tree X Y`, the merge base
git picks) conflicts in F: on a stack, the topics under Y changed the file too, and
naming each of them sent people chasing conflicts git does not see. Where no earlier
topic conflicts with Y alone, Y does not merge onto the chain of them (a branch holding
another topic's commits without depends_on, after a fixup there; or three-way effects):
said as such. Y is then left out of the chain and the build goes on, so every conflict
is found; a topic depending on one left out is left out with it (its own diff starts at
that topic's head, which the chain does not have).

Public API:
    integrate(repo, base, parts, *, odb=None, committer=None) -> IntegrationResult
        (committer None: each merge is signed as its topic head's committer, so the
        same base and heads give the same ids anywhere)
    series.engine.rebase.build_integration(ws) -> IntegrationResult (current branches)
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pygit2

from series.engine.merge import merge_trees
from series.engine.odb import MemOdb
from series.engine.ports import SeriesRepo
from series.engine.replay import signature_line
from series.git.command import git


class Clash(enum.Enum):
    PAIR = "pair"  # git's merge of the two branches alone conflicts in the file
    CHAIN = "chain"  # merges with each earlier topic alone, not onto them all
    DEPENDENCY = "dependency"  # left out with a topic it depends on


@dataclass(frozen=True)
class InterTopicConflict:
    topic: str  # the later topic, the one that did not merge
    other: str  # PAIR: the earlier topic; CHAIN: the earlier topics that changed the
    # file, comma-separated ("upstream" if none); DEPENDENCY: the dependency
    path: str  # "" for DEPENDENCY
    clash: Clash = Clash.PAIR

    def __str__(self) -> str:
        if self.clash is Clash.DEPENDENCY:
            return f"topic {self.topic} left out with topic {self.other}, which it depends on"
        if self.clash is Clash.CHAIN and self.other != "upstream":
            return (
                f"topic {self.topic} does not merge onto {self.other}, file {self.path}, "
                "though git merges it with each alone"
            )
        return f"topic {self.other} vs topic {self.topic}, file {self.path}"


@dataclass(frozen=True)
class IntegrationPart:
    name: str
    start: pygit2.Oid  # the commit the topic's own commits sit on
    head: pygit2.Oid
    depends_on: tuple[str, ...] = ()


def pair_conflicts(repo: pygit2.Repository, ours: pygit2.Oid, theirs: pygit2.Oid) -> frozenset[str] | None:
    """The files git's merge of two branch heads conflicts in, asked of git as a person
    would (`git merge-tree --write-tree`: git picks the merge base, criss-cross included,
    which merge_trees leaves to its caller); None when git cannot say (a head made in
    memory and not written yet)."""
    if ours not in repo or theirs not in repo:
        return None
    proc = git(
        Path(repo.path),
        "merge-tree",
        "--write-tree",
        "--name-only",
        "--no-messages",
        "-z",
        str(ours),
        str(theirs),
        check=False,
    )
    if proc.returncode not in (0, 1):
        return None
    return frozenset(name for name in proc.stdout.split("\0")[1:] if name)


def _clashes(
    repo: pygit2.Repository, part: IntegrationPart, path: str, earlier: list[IntegrationPart]
) -> list[InterTopicConflict]:
    """Why `part` did not merge at `path`: the earlier topics git's merge says it conflicts
    with there (one it cannot ask stays named, as before), else the chain of them."""
    named = [
        InterTopicConflict(part.name, other.name, path)
        for other in earlier
        if (found := pair_conflicts(repo, other.head, part.head)) is None or path in found
    ]
    if named:
        return named
    others = ", ".join(other.name for other in earlier) or "upstream"
    return [InterTopicConflict(part.name, others, path, Clash.CHAIN)]


@dataclass(frozen=True)
class IntegrationResult:
    base: pygit2.Oid
    head: pygit2.Oid  # the chain's tip (base when no topic)
    topics: tuple[str, ...]  # topics merged into it, in order
    conflicts: tuple[InterTopicConflict, ...]  # topics left out, and why

    @property
    def ok(self) -> bool:
        return not self.conflicts


def integrate(
    repo: pygit2.Repository,
    base: pygit2.Oid,
    parts: Sequence[IntegrationPart],
    *,
    odb: MemOdb | None = None,
    committer: pygit2.Signature | None = None,
) -> IntegrationResult:
    store = odb if odb is not None else MemOdb(repo)
    fixed = signature_line(committer) if committer is not None else None
    head, tree = base, store.commit_tree(base)
    touched: dict[str, list[IntegrationPart]] = {}
    included: list[str] = []
    conflicts: list[InterTopicConflict] = []
    left_out: set[str] = set()
    for part in parts:
        missing = [dep for dep in part.depends_on if dep in left_out]
        if missing:
            conflicts += [InterTopicConflict(part.name, dep, "", Clash.DEPENDENCY) for dep in missing]
            left_out.add(part.name)
            continue
        start_tree = store.commit_tree(part.start)
        merged = merge_trees(store, start_tree, tree, store.commit_tree(part.head))
        if not merged.clean:
            for path in sorted({c.path for c in merged.conflicts}):
                conflicts += _clashes(repo, part, path, touched.get(path, []))
            left_out.add(part.name)
            continue
        for path, _, _ in store.changed(start_tree, store.commit_tree(part.head)):
            touched.setdefault(path, []).append(part)
        new_tree = merged.tree
        message = f"Merge topic '{part.name}' into integration\n".encode()
        # By default the merge is signed as the topic head's committer: the same inputs
        # give the same commit ids on any machine (a rebuilt, unchanged series moves nothing).
        line = fixed if fixed is not None else store.header(part.head, b"committer")
        head = store.commit(
            new_tree if new_tree is not None else store.tree({}), [head, part.head], line, line, message
        )
        tree = store.commit_tree(head)
        included.append(part.name)
    if odb is None:
        store.persist()
    return IntegrationResult(base, head, tuple(included), tuple(conflicts))


def combine_hint(ws: SeriesRepo, conflicts: Sequence[InterTopicConflict]) -> str:
    """What to do about the first conflict that is not only a consequence of another, as
    commands that work as written: see git's conflict, and rebuild the later branch on
    the earlier one; or the depends_on a branch built on another topic lacks."""
    first = next((c for c in conflicts if c.clash is not Clash.DEPENDENCY), None)
    if first is None:
        return ""
    topic, name = ws.series.topic(first.topic), ws.config_path.name
    if first.clash is Clash.PAIR:
        other = ws.series.topic(first.other)
        then = (
            ""
            if other.name in topic.depends_on
            else f", then add 'depends_on: [{other.name}]' to topic {topic.name} in {name}"
        )
        return (
            f"see it: git merge-tree --write-tree --name-only {other.branch} {topic.branch}; "
            f"resolve it by building {topic.name} on {other.name}: "
            f"git rebase {other.branch} {topic.branch}{then}"
        )
    under = None if topic.depends_on else ws.built_on(topic)
    if under is not None:
        # without depends_on its changes are taken from the base: under's commits twice
        return (
            f"{topic.branch} holds the commits of topic {under.name} but has no depends_on, so "
            f"they would be applied twice: add 'depends_on: [{under.name}]' to topic {topic.name} in {name}"
        )
    if first.clash is Clash.CHAIN and first.other != "upstream":
        return (
            f"git merges {topic.name} with each of {first.other} alone: rebuild {topic.branch} "
            f"on them, or move {topic.name} before them in {name}"
        )
    return (
        f"{topic.branch} and {ws.series.upstream.base} disagree on {first.path} though no "
        f"earlier topic changed it: rebuild {topic.branch} on {ws.series.upstream.base}"
    )
