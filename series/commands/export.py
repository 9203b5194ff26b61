"""`series export [DIR]`: the active topics as patch files, an order file and series.yaml."""
from __future__ import annotations

from pathlib import Path

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
            out.append(f"{len(result.written)} files written, {len(result.removed)} removed, "
                       f"{result.unchanged} unchanged")
        else:
            out.append("nothing changed since the last export")
    out += [f"note: {note}" for note in result.notes]
    return "\n".join(out)


def as_json(result: ExportResult) -> dict[str, object]:
    return {
        "directory": str(result.directory),
        "topics": [{"name": t.topic, "patches": [name for name, _ in t.files]} for t in result.topics],
        "written": result.written, "removed": result.removed, "unchanged": result.unchanged,
        "notes": result.notes,
    }
