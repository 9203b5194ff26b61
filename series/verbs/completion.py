"""`series completion bash|zsh|fish`: the shell completion script, topic names included."""

from __future__ import annotations

import click

from series.cli_support import emit


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def command(shell: str) -> None:
    """Print the shell completion script (verbs, options, topic names from series.yaml).

    \b
      bash: series completion bash > ~/.local/share/bash-completion/completions/series
      zsh:  series completion zsh > "${fpath[1]}/_series"
      fish: series completion fish > ~/.config/fish/completions/series.fish
    """
    from click.shell_completion import get_completion_class

    # the group this verb runs under, from click's context: a verb imports no series.cli
    group = click.get_current_context().find_root().command
    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"no completion for {shell}")
    emit(cls(group, {}, "series", "_SERIES_COMPLETE").source())
