"""`series undo`: revert the newest operation not undone yet (refs and series.yaml)."""
from __future__ import annotations

from pathlib import Path

import pygit2

from series.engine import state as rebase_state
from series.engine import worktree as wt
from series.errors import SeriesError
from series.git import refs


def _last(repo: pygit2.Repository) -> refs.Operation:
    ops = refs.operations(repo)
    undone = {op.undoes for op in ops if op.undoes}
    for op in reversed(ops):
        if op.command != "undo" and op.id not in undone:
            return op
    raise SeriesError("nothing to undo: 'series log' lists no operation that is not undone already")


def run(repo: pygit2.Repository) -> tuple[refs.Operation, refs.Operation, list[str]]:
    """Returns (the operation undone, the undo operation, notes)."""
    with refs.Lock(repo):
        halted = rebase_state.load(repo)
        if halted is not None:
            raise SeriesError(rebase_state.halted_message(halted, "series undo"))
        target = _last(repo)
        branches = {m.ref[len("refs/heads/"):] for m in target.moves if m.ref.startswith("refs/heads/")}
        found = wt.checkouts(repo, branches)
        for checkout in found:
            if wt.dirty(checkout):
                raise SeriesError(f"{checkout.branch} is checked out in {checkout.path} with local changes; "
                                  "commit or stash them, then undo")
        undo = refs.revert(repo, target)
        notes = []
        moved = {m.ref: m for m in undo.moves}
        for checkout in found:
            move = moved.get(f"refs/heads/{checkout.branch}")
            if move is not None and move.old and move.new:
                wt.update(checkout, move.old, move.new)
                notes.append(f"updated the checkout of {checkout.branch} in {checkout.path}")
        return target, undo, notes


def describe(op: refs.Operation) -> str:
    config = f", {Path(op.config_path).name}" if op.config_path and op.config_before is not None else ""
    return f"{op.id} {op.command}: {op.summary} ({len(op.moves)} ref(s){config})"
