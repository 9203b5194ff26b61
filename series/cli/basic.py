"""Verbs of the foundation: init, add, status, touches, check."""
from __future__ import annotations

import json
import sys

import click

from series.cli import Context, emit, pass_ctx


def print_json(data: object) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def status(ctx: Context, as_json: bool) -> None:
    """One row per topic: status, commits and lines over the base, warnings.

    A topic whose branch does not contain upstream.base is flagged: it sits on another
    base and the next rebase would replay more than its own commits.
    """
    from series.commands import status as cmd

    ws = ctx.workspace(check_branches=False)
    rows = cmd.run(ws)
    if as_json:
        print_json(cmd.as_json(ws, rows))
    else:
        emit(cmd.render(ws, rows))


COMMANDS = [status]
