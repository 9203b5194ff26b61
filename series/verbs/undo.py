"""`series undo`: revert the newest operation not undone yet (refs, series.yaml, and the
files it wrote or removed beside it: recorded or pruned resolutions, an imported copy).

Through the transaction: its refs go back only if each is still where the operation left
it, and its own series.yaml edits are reversed on the file as it is now; an edit made
since to a key it changed stops the undo, naming the key (later edits are never erased).

An undo a kill interrupted after its refs moved is finished by the transaction's repair; `series
undo` run again then stops there: what a user who saw the first one die asks for is that
undo, not one more (which would revert an earlier operation too, a build's integration
branch for one).
"""

from __future__ import annotations

from pathlib import Path

import click
import pygit2

from series.cli_support import Context, emit, pass_ctx
from series.ops import journal
from series.git.repo import open_repo
from series.workspace import transaction, undoable


def run(repo: pygit2.Repository) -> tuple[journal.Operation, journal.Operation, list[str]]:
    """Returns (the operation undone, the undo operation, notes). The repair runs inside
    the transaction (not before it), so the undo knows when the operation it finished is an undo."""
    with transaction(repo, "undo") as tx:
        interrupted = tx.finished
        if interrupted is not None and interrupted.command == "undo" and interrupted.undoes is not None:
            undone = journal.find(repo, interrupted.undoes)
            if undone is not None:
                return (
                    undone,
                    interrupted,
                    [
                        *tx.notes,
                        "the undo above was interrupted and is now complete; nothing more was "
                        "undone: run 'series undo' again to go further back",
                    ],
                )
        target = undoable(repo)
        tx.summary = f"undo {target.id} ({target.command}: {target.summary})"
        tx.revert(target)
        undo = tx.commit()
        return target, undo, tx.notes


def describe(op: journal.Operation) -> str:
    config = f", {Path(op.config_path).name}" if op.config_path and op.config_before != op.config_after else ""
    files = f", {len(op.file_changes())} file(s)" if op.file_changes() else ""
    return f"{op.id} {op.command}: {op.summary} ({len(op.moves)} ref(s){config}{files})"


@click.command("undo")
@pass_ctx
def command(ctx: Context) -> None:
    """Revert the last operation: every ref it moved, series.yaml, and the files it wrote
    or removed (conflict resolutions it recorded or pruned, what an import copied).

    Repeat to go further back. Only the operation's own series.yaml edits are reversed,
    on the file as it is now: an edit made since to a key it changed stops the undo (the
    key is named), other edits are kept. An operation a killed process left half-done is
    finished or rolled back first; when that was an undo, it is finished and nothing more
    is undone. Old values also stay under refs/series/backup/<operation>/.
    """

    target, op, notes = run(open_repo(ctx.here))
    emit(
        "\n".join(
            [f"undid {describe(target)}", f"(as {op.id}; 'series log' lists operations)", *notes, *pushed_note(target)]
        )
    )


def pushed_note(target: journal.Operation) -> list[str]:
    """What undo cannot revert: a branch the operation pushed (extra["pushed"]: remote,
    branch, old and new head) stays on the remote as pushed."""
    pushed = (target.extra_text("pushed") or "").split()
    if len(pushed) != 4:
        return []
    remote, branch, old, new = pushed
    return [
        f"note: the push is not undone: {remote}/{branch} is still {new[:12]} on the remote (it was "
        f"{old[:12]}); a pushed branch cannot be taken back by series"
    ]
