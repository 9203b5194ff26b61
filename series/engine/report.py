"""The rebase report: per topic clean / conflict (files) / merged upstream / commits dropped,
with a range-diff summary, printed and kept under .git/series/reports/<id>.json and .txt.

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

from series.analysis.attribution import describe
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


def build(repo: pygit2.Repository, outcome: Outcome, report_id: str) -> dict[str, Any]:
    state = outcome.state
    topics = []
    for run in state.topics:
        row: dict[str, Any] = {
            "name": run.name, "branch": run.branch, "outcome": run.outcome,
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
            row["conflict"] = run.conflict
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
        "id": report_id, "command": "rebase", "status": status, "dry_run": outcome.dry_run,
        "onto": {"spec": state.onto_spec, "name": state.onto_name, "sha": state.onto_sha},
        "old_base": {"name": state.old_base_name, "sha": state.old_base_sha},
        "topics": topics, "integration": integration, "operation": outcome.op_id,
        "worktree": str(outcome.worktree) if outcome.worktree else None, "notes": outcome.notes,
    }


def render(report: dict[str, Any], integration_branch: str | None = None) -> str:
    onto, old = report["onto"], report["old_base"]
    topics = report["topics"]
    counts: dict[str, int] = {}
    for t in topics:
        counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
    head = "rebase (dry run)" if report["dry_run"] else "rebase"
    spec = f" ('{onto['spec']}')" if onto["spec"] != onto["name"] else ""
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    out = [f"{head} onto {onto['name']}{spec} {onto['sha'][:12]} from {old['name']}: {summary}"]
    width = max([len(t["name"]) for t in topics] + [5])
    for t in topics:
        kind = t["outcome"]
        if kind == "clean":
            rd = t["range_diff"]
            text = f"clean      {t['commits']} commit(s) -> {str(t['new_head'])[:12]}  range-diff " + \
                   " ".join(f"{k}{v}" for k, v in rd.items() if v)
        elif kind == "conflict":
            c = t["conflict"]
            text = f"CONFLICT   {c['commit'][:12]} {c['subject']}: {', '.join(c['files'])}"
        elif kind == "merged":
            form = "merged upstream in modified form" if t.get("modified") else "merged upstream"
            text = f"{form} ({t.get('reason', '')}); status: merged, branch kept"
        else:
            text = f"{kind:<10} {t.get('reason', '')}"
        out.append(f"  {t['name']:<{width}}  {text}".rstrip())
        for d in t["dropped"]:
            out.append(f"  {'':<{width}}    dropped (already upstream): {d['commit'][:12]} {d['subject']}")
        for r in t["resolved_from_memory"]:
            out.append(f"  {'':<{width}}    resolved from memory: {r['path']}")
        if t.get("detail"):
            out += [f"  {'':<{width}}    {line}" for line in t["detail"].splitlines()]
        out += [f"  {'':<{width}}    {line}" for line in upstream_lines(t)]
    integ = report.get("integration")
    if integ is not None:
        if integ["conflicts"]:
            out.append("the topics do not combine (integration not rebuilt):")
            out += [f"  topic {c['other']} vs topic {c['topic']}, file {c['path']}" for c in integ["conflicts"]]
        elif integration_branch:
            verb = "would be rebuilt" if report["dry_run"] else "rebuilt" if report["operation"] else "unchanged"
            out.append(f"integration {integration_branch} {verb}: {integ['head'][:12]} "
                       f"({len(integ['topics'])} topics)")
    behind = report.get("behind")
    if behind and behind["commits"]:
        base = onto["name"] if report["operation"] else old["name"]
        n = behind["commits"]
        out.append(f"base {base} is {n} commit{'s' if n != 1 else ''} ({behind['days']} days) behind "
                   f"{behind['tip_name']}")
    out += report.get("notes", [])
    return "\n".join(out)


def upstream_lines(topic: dict[str, Any]) -> list[str]:
    """What upstream's history says about one topic's outcome (series.commands.rebase_reach
    fills the fields): who changed the conflicting lines, which commit landed a merged
    topic, the first breaking commit."""
    out = []
    for path, found in topic.get("upstream", {}).items():
        out += [describe(c) for c in found["culprits"]]
        if found["more"]:
            out.append(f"  (and {found['more']} more upstream commits to {path.rsplit('/', 1)[-1]})")
    for c in topic.get("evidence", []):
        label = f"PR #{c['pr']}" if c.get("pr") is not None else "upstream"
        out.append(f"landed by {label}: {c['sha'][:12]} {c['subject']} ({c['author']}, {c['date']})")
    first = topic.get("first_breaking")
    if first:
        label = f"#{first['pr']}" if first.get("pr") is not None else first["sha"][:12]
        out.append(f"first breaking upstream commit: {label} {first['sha'][:12]} {first['subject']} "
                   f"({first['author']}, {first['date']}), {first['position']} of {first['total']} on the "
                   f"first-parent line ({first['replays']} replays)")
    return out


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
