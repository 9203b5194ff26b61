"""`series supersede TOPIC --by OTHER`: OTHER now carries what TOPIC carried.

Only series.yaml changes (comments kept); TOPIC's branch stays exactly where it is, so the
old work is one `git log` away. The edit goes through the transaction (journaled, so
`series undo` reverses it).
"""

from __future__ import annotations

import dataclasses

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.model import Status
from series.status_change import StatusChange, edit_status, reason_and_undo
from series.workspace import Workspace


def run(ws: Workspace, name: str, by: str, reason: str | None = None, dry_run: bool = False) -> StatusChange:
    topic = ws.series.topic(name)
    other = ws.series.topic(by)
    if other.name == topic.name:
        raise SeriesError(f"a topic cannot supersede itself ('{name}'); name the topic that replaces it")
    if other.status in (Status.SUPERSEDED, Status.DROPPED):
        raise SeriesError(f"'{by}' is {other.status.value} itself; supersede '{name}' by the topic that is carried now")
    if topic.status is Status.SUPERSEDED and topic.superseded_by == by:
        raise SeriesError(f"'{name}' is already superseded by '{by}'")
    op = edit_status(
        ws,
        "supersede",
        f"{name} superseded by {by}",
        name,
        dry_run=dry_run,
        status=Status.SUPERSEDED.value,
        superseded_by=by,
        reason=reason,
    )
    return StatusChange(name, topic.status.value, Status.SUPERSEDED.value, by=by, reason=reason, operation=op)


def render(change: StatusChange, branch: str) -> str:
    verb = "would mark" if change.operation is None else "marked"
    text = (
        f"{verb} '{change.topic}' superseded by '{change.by}' (was {change.old_status}); branch {branch} kept as it is"
    )
    return text + reason_and_undo(change)


@click.command("supersede")
@click.argument("topic")
@click.option("--by", "by", required=True, metavar="OTHER", help="The topic that carries this change now.")
@click.option("--reason", metavar="TEXT", help="Why, recorded in series.yaml.")
@click.option("--dry-run", is_flag=True, help="Print the change, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, topic: str, by: str, reason: str | None, dry_run: bool, as_json: bool) -> None:
    """Mark TOPIC superseded by OTHER; TOPIC's branch is kept as it is.

    A superseded topic is no longer rebased or built. 'series undo' reverts this.
    """

    ws = ctx.workspace(check_branches=False)
    change = run(ws, topic, by, reason=reason, dry_run=dry_run)
    if as_json:
        emit_json(dataclasses.asdict(change))
    else:
        emit(render(change, ws.series.topic(topic).branch))
