"""`series log`: the operations in the journal, newest first."""

from __future__ import annotations

from typing import Any

import click
import pygit2

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.ops import journal


def run(repo: pygit2.Repository) -> list[dict[str, Any]]:
    ops = journal.operations(repo)
    undone_by = {op.undoes: op.id for op in ops if op.undoes}
    rows = []
    for op in reversed(ops):
        rows.append(
            {
                "id": op.id,
                "time": op.time,
                "command": op.command,
                "summary": op.summary,
                "state": op.state,
                "undoes": op.undoes,
                "undone_by": undone_by.get(op.id),
                "moves": [{"ref": m.ref, "old": m.old, "new": m.new} for m in op.moves],
                "config": op.config_path if op.config_before != op.config_after else None,
                "files": [{"path": f.path, "written": f.after is not None} for f in op.file_changes()],
                "record": op.is_record(),
            }
        )
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no operations yet"
    out = []
    for r in rows:
        notes = []
        if r["state"] != "done":
            # every command repairs an interrupted operation before it starts (series.workspace),
            # so one still pending here belongs to a command running right now
            notes.append(f"[{r['state']}: another series command is running it]")
        if r["undone_by"]:
            notes.append(f"[undone by {r['undone_by']}]")
        refs_moved = (
            f"{len(r['moves'])} ref(s)"
            + (", series.yaml" if r["config"] else "")
            + (f", {len(r['files'])} file(s)" if r["files"] else "")
        )
        if r["record"] and not r["moves"] and not r["config"]:
            refs_moved = "a record, which undo passes over"
        out.append(f"{r['id']}  {r['command']:<8} {r['summary']}  ({refs_moved}) {' '.join(notes)}".rstrip())
    return "\n".join(out)


@click.command("log")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def command(ctx: Context, as_json: bool) -> None:
    """List the operations that moved refs (newest first), as 'series undo' sees them."""
    from series.workspace import open_repaired

    rows = run(open_repaired(ctx.here))
    if as_json:
        emit_json({"operations": rows})
    else:
        emit(render(rows))
