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
from series.upstream.followups import FollowUpKind, FollowUps, of_workspace
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
    return (
        f"{state.halt.what}: resolve in {halted.worktree_path(ws.repo)}, then "
        f"'{state.halt.go_on}' (or '{state.halt.stop}')"
    )


def behind(ws: Workspace) -> Behind | None:
    return attribution.behind_main(ws.repo, ws.series.upstream.remote, ws.base_commit())


def to_json(ws: Workspace, rows: list[TopicStatus]) -> dict[str, object]:
    late = behind(ws)
    found = base_breaks.of_branches(ws)
    topics = [{**asdict(r), "breaks": [b.to_json() for b in found.get(r.name, [])]} for r in rows]
    out: dict[str, object] = {
        "base": ws.series.upstream.base,
        "base_sha": str(ws.base_commit().id),
        "behind": late.to_json() if late is not None else None,
        "halted": halt_sentence(ws),
        "topics": topics,
    }
    after = of_workspace(ws)
    if after is not None:
        out["upstream_followups"] = after.to_json()
    return out


def _followup_notes(after: FollowUps | None, name: str) -> tuple[list[str], list[str]]:
    """A row's notes and the lines under it: its revert warnings, its PR's follow-ups not carried."""
    if after is None:
        return [], []
    warned = after.warnings().get(name, [])
    notes = [f"warning: {len(warned)} upstream revert{'s' if len(warned) != 1 else ''}"] if warned else []
    missing = [f for p, f in after.uncarried() if p.topic == name and f.kind is not FollowUpKind.REVERT]
    if missing:
        notes.append(f"not carried: {', '.join(f'{f.kind.value} {f.commit.label}' for f in missing)}")
    return notes, [f"warning: {text}" for text in warned]


def render(ws: Workspace, rows: list[TopicStatus]) -> str:
    late = behind(ws)
    lag = f"; {late.sentence()}" if late is not None else ""
    out = [
        f"upstream base {ws.series.upstream.base} ({str(ws.base_commit().id)[:12]}), "
        f"{len(ws.series.active())} active of {len(rows)} topics{lag}"
    ]
    width = max([len(r.name) for r in rows] + [5])
    found = base_breaks.of_branches(ws)
    after = of_workspace(ws)
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
        more, below = _followup_notes(after, r.name)
        notes += more
        lines = "" if r.added is None else f"+{r.added}/-{r.deleted}"
        commits = "-" if r.commits is None else str(r.commits)
        files = "-" if r.files is None else str(r.files)
        out.append(
            f"  {r.name:<{width}}  {r.status.value:<10} {commits:>7} {files:>5}  {lines:<12} {'; '.join(notes)}".rstrip()
        )
        out += [f"  {'':<{width}}    {b.sentence()}" for b in found.get(r.name, [])]
        out += [f"  {'':<{width}}    {line}" for line in below]
    if after is not None and after.trunk is None:
        remote = ws.series.upstream.remote
        out.append(
            f"follow-ups of upstream PRs not read: neither {remote}/main nor {remote}/master is "
            f"fetched (git fetch {remote})"
        )
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

    For a topic that records an upstream PR (upstream_pr) and the topics it superseded,
    upstream's trunk (<remote>/main, else master) is read for the commits after the PR's
    squash that name it: fixes ("Fix for #N"), follow-ups ("follow-up to #N") and reverts
    ('Revert "... (#N)"', "This reverts #N", "This reverts commit <squash>"). Carried: the
    base contains it, or an active topic has a commit with its patch-id or naming it. A
    revert no topic carries is a warning when the topic is still active (whether the base
    has the revert yet or not), or when it is not and the base has the PR but not its revert.
    The follow-ups not carried are noted on the row; --json lists them all.
    """

    ws = ctx.workspace(check_branches=False)
    rows = run(ws)
    if as_json:
        emit_json(to_json(ws, rows))
    else:
        emit(render(ws, rows))
