"""One row per topic: its status in series.yaml and its own work's size (commits, files,
lines over the base), or that its branch is missing. The rows `series status` shows and
`series ci report` tabulates (one answer for both; each verb words them itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from series.model import Status
from series.workspace import Workspace


@dataclass(frozen=True)
class TopicStatus:
    name: str
    branch: str
    status: Status
    commits: int | None
    files: int | None
    added: int | None
    deleted: int | None
    on_base: bool | None  # the branch contains upstream.base
    fork_point: str | None  # where it really sits, when not on the base
    upstream_pr: int | None
    superseded_by: str | None
    merged_in: str | None
    measured: str | None  # the comment that posted a measurement on the PR
    missing: bool = False


class _FromConfig(TypedDict):
    """The TopicStatus fields that come from series.yaml, whether or not the branch exists."""

    name: str
    branch: str
    status: Status
    upstream_pr: int | None
    superseded_by: str | None
    merged_in: str | None
    measured: str | None


def topic_rows(ws: Workspace) -> list[TopicStatus]:
    rows = []
    for topic in ws.series.topics:
        common = _FromConfig(
            name=topic.name,
            branch=topic.branch,
            status=topic.status,
            upstream_pr=topic.upstream_pr,
            superseded_by=topic.superseded_by,
            merged_in=topic.merged_in,
            measured=topic.measured,
        )
        own = ws.own(topic)  # a stacked topic: its dependencies' commits are not counted
        if own is None:
            rows.append(
                TopicStatus(
                    **common,
                    commits=None,
                    files=None,
                    added=None,
                    deleted=None,
                    on_base=None,
                    fork_point=None,
                    missing=True,
                )
            )
            continue
        stats = own.stats
        rows.append(
            TopicStatus(
                **common,
                commits=len(own.commits),
                files=len(stats),
                added=sum(s.added for s in stats),
                deleted=sum(s.deleted for s in stats),
                on_base=own.on_base,
                fork_point=None if own.on_base else str(own.start.id)[:12],
            )
        )
    return rows
