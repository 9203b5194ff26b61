"""`series status`: one row per topic: what the fork carries over upstream."""
from __future__ import annotations

from dataclasses import asdict

import click

from series.history import attribution
from series.history.attribution import Behind
from series.report.read_first import halted_read_first
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.model import Status
from series.topic_status import TopicStatus, topic_rows
from series.topics import meant_start
from series.semantic import base_breaks
from series.workspace import Workspace


def run(ws: Workspace) -> list[TopicStatus]:
    """The rows, series.topic_status's (ci report shows them too)."""
    return topic_rows(ws)


def halt_sentence(ws: Workspace) -> str | None:
    """A sentence when a rebase or adoption waits on a conflict, else None."""
    from series.ops import halted
    from series.engine import rebase_state

    state = rebase_state.load(ws.repo)
    if state is None:
        return None
    return (f"{state.halt.what}: resolve in {halted.worktree_path(ws.repo)}, then "
            f"'{state.halt.go_on}' (or '{state.halt.stop}')")


def behind(ws: Workspace) -> Behind | None:
    return attribution.behind_main(ws.repo, ws.series.upstream.remote, ws.base_commit())


def to_json(ws: Workspace, rows: list[TopicStatus]) -> dict[str, object]:
    late = behind(ws)
    found = base_breaks.of_branches(ws)
    topics = [{**asdict(r), "breaks": [b.to_json() for b in found.get(r.name, [])]} for r in rows]
    return {"base": ws.series.upstream.base, "base_sha": str(ws.base_commit().id),
            "behind": late.to_json() if late is not None else None,
            "halted": halt_sentence(ws), "topics": topics}


def render(ws: Workspace, rows: list[TopicStatus]) -> str:
    late = behind(ws)
    lag = f"; {late.sentence()}" if late is not None else ""
    out = [f"upstream base {ws.series.upstream.base} ({str(ws.base_commit().id)[:12]}), "
           f"{len(ws.series.active())} active of {len(rows)} topics{lag}"]
    width = max([len(r.name) for r in rows] + [5])
    found = base_breaks.of_branches(ws)
    out.append(f"  {'topic':<{width}}  {'status':<10} {'commits':>7} {'files':>5}  lines        notes")
    for r in rows:
        notes = []
        if r.missing:
            notes.append(f"branch {r.branch} missing")
        elif not r.on_base and r.status == Status.ACTIVE:
            # superseded, merged and dropped topics keep their old branch by design
            on = meant_start(ws.series.topic(r.name), ws.series.upstream.base)
            notes.append(f"warning: not on {on} (forks at {r.fork_point})")
        n = len(found.get(r.name, []))
        if n:
            notes.append(f"warning: {n} break{'s' if n != 1 else ''} against the base")
        if r.upstream_pr:
            notes.append(f"PR #{r.upstream_pr}")
        if r.measured:
            notes.append(f"measured: {r.measured}")
        if r.superseded_by:
            notes.append(f"superseded by {r.superseded_by}")
        if r.merged_in:
            notes.append(f"merged in {r.merged_in}")
        lines = "" if r.added is None else f"+{r.added}/-{r.deleted}"
        commits = "-" if r.commits is None else str(r.commits)
        files = "-" if r.files is None else str(r.files)
        out.append(f"  {r.name:<{width}}  {r.status.value:<10} {commits:>7} {files:>5}  {lines:<12} {'; '.join(notes)}".rstrip())
        out += [f"  {'':<{width}}    {b.sentence()}" for b in found.get(r.name, [])]
    sentence = halt_sentence(ws)
    if sentence:
        out.append(sentence)
        out += [f"  {line}" for line in halted_read_first(ws)]
    return "\n".join(out)


@click.command("status")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, as_json: bool) -> None:
    """One row per topic: status, commits and lines over the base, warnings.

    A topic whose branch does not contain upstream.base is flagged: it sits on another
    base and the next rebase would replay more than its own commits. So is one whose code,
    as its branch is now, uses an upstream name the base removed or
    changed (a break, named with the upstream PR that did it; see 'series rebase --strict').
    Breaks are read from the branches against the base each time: they stay until fixed.
    """

    ws = ctx.workspace(check_branches=False)
    rows = run(ws)
    if as_json:
        emit_json(to_json(ws, rows))
    else:
        emit(render(ws, rows))
