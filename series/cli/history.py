"""`series undo` and `series log`: the journal of operations."""
from __future__ import annotations


import click

from series.cli import Context, emit, emit_json, pass_ctx


def _repo(ctx: Context):  # type: ignore[no-untyped-def]
    from pathlib import Path

    from series.git.repo import open_repo
    from series.workspace import repair

    repo = open_repo(ctx.directory or Path.cwd())
    repair(repo)  # an operation a kill interrupted is finished or rolled back before it is listed
    return repo


@click.command()
@pass_ctx
def undo(ctx: Context) -> None:
    """Revert the last operation: every ref it moved and series.yaml.

    Repeat to go further back. Only the operation's own series.yaml edits are reversed,
    on the file as it is now: an edit made since to a key it changed stops the undo (the
    key is named), other edits are kept. An operation a killed process left half-done is
    finished or rolled back first. Old values also stay under refs/series/backup/<operation>/.
    """
    from series.commands import undo as cmd

    target, op, notes = cmd.run(_repo(ctx))
    emit("\n".join([f"undid {cmd.describe(target)}", f"(as {op.id}; 'series log' lists operations)", *notes]))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def log(ctx: Context, as_json: bool) -> None:
    """List the operations that moved refs (newest first), as 'series undo' sees them."""
    from series.commands import log as cmd

    rows = cmd.run(_repo(ctx))
    if as_json:
        emit_json(rows)
    else:
        emit(cmd.render(rows))


COMMANDS = [undo, log]
