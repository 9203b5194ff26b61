"""`series ci report`: the nightly's Markdown, for a job summary or an issue body.

Tables, not code blocks: one row per topic (status, commits, lines, and the rebase
outcome when a `series rebase --json` report is given), a `<details>` block per topic
with its files, a Mermaid picture of topics x directories (which topics meet where, the
collisions in red), and the upstream CI steps that cover the series, the long list folded.
GitHub renders all of it in a job summary and an issue; it stays readable as plain text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from series import persisted
from series.semantic.breaks import Break
from series.engine.report import ReportStatus
from series.engine.rebase_state import TopicOutcome
from series.errors import SeriesError
from series.workspace import Workspace

STEPS_SHOWN = 25


def _cell(value: object) -> str:
    """A table cell: pipes escaped, newlines folded (a cell is one line)."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _load(path: Path | None, what: str) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SeriesError(f"{path}: not a {what} --json document ({exc})") from None
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class RebaseConflict:
    commit: str
    subject: str
    files: tuple[str, ...]


@dataclass(frozen=True)
class RebaseRow:
    name: str
    outcome: TopicOutcome
    conflict: RebaseConflict | None
    breaks: tuple[Break, ...] = ()  # what its clean replay broke (series.semantic.breaks)


@dataclass(frozen=True)
class RebaseSummary:
    """What the report (and `ci owners`) read of a `series rebase --json` document."""

    status: ReportStatus
    topics: tuple[RebaseRow, ...]
    strict: bool = False  # --strict: the breaks held the rebase


def parse_rebase(data: persisted.Json) -> RebaseSummary:
    """Every field read is checked: a ValueError names the one that is wrong."""
    d = persisted.read_object(data, "the document")
    if d.get("schema") != 1:
        raise ValueError(f"'schema' is {d.get('schema')!r}, not 1")
    rows = []
    # a blocked --as-far-as-possible or an --abort has no topics
    for n, item in enumerate(persisted.read_list(d, "topics", [])):
        row = persisted.read_object(item, f"topics[{n}]")
        try:
            conflict = None
            if row.get("conflict") is not None:
                c = persisted.read_object(row["conflict"], "conflict")
                conflict = RebaseConflict(
                    persisted.read_str(c, "commit"),
                    persisted.read_str(c, "subject"),
                    tuple(persisted.read_strs(c, "files")),
                )
            found = tuple(Break.from_json(b) for b in persisted.read_list(row, "breaks", []))
            rows.append(
                RebaseRow(persisted.read_str(row, "name"), _parsed(TopicOutcome, row, "outcome"), conflict, found)
            )
        except ValueError as exc:
            raise ValueError(f"topics[{n}]: {exc}") from None
    return RebaseSummary(_parsed(ReportStatus, d, "status"), tuple(rows), d.get("strict") is True)


E = TypeVar("E", TopicOutcome, ReportStatus)


def _parsed(kind: type[E], d: persisted.JsonObject, key: str) -> E:
    """One of the words series writes there, or a ValueError naming the field and the words."""
    word = persisted.read_str(d, key)
    try:
        return kind(word)
    except ValueError:
        raise ValueError(f"'{key}' is {word[:40]!r}, not one of {', '.join(k.value for k in kind)}") from None


def read_rebase(path: Path) -> RebaseSummary:
    """A `series rebase --json` report from a file, or a one-line error naming the file and field."""
    what = "not a 'series rebase --json' report"
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise SeriesError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise SeriesError(f"{path}: {what} (not UTF-8 at byte {exc.start})") from None
    except ValueError as exc:
        raise SeriesError(f"{path}: {what} (not JSON: {exc})") from None
    try:
        return parse_rebase(data)
    except ValueError as exc:
        raise SeriesError(f"{path}: {what}: {exc}") from None


def _node(prefix: str, name: str) -> str:
    return prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)


def mermaid(matrix: dict[str, Any]) -> list[str]:
    """flowchart LR: topic --files--> directory; a directory two topics change is red."""
    lines = ["```mermaid", "flowchart LR"]
    for topic in matrix.get("topics", []):
        lines.append(f'  {_node("t_", topic["name"])}(["{topic["name"]}"])')
    for row in matrix.get("directories", []):
        node = _node("d_", row["path"])
        lines.append(f'  {node}["{row["path"]}"]')
        for name, files in row["topics"].items():
            lines.append(f"  {_node('t_', name)} -- {files} --> {node}")
        if len(row["topics"]) > 1:
            lines.append(f"  style {node} fill:#f8d7da,stroke:#b60205")
    lines.append("```")
    return lines


def followup_section(ws: Workspace) -> list[str]:
    """What upstream landed after the PRs the topics record and the series does not carry
    (series.upstream.followups), the revert warnings first; nothing when there is none."""
    from series.model import Status
    from series.upstream.followups import Carried, FollowUpKind, of_workspace

    after = of_workspace(ws)
    if after is None:
        return []
    if after.trunk is None:
        remote = ws.series.upstream.remote
        return [
            "## Upstream follow-ups and reverts",
            "",
            f"not read: neither `{remote}/main` nor `{remote}/master` is fetched",
            "",
        ]
    warnings = [(p, text) for p in after.prs for text in p.warnings()]
    missing = after.uncarried()
    if not warnings and not missing:
        return []
    out = ["## Upstream follow-ups and reverts not carried", ""]
    out += [f"- **warning** ({_cell(p.topic)}): {_cell(text)}" for p, text in warnings]
    if warnings:
        out.append("")
    # a revert the base has is listed too while its topic still replays the PR (a warning)
    shown = [
        (p, f)
        for p in after.prs
        for f in p.followups
        if f.carried is None
        or (f.carried is Carried.BASE and f.kind is FollowUpKind.REVERT and p.status is Status.ACTIVE)
    ]
    out += ["| PR | topic | upstream commit | kind | its PR | date | carried |", "|---|---|---|---|---|---|---|"]
    out += [
        f"| #{p.pr} | {_cell(p.topic)} | `{f.commit.sha[:12]}` {_cell(f.commit.subject)} | {f.kind.value} | "
        f"{'#' + str(f.commit.pr) if f.commit.pr is not None else ''} | {f.commit.date} | "
        f"{'in the base' if f.carried is Carried.BASE else 'no'} |"
        for p, f in shown
    ]
    return out + [""]


def build(
    ws: Workspace, rebase: Path | None = None, built: Path | None = None, onto: str | None = None, depth: int = 2
) -> str:
    # loaded here, not with the module: `ci owners` reads a rebase document with read_rebase alone
    from series.evidence import test_plan
    from series.history import touches
    from series.topic_status import topic_rows

    rows = topic_rows(ws)
    rebased = read_rebase(rebase) if rebase is not None else None
    build_data = _load(built, "series build")
    outcome = {r.name: r for r in rebased.topics} if rebased else {}
    base = ws.series.upstream.base
    out = [f"# series: {base}" + (f" -> {onto}" if onto and onto != base else ""), ""]

    summary = [
        ("base", f"`{base}` ({str(ws.base_commit().id)[:12]})"),
        ("active topics", f"{len(ws.series.active())} of {len(rows)}"),
    ]
    if rebased:
        summary.append(("rebase", f"**{rebased.status.value}**"))
    if build_data.get("wheel"):
        summary.append(("wheel", f"`{Path(build_data['wheel']).name}`"))
    if build_data.get("integration", {}).get("branch"):
        integ = build_data["integration"]
        summary.append(("integration", f"`{integ['branch']}` at `{str(integ['sha'])[:12]}`"))
    out += ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in summary), ""]

    out += ["## Topics", "", "| topic | status | commits | files | lines | rebase |", "|---|---|---:|---:|---|---|"]
    for r in rows:
        lines = "" if r.added is None else f"+{r.added} −{r.deleted}"
        done = outcome.get(r.name)
        result = done.outcome.value if done else ""
        if done and done.conflict:
            files = ", ".join(f"`{f}`" for f in done.conflict.files)
            result = f"**conflict** at {done.conflict.commit[:12]} {done.conflict.subject}: {files}"
        elif done and done.breaks:
            n = len(done.breaks)
            result = f"{result}, **{n} break{'s' if n != 1 else ''}**"
        out.append(
            f"| {_cell(r.name)} | {r.status.value} | {'' if r.commits is None else r.commits} | "
            f"{'' if r.files is None else r.files} | {lines} | {_cell(result)} |"
        )
    out.append("")
    out += followup_section(ws)
    broken = [r for r in (rebased.topics if rebased else ()) if r.breaks]
    if broken:
        held = "they hold the rebase (--strict)" if rebased and rebased.strict else "warnings: the rebase moved"
        out += [
            f"## What the clean replay broke ({held})",
            "",
            "Names the topics use that upstream removed or changed, with the upstream commit that did it:",
            "",
        ]
        for row in broken:
            out += [
                f"- **{_cell(row.name)}**: `{_cell(b.file)}:{b.line}` `{_cell(b.name)}`: {_cell(b.why())}"
                for b in row.breaks
            ]
        out.append("")

    present, _missing = touches.select_topics(ws, False)
    for diff in touches.topic_diffs(ws, present):
        paths = sorted(c.path for c in diff.changes)
        out += [f"<details><summary>{diff.topic.name}: {len(paths)} file(s)</summary>", ""]
        out += [f"- `{p}`" for p in paths] + ["", "</details>", ""]

    grid = touches.matrix_json(touches.matrix_of(ws, depth, False))

    out += [f"## Topics × directories (depth {depth})", ""] + mermaid(grid) + [""]
    if grid["collisions"]:
        out += ["Files more than one topic changes (they meet when replayed):", ""]
        out += [f"- `{c['path']}`: {', '.join(t['name'] for t in c['topics'])}" for c in grid["collisions"]]
        out.append("")

    try:
        plan = test_plan.select(ws)
    except SeriesError as exc:  # an upstream without test_areas: say so, keep the report
        out += ["## Upstream CI steps", "", f"not selected: {exc.text}", ""]
        return "\n".join(out)
    out += ["## Upstream CI steps covering the series", "", f"{len(plan.selected)} steps of {plan.base}.", ""]
    table = ["| step | device | topics | |", "|---|---|---|---|"]
    table += [
        f"| {_cell(s.step.label)} | {s.step.device or ''} | {_cell(', '.join(s.topics))} | "
        f"{'optional' if s.step.optional else ''} |"
        for s in plan.selected
    ]
    if len(plan.selected) <= STEPS_SHOWN:
        out += table
    else:
        out += table[: 2 + STEPS_SHOWN]
        out += ["", f"<details><summary>{len(plan.selected) - STEPS_SHOWN} more steps</summary>", ""]
        out += table[:2] + table[2 + STEPS_SHOWN :] + ["", "</details>"]
    return "\n".join(out) + "\n"
