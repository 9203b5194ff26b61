"""`series drop TOPIC [--reason TEXT]`: stop carrying a topic, keep its branch."""
from __future__ import annotations

from series.commands.supersede import StatusChange, edit_status
from series.errors import SeriesError
from series.model import Status
from series.workspace import Workspace


def run(ws: Workspace, name: str, reason: str | None = None, dry_run: bool = False) -> StatusChange:
    topic = ws.series.topic(name)
    if topic.status is Status.DROPPED:
        raise SeriesError(f"'{name}' is already dropped")
    dependents = [t.name for t in ws.series.active() if name in t.depends_on]
    if dependents:
        raise SeriesError(
            f"cannot drop '{name}': active topics depend on it ({', '.join(dependents)}); "
            "drop or re-base those first")
    op = edit_status(ws, "drop", f"drop {name}", name, dry_run=dry_run,
                     status=Status.DROPPED.value, superseded_by=None, reason=reason)
    return StatusChange(name, topic.status.value, Status.DROPPED.value, reason=reason, operation=op)


def render(change: StatusChange, branch: str) -> str:
    verb = "would drop" if change.operation is None else "dropped"
    text = f"{verb} '{change.topic}' (was {change.old_status}); branch {branch} kept as it is"
    if change.reason:
        text += f"\n  reason: {change.reason}"
    if change.operation:
        text += f"\n  'series undo' reverts this ({change.operation})"
    return text
