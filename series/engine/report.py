"""The rebase report: per topic clean / conflict (files) / merged upstream / commits dropped,
with a range-diff summary, kept under .git/series/reports/<id>.json and .txt. The verb
words it (series.verbs.rebase.text) and names itself in it (`command`).

The range-diff counts (= same patch, ! changed, < dropped, > new) come from the replay
itself: it knows each old commit's new commit, and whether its patch had to change. For
a topic with a changed patch, `git range-diff` is run too (after the new commits are
written) and its counts and text are used; an unchanged topic needs no subprocess.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import pygit2

from series.ops.fs import state_dir, write_atomically
from series.engine.integration import Clash, InterTopicConflict
from series.engine.rebase import RebaseOutcome
from series.engine.rebase_state import HaltedCommit, TopicOutcome, TopicRun
from series.persisted import (
    Json,
    JsonObject,
    read_bool,
    read_enum,
    read_int,
    read_list,
    read_object,
    read_opt_str,
    read_str,
    read_strs,
)
from series.git.command import git_many
from series.git.repo import message, workdir

_RANGE_LINE = re.compile(r"^\s*(?:\d+|-):\s+(?:[0-9a-f]+|-+)\s+([=!<>])\s")


def _subject(repo: pygit2.Repository, sha: str) -> str:
    return message(repo[pygit2.Oid(hex=sha)].peel(pygit2.Commit)).split("\n", 1)[0]


def _summary(run: TopicRun) -> dict[str, int]:
    dropped, changed = set(run.dropped), set(run.changed)
    counts = {"=": 0, "!": 0, "<": 0, ">": 0}
    for sha in run.commits[: run.done]:
        if sha in dropped:
            counts["<"] += 1
        elif sha in changed:
            counts["!"] += 1
        elif sha in run.mapping:
            counts["="] += 1
    return counts


def range_diffs(repo: pygit2.Repository, runs: list[TopicRun]) -> list[tuple[dict[str, int], str]]:
    """`git range-diff` of each topic (old range, new range): counts and text; run side by
    side, one git process per topic."""
    procs = git_many(
        workdir(repo),
        [
            ("range-diff", "--no-color", f"{run.start}..{run.old_head}", f"{run.new_start}..{run.new_head}")
            for run in runs
        ],
    )
    out = []
    for run, proc in zip(runs, procs):
        if proc.returncode != 0:
            out.append((_summary(run), ""))
            continue
        counts = {"=": 0, "!": 0, "<": 0, ">": 0}
        for line in proc.stdout.splitlines():
            m = _RANGE_LINE.match(line)
            if m:
                counts[m.group(1)] += 1
        out.append((counts, proc.stdout))
    return out


class ReportStatus(str, enum.Enum):
    """A `series rebase --json` document's "status", every value it can have."""

    DRY_RUN = "dry-run"
    DONE = "done"
    CONFLICT = "conflict"  # a conflict halted it, or --strict held it on a break
    ABORTED = "aborted"  # --abort
    BLOCKED = "blocked"  # --as-far-as-possible: not even the first commit applies


@dataclass(frozen=True)
class CommitPath:
    commit: str
    path: str


@dataclass(frozen=True)
class DroppedCommit:
    commit: str
    subject: str


@dataclass(frozen=True)
class TopicReport:
    """One topic's line of the report."""

    name: str
    branch: str
    outcome: TopicOutcome
    commits: int
    old_head: str
    new_head: str | None  # clean, empty: where its branch goes
    depends_on: str | None
    reason: str = ""
    merged_in: str | None = None  # merged: the release that carries it
    modified: bool = False
    detail: str = ""
    dropped: tuple[DroppedCommit, ...] = ()
    conflict: HaltedCommit | None = None
    resolved_from_memory: tuple[CommitPath, ...] = ()
    resolved_by_hand: tuple[CommitPath, ...] = ()
    range_diff: Mapping[str, int] | None = None  # clean: "=" "!" "<" ">" counts
    range_diff_text: str | None = None

    def to_json(self) -> dict[str, Json]:
        row: dict[str, Json] = {
            "name": self.name,
            "branch": self.branch,
            "outcome": self.outcome.value,
            "commits": self.commits,
            "old_head": self.old_head,
            "new_head": self.new_head,
            "depends_on": self.depends_on,
        }
        if self.reason:
            row["reason"] = self.reason
        if self.outcome == TopicOutcome.MERGED:
            row["merged_in"] = self.merged_in
            row["modified"] = self.modified
            if self.detail:
                row["detail"] = self.detail
        row["dropped"] = [{"commit": d.commit, "subject": d.subject} for d in self.dropped]
        if self.conflict:
            row["conflict"] = self.conflict.to_json()
        row["resolved_from_memory"] = [{"commit": r.commit, "path": r.path} for r in self.resolved_from_memory]
        row["resolved_by_hand"] = [{"commit": r.commit, "path": r.path} for r in self.resolved_by_hand]
        if self.range_diff_text is not None:
            row["range_diff_text"] = self.range_diff_text
        if self.range_diff is not None:
            row["range_diff"] = dict(self.range_diff)
        return row

    @classmethod
    def from_json(cls, data: Json) -> "TopicReport":
        d = read_object(data, "topics[]")
        outcome = read_enum(TopicOutcome, d, "outcome")
        merged = outcome == TopicOutcome.MERGED
        range_diff = d.get("range_diff")
        return cls(
            name=read_str(d, "name"),
            branch=read_str(d, "branch"),
            outcome=outcome,
            commits=read_int(d, "commits"),
            old_head=read_str(d, "old_head"),
            new_head=read_opt_str(d, "new_head"),
            depends_on=read_opt_str(d, "depends_on"),
            reason=read_str(d, "reason") if "reason" in d else "",
            merged_in=read_opt_str(d, "merged_in") if merged else None,
            modified=read_bool(d, "modified") if merged else False,
            detail=read_str(d, "detail") if merged and "detail" in d else "",
            dropped=tuple(
                DroppedCommit(read_str(o, "commit"), read_str(o, "subject"))
                for o in (read_object(x, "dropped[]") for x in read_list(d, "dropped"))
            ),
            conflict=HaltedCommit.from_json(d["conflict"]) if "conflict" in d else None,
            resolved_from_memory=_commit_paths(d, "resolved_from_memory"),
            resolved_by_hand=_commit_paths(d, "resolved_by_hand"),
            range_diff=None
            if range_diff is None
            else {k: read_int(read_object(range_diff, "range_diff"), k) for k in read_object(range_diff, "range_diff")},
            range_diff_text=read_str(d, "range_diff_text") if "range_diff_text" in d else None,
        )


def _commit_paths(d: JsonObject, key: str) -> tuple[CommitPath, ...]:
    return tuple(
        CommitPath(read_str(o, "commit"), read_str(o, "path"))
        for o in (read_object(x, f"{key}[]") for x in read_list(d, key))
    )


@dataclass(frozen=True)
class IntegrationReport:
    head: str
    topics: tuple[str, ...]
    conflicts: tuple[InterTopicConflict, ...]

    def to_json(self) -> dict[str, Json]:
        return {
            "head": self.head,
            "topics": list(self.topics),
            "conflicts": [
                {"topic": c.topic, "other": c.other, "path": c.path, "clash": c.clash.value} for c in self.conflicts
            ],
        }

    @classmethod
    def from_json(cls, data: Json) -> "IntegrationReport":
        d = read_object(data, "integration")
        conflicts = (read_object(c, "conflicts[]") for c in read_list(d, "conflicts"))
        return cls(
            read_str(d, "head"),
            tuple(read_strs(d, "topics")),
            tuple(
                InterTopicConflict(
                    read_str(c, "topic"), read_str(c, "other"), read_str(c, "path"), read_enum(Clash, c, "clash")
                )
                for c in conflicts
            ),
        )


@dataclass(frozen=True)
class RebaseReport:
    """The report of one step of an operation over the topics (module docstring)."""

    id: str
    command: str
    status: ReportStatus
    dry_run: bool
    onto_spec: str
    onto_name: str
    onto_sha: str
    old_base_name: str
    old_base_sha: str
    topics: tuple[TopicReport, ...]
    integration: IntegrationReport | None
    operation: str | None
    worktree: str | None
    notes: tuple[str, ...]

    @property
    def conflict(self) -> bool:
        """A topic conflicts, or the topics do not combine."""
        return self.status == ReportStatus.CONFLICT or bool(self.integration and self.integration.conflicts)

    def to_json(self) -> dict[str, Json]:
        return {
            "id": self.id,
            "command": self.command,
            "status": self.status.value,
            "dry_run": self.dry_run,
            "onto": {"spec": self.onto_spec, "name": self.onto_name, "sha": self.onto_sha},
            "old_base": {"name": self.old_base_name, "sha": self.old_base_sha},
            "topics": [t.to_json() for t in self.topics],
            "integration": self.integration.to_json() if self.integration else None,
            "operation": self.operation,
            "worktree": self.worktree,
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Json | JsonObject) -> "RebaseReport":
        """Its to_json read back, every field checked (a ValueError names the wrong one);
        keys the verb added beside them are the verb's to read."""
        d = read_object(data, "report")
        onto, old = read_object(d.get("onto"), "onto"), read_object(d.get("old_base"), "old_base")
        integration = d.get("integration")
        return cls(
            id=read_str(d, "id"),
            command=read_str(d, "command"),
            status=read_enum(ReportStatus, d, "status"),
            dry_run=read_bool(d, "dry_run"),
            onto_spec=read_str(onto, "spec"),
            onto_name=read_str(onto, "name"),
            onto_sha=read_str(onto, "sha"),
            old_base_name=read_str(old, "name"),
            old_base_sha=read_str(old, "sha"),
            topics=tuple(TopicReport.from_json(t) for t in read_list(d, "topics")),
            integration=None if integration is None else IntegrationReport.from_json(integration),
            operation=read_opt_str(d, "operation"),
            worktree=read_opt_str(d, "worktree"),
            notes=tuple(read_strs(d, "notes")),
        )


def _needs_range_diff(outcome: RebaseOutcome, run: TopicRun) -> bool:
    """A clean topic whose patch changed, once its new commits are written."""
    return (
        run.outcome == TopicOutcome.CLEAN
        and _summary(run)["!"] > 0
        and outcome.persisted
        and bool(run.new_start and run.new_head)
    )


def _topic(
    repo: pygit2.Repository, outcome: RebaseOutcome, run: TopicRun, diffed: tuple[dict[str, int], str] | None
) -> TopicReport:
    counts: dict[str, int] | None = None
    text: str | None = None
    if run.outcome == TopicOutcome.CLEAN:
        counts, text = diffed if diffed is not None else (_summary(run), None)
    merged = run.outcome == TopicOutcome.MERGED
    return TopicReport(
        name=run.name,
        branch=run.branch,
        outcome=run.outcome,
        commits=len(run.commits),
        old_head=run.old_head,
        new_head=run.new_head if run.outcome in (TopicOutcome.CLEAN, TopicOutcome.EMPTY) else None,
        depends_on=run.depends_on,
        reason=run.reason,
        merged_in=outcome.state.onto_name if merged else None,
        modified=run.modified,
        detail=run.detail,
        dropped=tuple(DroppedCommit(c, _subject(repo, c)) for c in run.dropped),
        conflict=run.conflict,
        resolved_from_memory=tuple(CommitPath(c, p) for c, p in run.resolved),
        resolved_by_hand=tuple(CommitPath(c, p) for c, p in run.by_hand),
        range_diff=counts,
        range_diff_text=text,
    )


def build(repo: pygit2.Repository, outcome: RebaseOutcome, report_id: str, command: str) -> RebaseReport:
    state = outcome.state
    diffing = [run for run in state.topics if _needs_range_diff(outcome, run)]
    diffed = dict(zip((run.name for run in diffing), range_diffs(repo, diffing)))
    topics = tuple(_topic(repo, outcome, run, diffed.get(run.name)) for run in state.topics)
    integ = outcome.integration
    integration = None
    if integ is not None:
        integration = IntegrationReport(str(integ.head), tuple(integ.topics), tuple(integ.conflicts))
    status = (
        ReportStatus.DRY_RUN if outcome.dry_run else ReportStatus.DONE if outcome.finished else ReportStatus.CONFLICT
    )
    if any(t.outcome == TopicOutcome.CONFLICT for t in topics):
        status = ReportStatus.CONFLICT
    return RebaseReport(
        id=report_id,
        command=command,
        status=status,
        dry_run=outcome.dry_run,
        onto_spec=state.onto_spec,
        onto_name=state.onto_name,
        onto_sha=state.onto_sha,
        old_base_name=state.old_base_name,
        old_base_sha=state.old_base_sha,
        topics=topics,
        integration=integration,
        operation=outcome.op_id,
        worktree=str(outcome.worktree) if outcome.worktree else None,
        notes=tuple(outcome.notes),
    )


def report_dir(repo: pygit2.Repository) -> Path:
    """Where reports are kept: <id>.json and <id>.txt (the id of the operation, or of the
    halted state, or dry-run-<time>)."""
    return state_dir(repo) / "reports"


def write(repo: pygit2.Repository, report: RebaseReport, document: Mapping[str, Json], text: str) -> Path:
    """The report as JSON (`document`: its to_json, with what the verb found) and as text,
    with the range-diffs."""
    directory = report_dir(repo)
    directory.mkdir(parents=True, exist_ok=True)
    base = directory / report.id
    full = [text]
    for t in report.topics:
        if t.range_diff_text:
            full += ["", f"range-diff {t.name}:", t.range_diff_text.rstrip()]
    write_atomically(base.with_suffix(".json"), json.dumps(document, indent=2) + "\n")
    write_atomically(base.with_suffix(".txt"), "\n".join(full) + "\n")
    return base.with_suffix(".txt")
