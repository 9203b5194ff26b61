"""Verbs for a fork's CI: `ci init|path|owners`, and `completion` for the shell."""
from __future__ import annotations

import os
from pathlib import Path

import click

from series.cli import Context, emit, emit_json, pass_ctx


@click.group("ci")
def ci() -> None:
    """The nightly pipeline for your fork: write it in, find its files, say whom it concerns.

    \b
      series ci init github       .github/workflows/series-nightly.yml in this fork
      series ci init buildkite    .buildkite/series-nightly.yml (upload it from a pipeline step)
      series ci path nightly.sh   where the installed nightly script is (the workflow runs it)
      series ci owners TOPIC...   @handles to mention: owner: in series.yaml, else the authors
      series ci report            the job summary / issue body in Markdown
    Settings and secrets: 'series ci path README.md'. GitHub Actions are off by default in a
    fork (enable them under Actions), and a scheduled workflow stops after 60 days without
    repository activity: re-enable it there, or push to the fork now and then.
    """


@ci.command("init")
@click.argument("target", type=click.Choice(["github", "buildkite"]))
@click.option("--force", is_flag=True, help="Replace a file that differs from the template.")
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def ci_init(ctx: Context, target: str, force: bool, dry_run: bool, as_json: bool) -> None:
    """Write the nightly workflow (github) or pipeline (buildkite) into the fork.

    The fork is where series.yaml is (or the git top level, or -C DIR). The workflow
    installs the series that wrote it (vllm-series==VERSION; vars.SERIES_PIP_SPEC
    overrides) and runs its nightly.sh.
    """
    from series.commands import ci as cmd

    root = _fork_root(ctx)
    written = cmd.init(target, root, force=force, dry_run=dry_run)
    if as_json:
        emit_json({"schema": 1, "root": str(root),
                   "files": [{"path": w.path, "state": w.state} for w in written]})
        return
    emit("\n".join(f"{w.state}: {w.path}" for w in written))


def _fork_root(ctx: Context) -> Path:
    """The fork's git top level (workflows live there even when series.yaml sits deeper)."""
    from series.config import find
    from series.errors import SeriesError

    start = (ctx.directory or Path.cwd()).resolve()
    try:
        start = find(start, ctx.config_file).parent
    except SeriesError:
        pass  # no series.yaml yet: the files can be written first
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    raise SeriesError(f"{start} is not inside a git repository: run this in your fork's clone "
                      "(or pass -C DIR)")


@ci.command("path")
@click.argument("name", default="nightly.sh")
def ci_path(name: str) -> None:
    """Print where the installed template NAME is (nightly.sh, README.md, github/nightly.yml ...)."""
    from series.commands import ci as cmd

    emit(str(cmd.path(name)))


@ci.command("owners")
@click.argument("topics", nargs=-1, metavar="[TOPIC]...")
@click.option("--report", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="Take the conflicting topics from a 'series rebase --dry-run --json' report.")
@pass_ctx
def ci_owners(ctx: Context, topics: tuple[str, ...], report: Path | None) -> None:
    """The @handles to mention for TOPICs: owner: in series.yaml, else their commits' authors."""
    from series.commands import ci as cmd

    ws = ctx.workspace(check_branches=False)
    names = list(topics) + (cmd.conflicting_topics(report) if report else [])
    if not names:
        raise click.UsageError("name a TOPIC or pass --report FILE")
    emit(" ".join(cmd.owners_of(ws, names)))


@ci.command("report")
@click.option("--rebase", "rebase", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A 'series rebase --json' report: its outcome per topic goes in the table.")
@click.option("--build", "built", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="A 'series build --json' result: the wheel and integration commit.")
@click.option("--onto", metavar="REF", help="The release the night targeted (for the title).")
@click.option("--depth", default=2, show_default=True, metavar="N", help="Directory depth of the picture.")
@pass_ctx
def ci_report(ctx: Context, rebase: Path | None, built: Path | None, onto: str | None, depth: int) -> None:
    """The series as Markdown for a job summary or an issue: tables, a <details> block per
    topic, a Mermaid picture of topics x directories, the upstream CI steps."""
    from series.commands import ci_report as cmd

    emit(cmd.build(ctx.workspace(check_branches=False), rebase, built, onto, depth))


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script (verbs, options, topic names from series.yaml).

    \b
      bash: series completion bash > ~/.local/share/bash-completion/completions/series
      zsh:  series completion zsh > "${fpath[1]}/_series"
      fish: series completion fish > ~/.config/fish/completions/series.fish
    """
    from click.shell_completion import get_completion_class

    from series.cli import group

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        raise click.UsageError(f"no completion for {shell}")
    emit(cls(group, {}, "series", "_SERIES_COMPLETE").source())


def complete_topics(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Topic names from the series.yaml found from here; nothing when there is none."""
    try:
        from series.config import find, load

        params = ctx.find_root().params
        found = find(Path(params.get("directory") or os.getcwd()), params.get("config_file"))
        return [t.name for t in load(found).topics if t.name.startswith(incomplete)]
    except Exception:  # completion must never print a traceback into the shell
        return []


COMMANDS = [ci, completion]
