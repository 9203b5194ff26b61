"""The breaks of the last rebase, as the branches are now: what `series status` and `series
check` warn about. The rebase's report (series.verbs.rebase.semantic writes `start` and
`old_head` per topic) says what each topic was before and which base it left; the check
(series.analysis.breaks) runs again on the current branch heads, so a fix committed since
clears a warning and a later edit that breaks something shows.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pygit2

from series import persisted
from series.analysis import breaks
from series.engine import report
from series import halted
from series.git.repo import branch_commit

if TYPE_CHECKING:
    from series.workspace import Workspace


def since_last_rebase(ws: "Workspace") -> dict[str, list[breaks.Break]]:
    """What each active topic's branch, as it is now, breaks of what it used before the last
    rebase, against the base it moved to: recomputed from the branches (a fix committed since
    clears it, an edit that breaks something shows), with the topic's old version and the old
    base read from that rebase's report. Empty when the last rebase (done, not a dry run) did
    not move the series onto the current base (an undo, a base set by hand, none yet)."""
    base = str(ws.base_commit().id)
    last = _last_rebase(ws.repo)
    if last is None or last[0] != base:
        return {}
    _, old_base, rows = last
    spans = []
    for topic in ws.series.active():
        head = branch_commit(ws.repo, topic.branch)
        row = rows.get(topic.name)
        if head is None or row is None or not all(c in ws.repo for c in row):
            continue
        spans.append(breaks.TopicSpan(topic.name, row[0], row[1], str(head.id)))
    if old_base not in ws.repo:
        return {}
    return {k: v for k, v in breaks.check(ws.repo, old_base, base, spans, _repo_reader(ws.repo)).items() if v}


def _last_rebase(repo: pygit2.Repository) -> tuple[str, str, dict[str, tuple[str, str]]] | None:
    """(onto sha, old base sha, {topic: (start, old head)}) of the newest report of a finished
    rebase; None when there is none. A report that does not read is passed over: it is ours,
    and status must not fail on it."""
    found = sorted(report.report_dir(repo).glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in found:
        try:
            d = persisted.read_object(json.loads(path.read_text()), "report")
            if d.get("command") != "rebase" or d.get("dry_run") is not False or d.get("status") != "done":
                continue
            rows = {}
            for item in persisted.read_list(d, "topics", []):
                row = persisted.read_object(item, "topic")
                if row.get("outcome") == halted.TopicOutcome.CLEAN.value and isinstance(row.get("start"), str):
                    rows[persisted.read_str(row, "name")] = (persisted.read_str(row, "start"),
                                                             persisted.read_str(row, "old_head"))
            return (persisted.read_str(persisted.read_object(d.get("onto"), "onto"), "sha"),
                    persisted.read_str(persisted.read_object(d.get("old_base"), "old_base"), "sha"), rows)
        except (OSError, ValueError):
            continue
    return None


def _repo_reader(repo: pygit2.Repository) -> breaks.Read:
    def read(commit: str, path: str) -> bytes | None:
        try:
            entry = repo[commit].peel(pygit2.Commit).tree[path]
        except KeyError:
            return None
        return entry.data if isinstance(entry, pygit2.Blob) else None
    return read

