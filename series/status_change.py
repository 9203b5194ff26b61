"""A topic's status change in series.yaml (`series supersede`, `series drop`): the record
both verbs return, the one journaled edit that makes it, and the lines its text ends with.

Shared by the two verbs, so it lives here rather than in either (a verb imports no verb).
"""

from __future__ import annotations

from dataclasses import dataclass

from series.workspace import Workspace


@dataclass(frozen=True)
class StatusChange:
    topic: str
    old_status: str
    new_status: str
    by: str | None = None
    reason: str | None = None
    operation: str | None = None  # journal id; None on --dry-run


def edit_status(ws: Workspace, command: str, summary: str, name: str, *, dry_run: bool, **fields: object) -> str | None:
    """Change one topic's fields in series.yaml as a journaled operation; its id."""
    if dry_run:
        draft = ws.draft(command, summary)
        draft.set_topic(name, **fields)
        draft.preview()  # the result must be a valid series.yaml
        return None
    with ws.transaction(command, summary) as tx:
        tx.set_topic(name, **fields)
        return tx.commit().id


def reason_and_undo(change: StatusChange) -> str:
    """The lines a status change's text ends with: why, and how to take it back."""
    text = f"\n  reason: {change.reason}" if change.reason else ""
    if change.operation:
        text += f"\n  'series undo' reverts this ({change.operation})"
    return text
