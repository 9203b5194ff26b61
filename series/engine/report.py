"""The rebase report: per topic clean / conflict (files) / merged upstream / commits dropped,
with a range-diff summary, kept under .git/series/reports/<id>.json and .txt. The verb
words it (series.verbs.rebase.text) and names itself in it (`command`).

The range-diff counts (= same patch, ! changed, < dropped, > new) come from the replay
itself: it knows each old commit's new commit, and whether its patch had to change. For
a topic with a changed patch, `git range-diff` is run too (after the new commits are
written) and its counts and text are used; an unchanged topic needs no subprocess.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pygit2

from series.config import write_text_atomically
from series.engine.rebase import Outcome
from series.engine.state import TopicRun
from series.git.cli import git
from series.git.refs import state_dir
from series.git.repo import workdir

_RANGE_LINE = re.compile(r"^\s*(?:\d+|-):\s+(?:[0-9a-f]+|-+)\s+([=!<>])\s")


def _subject(repo: pygit2.Repository, sha: str) -> str:
    return str(repo[pygit2.Oid(hex=sha)].peel(pygit2.Commit).message.split("\n", 1)[0])


def _summary(run: TopicRun) -> dict[str, int]:
    dropped, changed = set(run.dropped), set(run.changed)
    counts = {"=": 0, "!": 0, "<": 0, ">": 0}
    for sha in run.commits[:run.done]:
        if sha in dropped:
            counts["<"] += 1
        elif sha in changed:
            counts["!"] += 1
        elif sha in run.mapping:
            counts["="] += 1
    return counts


def range_diff(repo: pygit2.Repository, run: TopicRun) -> tuple[dict[str, int], str]:
    proc = git(workdir(repo), "range-diff", "--no-color",
               f"{run.start}..{run.old_head}", f"{run.new_start}..{run.new_head}", check=False)
    if proc.returncode != 0:
        return _summary(run), ""
    counts = {"=": 0, "!": 0, "<": 0, ">": 0}
    for line in proc.stdout.splitlines():
        m = _RANGE_LINE.match(line)
        if m:
            counts[m.group(1)] += 1
    return counts, proc.stdout


def build(repo: pygit2.Repository, outcome: Outcome, report_id: str, command: str) -> dict[str, Any]:
    state = outcome.state
    topics = []
    for run in state.topics:
        row: dict[str, Any] = {
            "name": run.name, "branch": run.branch, "outcome": run.outcome.value,
            "commits": len(run.commits), "old_head": run.old_head,
            "new_head": run.new_head if run.outcome == "clean" else None,
            "depends_on": run.depends_on,
        }
        if run.reason:
            row["reason"] = run.reason
        if run.outcome == "merged":
            row["merged_in"] = state.onto_name
            row["modified"] = run.modified
            if run.detail:
                row["detail"] = run.detail
        row["dropped"] = [{"commit": c, "subject": _subject(repo, c)} for c in run.dropped]
        if run.conflict:
            row["conflict"] = run.conflict.dump()
        row["resolved_from_memory"] = [{"commit": c, "path": p} for c, p in run.resolved]
        row["resolved_by_hand"] = [{"commit": c, "path": p} for c, p in run.by_hand]
        if run.outcome == "clean":
            counts = _summary(run)
            if counts["!"] and outcome.persisted and run.new_start and run.new_head:
                counts, text = range_diff(repo, run)
                row["range_diff_text"] = text
            row["range_diff"] = counts
        topics.append(row)
    integ = outcome.integration
    integration: dict[str, Any] | None = None
    if integ is not None:
        integration = {"head": str(integ.head), "topics": list(integ.topics),
                       "conflicts": [{"topic": c.topic, "other": c.other, "path": c.path}
                                     for c in integ.conflicts]}
    status = "dry-run" if outcome.dry_run else "done" if outcome.finished else "conflict"
    if any(t["outcome"] == "conflict" for t in topics):
        status = "conflict"
    return {
        "id": report_id, "command": command, "status": status, "dry_run": outcome.dry_run,
        "onto": {"spec": state.onto_spec, "name": state.onto_name, "sha": state.onto_sha},
        "old_base": {"name": state.old_base_name, "sha": state.old_base_sha},
        "topics": topics, "integration": integration, "operation": outcome.op_id,
        "worktree": str(outcome.worktree) if outcome.worktree else None, "notes": outcome.notes,
    }


def write(repo: pygit2.Repository, report: dict[str, Any], text: str) -> Path:
    directory = state_dir(repo) / "reports"
    directory.mkdir(parents=True, exist_ok=True)
    base = directory / str(report["id"])
    full = [text]
    for t in report["topics"]:
        if t.get("range_diff_text"):
            full += ["", f"range-diff {t['name']}:", t["range_diff_text"].rstrip()]
    write_text_atomically(base.with_suffix(".json"), json.dumps(report, indent=2) + "\n")
    write_text_atomically(base.with_suffix(".txt"), "\n".join(full) + "\n")
    return base.with_suffix(".txt")
