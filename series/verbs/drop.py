"""`series drop TOPIC [--reason TEXT]`: stop carrying a topic, keep its branch."""

from __future__ import annotations

import dataclasses

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.model import Status
from series.status_change import StatusChange, edit_status, reason_and_undo
from series.workspace import Workspace


def run(ws: Workspace, name: str, reason: str | None = None, dry_run: bool = False) -> StatusChange:
    topic = ws.series.topic(name)
    if topic.status is Status.DROPPED:
        raise SeriesError(f"'{name}' is already dropped")
    dependents = [t.name for t in ws.series.active() if name in t.depends_on]
    if dependents:
        raise SeriesError(
            f"cannot drop '{name}': active topics depend on it ({', '.join(dependents)})", "drop or re-base those first"
        )
    op = edit_status(
        ws,
        "drop",
        f"drop {name}",
        name,
        dry_run=dry_run,
        status=Status.DROPPED.value,
        superseded_by=None,
        reason=reason,
    )
    return StatusChange(name, topic.status.value, Status.DROPPED.value, reason=reason, operation=op)


def render(change: StatusChange, branch: str) -> str:
    verb = "would drop" if change.operation is None else "dropped"
    text = f"{verb} '{change.topic}' (was {change.old_status}); branch {branch} kept as it is"
    return text + reason_and_undo(change)


@click.command("drop")
@click.argument("topic")
@click.option("--reason", metavar="TEXT", help="Why, recorded in series.yaml.")
@click.option("--dry-run", is_flag=True, help="Print the change, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, topic: str, reason: str | None, dry_run: bool, as_json: bool) -> None:
    """Stop carrying TOPIC (status: dropped); its branch is kept as it is.

    'series undo' reverts this.
    """

    ws = ctx.workspace(check_branches=False)
    change = run(ws, topic, reason=reason, dry_run=dry_run)
    if as_json:
        emit_json(dataclasses.asdict(change))
    else:
        emit(render(change, ws.series.topic(topic).branch))
