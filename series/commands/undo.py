"""`series undo`: revert the newest operation not undone yet (refs and series.yaml).

Through the write door: its refs go back only if each is still where the operation left
it, and its own series.yaml edits are reversed on the file as it is now; an edit made
since to a key it changed stops the undo, naming the key (later edits are never erased).
"""
from __future__ import annotations

from pathlib import Path

import pygit2

from series.git import refs
from series.workspace import operation, undoable


def run(repo: pygit2.Repository) -> tuple[refs.Operation, refs.Operation, list[str]]:
    """Returns (the operation undone, the undo operation, notes)."""
    with operation(repo, "undo") as op:
        target = undoable(repo)
        op.summary = f"undo {target.id} ({target.command}: {target.summary})"
        op.revert(target)
        undo = op.commit()
        return target, undo, op.notes


def describe(op: refs.Operation) -> str:
    config = f", {Path(op.config_path).name}" if op.config_path and op.config_before != op.config_after else ""
    return f"{op.id} {op.command}: {op.summary} ({len(op.moves)} ref(s){config})"
