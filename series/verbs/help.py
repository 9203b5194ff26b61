"""`series help [VERB...]`: the help of series, or of a verb (`series help ci report`)."""

from __future__ import annotations

import click

from series.cli_support import unknown_verb


@click.command("help")
@click.argument("verb", nargs=-1)
@click.pass_context
def command(ctx: click.Context, verb: tuple[str, ...]) -> None:
    """Show the help of series, or of VERB: 'series help rebase' is 'series rebase --help'."""
    assert ctx.parent is not None  # a verb always runs under the group
    shown, shown_ctx = ctx.parent.command, ctx.parent
    for name in verb:
        if not isinstance(shown, click.Group):
            raise click.UsageError(
                f"'{shown_ctx.command_path}' has no verbs of its own: try '{shown_ctx.command_path} --help'", ctx
            )
        sub = shown.get_command(shown_ctx, name)
        if sub is None:
            raise click.UsageError(unknown_verb(name, shown.list_commands(shown_ctx)), ctx)
        # resilient: a verb's required arguments are not asked for to show its help
        shown, shown_ctx = sub, sub.make_context(name, [], parent=shown_ctx, resilient_parsing=True)
    click.echo(shown_ctx.get_help(), color=shown_ctx.color)
