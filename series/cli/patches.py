"""Verbs for the series as files: export, import, diff, resolutions."""
from __future__ import annotations

from pathlib import Path

import click

from series.cli import Context, emit, emit_json, pass_ctx



@click.command("export")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def export(ctx: Context, directory: Path | None, dry_run: bool, as_json: bool) -> None:
    """Write every active topic as patch files (default DIR: patches/ beside series.yaml).

    \b
    DIR/order           topic directories in series order
    DIR/series.yaml     a copy of the series file
    DIR/<topic>/0001-<subject>.patch   one git format-patch style file per commit
    Files carry no commit ids or tool versions, so re-exporting an unchanged series changes
    nothing; files of retired topics and dropped commits are removed. Keep DIR in a
    repository of its own to review the series as diffs; 'series import DIR' rebuilds it.
    """
    from series.commands import export as cmd

    ws = ctx.workspace()
    result = cmd.run(ws, directory, dry_run=dry_run)
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result, dry_run))


@click.command("import")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--force", is_flag=True,
              help="Move topic branches that exist with other commits (old heads are backed up).")
@click.option("--dry-run", is_flag=True, help="Apply every patch in memory and report; move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def import_(ctx: Context, directory: Path | None, force: bool, dry_run: bool, as_json: bool) -> None:
    """Recreate the topic branches from an export (default DIR: patches/ beside series.yaml).

    Each topic's patches are applied in memory on upstream.base (or on the topic it
    depends_on), keeping authors, author dates and messages exactly; the committer is you.
    All branches move together in one journaled operation ('series undo' reverts it).
    In a fresh clone without series.yaml, the export's copy is used. Patches that touch
    paths outside the repository or binary files are refused.
    """
    from series.commands import import_ as cmd
    from series.patches.export import default_directory

    copied = None
    start = ctx.directory or Path.cwd()
    if directory is not None and ctx.config_file is None:
        copied = cmd.ensure_config(start, directory.resolve(), dry_run=dry_run)
    if copied is not None and dry_run:
        from series import config
        from series.git.repo import open_repo
        from series.workspace import Workspace

        ws = Workspace(config.load(copied), open_repo(start))
    else:
        ws = ctx.workspace(check_branches=False)
    target = (directory or default_directory(ws)).resolve()
    result = cmd.run(ws, target, force=force, dry_run=dry_run)
    result.config_copied = copied
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result, dry_run))


@click.command("resolutions")
@click.option("--prune", is_flag=True,
              help="Drop resolutions no active topic can meet any more (its topic is gone, or no "
                   "longer changes the path).")
@click.option("--dry-run", is_flag=True, help="With --prune: show what would be dropped.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def resolutions(ctx: Context, prune: bool, dry_run: bool, as_json: bool) -> None:
    """List the conflict resolutions the series carries (the resolutions/ directory).

    A resolution is recorded when you resolve a conflict and run 'series rebase --continue';
    later rebases, in any clone, apply it when exactly the same conflict reappears. Each is a
    readable text file: review it, commit it with series.yaml, delete it to forget it.
    """
    from series.commands import resolutions as cmd

    ws = ctx.workspace(check_branches=False)
    listing = cmd.run(ws, prune=prune, dry_run=dry_run)
    if as_json:
        emit_json(cmd.as_json(listing))
    else:
        emit(cmd.render(listing, dry_run))


@click.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def diff(ctx: Context, old: str, new: str, as_json: bool) -> None:
    """Compare two versions of the series: topics added, removed, changing status, and a
    per-topic 'git range-diff' summary where both sides have commits.

    
    OLD and NEW are each one of:
      patches/  old-export/       export directories ('series export')
      HEAD~1:series.yaml          a series.yaml revision (or a series.yaml file)
      00003   00003^              an operation from 'series log' (^: just before it)
    Example, what the last rebase changed:  series diff 00004^ 00004
    """
    from series.commands import diff as cmd

    ws = ctx.workspace(check_branches=False)
    result = cmd.run(ws, old, new)
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result))


COMMANDS = [export, import_, diff, resolutions]
