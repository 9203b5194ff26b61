"""The integration tree: the base plus every active topic, computed in memory.

The rebase engine (series.engine.rebase.build_integration) owns this when it is present;
this module adapts its answer, and otherwise builds the chain itself: one commit per
topic, the topic's own diff (fork point..head) merged onto the chain with
`merge_trees`, author and committer taken from the topic's head. The inputs fix every
byte, so the same base and topic heads give the same commit ids, and so the same wheel.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pygit2

from series.errors import ConflictError, SeriesError
from series.git.repo import changed_paths, topic_range
from series.model import Status, Topic
from series.workspace import Workspace


@dataclass(frozen=True)
class Integration:
    base: pygit2.Commit
    commit: pygit2.Commit           # base itself when no topic is active
    topics: tuple[Topic, ...]       # the topics it contains, in order

    @property
    def sha(self) -> str:
        return str(self.commit.id)


def without(ws: Workspace, names: tuple[str, ...]) -> Workspace:
    """The same workspace with these topics left out (for `series test --without`)."""
    for name in names:
        ws.series.topic(name)  # unknown name: a clear error
    topics = tuple(dataclasses.replace(t, status=Status.DROPPED) if t.name in names else t
                   for t in ws.series.topics)
    return Workspace(dataclasses.replace(ws.series, topics=topics), ws.repo)


def build(ws: Workspace) -> Integration:
    engine = _engine_builder()
    base = ws.base_commit()
    if engine is not None:
        result = engine(ws)
        built = Integration(base, _as_commit(ws.repo, result), ws.series.active())
    else:
        built = build_in_memory(ws)
    return _keep_existing(ws, built)


def _keep_existing(ws: Workspace, built: Integration) -> Integration:
    """The integration branch already holding this exact tree over this base is kept.

    A rebuilt chain gets new commit ids whenever its committer date is "now"; the
    version stamped into the wheel comes from the commit id, so reusing the branch's
    commit is what makes building twice give the same wheel.
    """
    name = ws.series.integration
    if name is None:
        return built
    ref = ws.repo.references.get(f"refs/heads/{name}")
    if ref is None:
        return built
    existing = ws.repo[ref.target].peel(pygit2.Commit)
    if existing.id == built.commit.id or existing.tree_id != built.commit.tree_id:
        return built
    if ws.repo.merge_base(existing.id, built.base.id) != built.base.id:
        return built  # same tree over another base: not the same build
    return Integration(built.base, existing, built.topics)


def _engine_builder() -> Any:
    try:
        from series.engine import rebase  # the rebase engine, when it is installed
    except ImportError:
        return None
    return getattr(rebase, "build_integration", None)


def _as_commit(repo: pygit2.Repository, result: Any) -> pygit2.Commit:
    """Accept the shapes an engine may answer with: a commit, an id, or an object holding one."""
    for attr in ("commit", "head", "tip", "id", "oid", "sha"):
        if not isinstance(result, (pygit2.Commit, pygit2.Oid, str)) and hasattr(result, attr):
            result = getattr(result, attr)
            break
    if isinstance(result, pygit2.Commit):
        return result
    return repo[result if isinstance(result, pygit2.Oid) else pygit2.Oid(hex=str(result))].peel(pygit2.Commit)


def build_in_memory(ws: Workspace) -> Integration:
    repo = ws.repo
    base = ws.base_commit()
    tip = base
    used: list[Topic] = []
    for topic in ws.series.active():
        head = ws.head(topic)
        span = _span(ws, topic, base, head)
        if not span.commits:
            continue
        index = repo.merge_trees(span.start.tree, tip.tree, head.tree)
        if index.conflicts:
            files = sorted({(entry or theirs or ours).path
                            for entry, ours, theirs in index.conflicts if (entry or ours or theirs)})
            earlier = _touching(repo, ws, used, base, set(files))
            against = f" vs {', '.join(earlier)}" if earlier else f" vs {ws.series.upstream.base}"
            raise ConflictError(
                f"topic {topic.name}{against} conflicts in {', '.join(files)}: the integration "
                "branch cannot be built; run 'series rebase' to resolve it, or leave the topic out")
        tree = index.write_tree(repo)
        oid = repo.create_commit(
            None, head.author, head.committer,
            f"series: {topic.name}\n\nTopic {topic.name} ({topic.branch}) at {head.id}.\n",
            tree, [tip.id])
        tip = repo[oid].peel(pygit2.Commit)
        used.append(topic)
    return Integration(base, tip, tuple(used))


def _span(ws: Workspace, topic: Topic, base: pygit2.Commit, head: pygit2.Commit) -> Any:
    """The topic's own commits: upstream history and its dependencies' commits hidden."""
    hide = [ws.head(ws.series.topic(dep)).id for dep in topic.depends_on]
    return topic_range(ws.repo, base, head, ws.series.upstream.remote, hide=hide)


def _touching(repo: pygit2.Repository, ws: Workspace, topics: list[Topic],
              base: pygit2.Commit, files: set[str]) -> list[str]:
    names = []
    for topic in topics:
        head = ws.head(topic)
        span = _span(ws, topic, base, head)
        if any(c.path in files for c in changed_paths(repo, span.start.tree, head.tree)):
            names.append(topic.name)
    return names


def topic_paths(ws: Workspace, topics: tuple[Topic, ...] | None = None) -> dict[str, tuple[str, ...]]:
    """{path: topics touching it} over each topic's own diff (fork point..head)."""
    repo = ws.repo
    base = ws.base_commit()
    touched: dict[str, list[str]] = {}
    for topic in topics if topics is not None else ws.series.active():
        head = ws.head(topic)
        span = _span(ws, topic, base, head)
        for change in changed_paths(repo, span.start.tree, head.tree):
            touched.setdefault(change.path, []).append(topic.name)
    return {p: tuple(t) for p, t in touched.items()}


def require_topics(ws: Workspace, names: tuple[str, ...]) -> tuple[Topic, ...]:
    topics = tuple(ws.series.topic(n) for n in names)
    for topic in topics:
        if not topic.active:
            raise SeriesError(f"topic {topic.name} is {topic.status.value}, not active: "
                              "only active topics are in the integration branch")
    return topics
