"""`series export [DIR]`: the active topics as patch files, an order file and series.yaml."""

from __future__ import annotations

from pathlib import Path

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.patches.export import ExportResult, default_directory, export
from series.workspace import Workspace


def run(ws: Workspace, directory: Path | None, dry_run: bool = False) -> ExportResult:
    target = directory if directory is not None else default_directory(ws)
    return export(ws, target.resolve(), dry_run=dry_run)


def render(result: ExportResult, dry_run: bool = False) -> str:
    patches = sum(len(t.files) for t in result.topics)
    verb = "would export" if dry_run else "exported"
    out = [f"{verb} {len(result.topics)} topics, {patches} patches to {result.directory}"]
    for topic in result.topics:
        out.append(f"  {topic.topic}: {len(topic.files)} patch{'es' if len(topic.files) != 1 else ''}")
    if not dry_run:
        if result.written or result.removed:
            out.append(
                f"{len(result.written)} files written, {len(result.removed)} removed, {result.unchanged} unchanged"
            )
        else:
            out.append("nothing changed since the last export")
    out += [f"note: {note}" for note in result.notes]
    return "\n".join(out)


def to_json(result: ExportResult) -> dict[str, object]:
    return {
        "directory": str(result.directory),
        "topics": [{"name": t.topic, "patches": [name for name, _ in t.files]} for t in result.topics],
        "written": result.written,
        "removed": result.removed,
        "unchanged": result.unchanged,
        "notes": result.notes,
    }


@click.command("export")
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(ctx: Context, directory: Path | None, dry_run: bool, as_json: bool) -> None:
    """Write every active topic as patch files (default DIR: patches/ beside series.yaml).

    \b
    DIR/order           topic directories in series order
    DIR/series.yaml     a copy of the series file
    DIR/<topic>/0001-<subject>.patch   one git format-patch style file per commit
    Files carry no commit ids or tool versions, so re-exporting an unchanged series changes
    nothing; files of retired topics and dropped commits are removed. Keep DIR in a
    repository of its own to review the series as diffs; 'series import DIR' rebuilds it.
    """

    ws = ctx.workspace()
    result = run(ws, directory, dry_run=dry_run)
    if as_json:
        emit_json(to_json(result))
    else:
        emit(render(result, dry_run))
