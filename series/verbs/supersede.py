"""`series supersede TOPIC --by OTHER`: OTHER now carries what TOPIC carried.

Only series.yaml changes (comments kept); TOPIC's branch stays exactly where it is, so the
old work is one `git log` away. The edit goes through the write door (journaled, so
`series undo` reverses it).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import click

from series.cli import Context, emit, emit_json, pass_ctx
from series.errors import SeriesError
from series.model import Status
from series.workspace import Workspace


@dataclass(frozen=True)
class StatusChange:
    topic: str
    old_status: str
    new_status: str
    by: str | None = None
    reason: str | None = None
    operation: str | None = None  # journal id; None on --dry-run


def edit_status(ws: Workspace, command: str, summary: str, name: str, *, dry_run: bool,
                **fields: object) -> str | None:
    """Change one topic's fields in series.yaml as a journaled operation; its id."""
    if dry_run:
        draft = ws.draft(command, summary)
        draft.set_topic(name, **fields)
        draft.preview()  # the result must be a valid series.yaml
        return None
    with ws.operation(command, summary) as op:
        op.set_topic(name, **fields)
        return op.commit().id


def run(ws: Workspace, name: str, by: str, reason: str | None = None,
        dry_run: bool = False) -> StatusChange:
    topic = ws.series.topic(name)
    other = ws.series.topic(by)
    if other.name == topic.name:
        raise SeriesError(f"a topic cannot supersede itself ('{name}'); name the topic that replaces it")
    if other.status in (Status.SUPERSEDED, Status.DROPPED):
        raise SeriesError(
            f"'{by}' is {other.status.value} itself; supersede '{name}' by the topic that is carried now")
    if topic.status is Status.SUPERSEDED and topic.superseded_by == by:
        raise SeriesError(f"'{name}' is already superseded by '{by}'")
    op = edit_status(ws, "supersede", f"{name} superseded by {by}", name, dry_run=dry_run,
                     status=Status.SUPERSEDED.value, superseded_by=by, reason=reason)
    return StatusChange(name, topic.status.value, Status.SUPERSEDED.value, by=by, reason=reason,
                        operation=op)


def reason_and_undo(change: StatusChange) -> str:
    """The lines a status change ends with (drop's too): why, and how to take it back."""
    text = f"\n  reason: {change.reason}" if change.reason else ""
    if change.operation:
        text += f"\n  'series undo' reverts this ({change.operation})"
    return text


def render(change: StatusChange, branch: str) -> str:
    verb = "would mark" if change.operation is None else "marked"
    text = f"{verb} '{change.topic}' superseded by '{change.by}' (was {change.old_status}); " \
           f"branch {branch} kept as it is"
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
