"""The integration branch: the base plus every active topic, in order, built in memory.

One merge commit per topic on a first-parent chain from the base: parents (chain so far,
topic head), tree = the chain's tree with the topic's own changes (its start..head diff)
merged in by the same merge as a replayed commit (series.engine.merge: git's merge-ort
answer, in memory where provably the same). So `git log --first-parent`
lists the topics, each topic's commits stay reachable, and base..integration is the whole
series' diff (what the wheel overlay applies).

A path that conflicts while merging topic Y is reported as an inter-topic conflict
against the earlier topic(s) X that changed the same path: "topic X vs topic Y, file F".
Y is then left out of the chain and the build goes on, so every such conflict is found.

Public API:
    integrate(repo, base, parts, *, odb=None, committer=None) -> IntegrationResult
        (committer None: each merge is signed as its topic head's committer, so the
        same base and heads give the same ids anywhere)
    series.engine.rebase.build_integration(ws) -> IntegrationResult (current branches)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pygit2

from series.engine.merge import merge_trees
from series.engine.odb import MemOdb
from series.engine.replay import signature_line


@dataclass(frozen=True)
class InterTopicConflict:
    topic: str      # the later topic, the one that did not merge
    other: str      # the earlier topic that changed the same file ("upstream" if none)
    path: str

    def __str__(self) -> str:
        return f"topic {self.other} vs topic {self.topic}, file {self.path}"


@dataclass(frozen=True)
class IntegrationPart:
    name: str
    start: pygit2.Oid    # the commit the topic's own commits sit on
    head: pygit2.Oid


@dataclass(frozen=True)
class IntegrationResult:
    base: pygit2.Oid
    head: pygit2.Oid                          # the chain's tip (base when no topic)
    topics: tuple[str, ...]                   # topics merged into it, in order
    conflicts: tuple[InterTopicConflict, ...]  # topics left out, and why

    @property
    def ok(self) -> bool:
        return not self.conflicts


def integrate(repo: pygit2.Repository, base: pygit2.Oid, parts: Sequence[IntegrationPart], *,
              odb: MemOdb | None = None, committer: pygit2.Signature | None = None) -> IntegrationResult:
    store = odb if odb is not None else MemOdb(repo)
    fixed = signature_line(committer) if committer is not None else None
    head, tree = base, store.commit_tree(base)
    touched: dict[str, list[str]] = {}
    included: list[str] = []
    conflicts: list[InterTopicConflict] = []
    for part in parts:
        start_tree = store.commit_tree(part.start)
        merged = merge_trees(store, start_tree, tree, store.commit_tree(part.head))
        if not merged.clean:
            for path in sorted({c.path for c in merged.conflicts}):
                others = touched.get(path) or ["upstream"]
                conflicts += [InterTopicConflict(part.name, other, path) for other in others]
            continue
        for path, _, _ in store.changed(start_tree, store.commit_tree(part.head)):
            touched.setdefault(path, []).append(part.name)
        new_tree = merged.tree
        message = f"Merge topic '{part.name}' into integration\n".encode()
        # By default the merge is signed as the topic head's committer: the same inputs
        # give the same commit ids on any machine (a rebuilt, unchanged series moves nothing).
        line = fixed if fixed is not None else store.header(part.head, b"committer")
        head = store.commit(new_tree if new_tree is not None else store.tree({}),
                            [head, part.head], line, line, message)
        tree = store.commit_tree(head)
        included.append(part.name)
    if odb is None:
        store.persist()
    return IntegrationResult(base, head, tuple(included), tuple(conflicts))
