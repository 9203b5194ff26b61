"""The integration tree: the base plus every active topic, computed in memory.

The rebase engine (series.engine.rebase.build_integration) builds the chain; this module
adds what `series build` and `series test` need around it: topics left out (`--without`)
and the paths touched. The chain's commits are signed with each topic head's committer, so
the same base and heads give the same ids, and so the same wheel version.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import pygit2

from series.engine.rebase import build_integration
from series.errors import SeriesError
from series.model import Status, Topic
from series.workspace import Workspace


@dataclass(frozen=True)
class Integration:
    base: pygit2.Commit
    commit: pygit2.Commit  # base itself when no topic is active
    topics: tuple[Topic, ...]  # the topics it contains, in order

    @property
    def sha(self) -> str:
        return str(self.commit.id)


def without(ws: Workspace, names: tuple[str, ...]) -> Workspace:
    """The same workspace with these topics left out (for `series test --without`)."""
    for name in names:
        ws.series.topic(name)  # unknown name: a clear error
    topics = tuple(dataclasses.replace(t, status=Status.DROPPED) if t.name in names else t for t in ws.series.topics)
    return Workspace(dataclasses.replace(ws.series, topics=topics), ws.repo)


def build(ws: Workspace) -> Integration:
    """The engine's integration chain (ConflictError when topics do not combine)."""
    result = build_integration(ws)
    built = Integration(ws.base_commit(), ws.repo[result.head].peel(pygit2.Commit), ws.series.active())
    return built


def topic_paths(ws: Workspace, topics: tuple[Topic, ...] | None = None) -> dict[str, tuple[str, ...]]:
    """{path: topics touching it} over each topic's own diff (series.topics)."""
    touched: dict[str, list[str]] = {}
    for topic in topics if topics is not None else ws.series.active():
        for path in ws.require_own(topic).paths:
            touched.setdefault(path, []).append(topic.name)
    return {p: tuple(t) for p, t in touched.items()}


def require_topics(ws: Workspace, names: tuple[str, ...]) -> tuple[Topic, ...]:
    topics = tuple(ws.series.topic(n) for n in names)
    for topic in topics:
        if not topic.active:
            raise SeriesError(
                f"topic {topic.name} is {topic.status.value}, not active: "
                "only active topics are in the integration branch"
            )
    return topics
