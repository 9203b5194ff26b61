"""What `series rebase --abort` leaves behind, in words: the conflict resolutions that
each `--continue` recorded (its own journaled operation, under resolutions/) stay, since
they are right whatever became of this rebase; the user is told how many, and a command
that removes them as written."""

from __future__ import annotations

import shlex
from pathlib import Path

from series.ops import journal
from series.engine import rebase_state
from series.workspace import Workspace


def kept_resolutions(ws: Workspace, state: rebase_state.RebaseState, verb: str) -> tuple[int, str]:
    """How many resolutions `state` recorded are still on disk, and the sentence for them
    ("" when none): how many, where, and how to remove them ('series undo' once per operation
    that recorded them when those are the newest, else `rm` of each file)."""
    files = [
        where
        for change in state.recorded
        if change.after is not None
        and (where := journal.resolve_path(ws.repo, change.path, change.worktree)) is not None
        and where.is_file()
        and where.read_bytes() == change.after
    ]
    if not files:
        return 0, ""
    root = ws.series.root
    store = ws.series.root / ws.series.resolutions
    shown = f"{store.relative_to(root)}/" if store.is_relative_to(root) else f"{store}/"
    n = len(files)
    one = n == 1
    text = (
        f"kept {n} recorded conflict resolution{'' if one else 's'} in {shown} "
        f"(what 'series rebase --continue' recorded; the next rebase reuses {'it' if one else 'them'})"
    )
    undos = _recording_operations(ws, state, verb, files)
    pronoun = "it" if one else "them"
    if undos:
        times = "" if undos == 1 else f" ({undos} times: once per recording)"
        return n, text + f"; remove {pronoun} with 'series undo'{times}"
    paths = " ".join(shlex.quote(str(p)) for p in files)
    return n, text + f"; remove {pronoun} with 'rm -- {paths}'"


def _recording_operations(ws: Workspace, state: rebase_state.RebaseState, verb: str, files: list[Path]) -> int:
    """How many of the newest journal operations are this rebase's recordings of exactly
    `files` (0 when anything else came after them: then `series undo` would revert that)."""
    wanted = {(c.path, c.worktree) for c in state.recorded}
    count, covered = 0, set()
    for op in reversed(journal.operations(ws.repo)):
        if (
            op.command != verb
            or op.moves
            or op.edits
            or not op.files
            or op.time < state.started
            or op.state != journal.OpState.DONE
            or not {(f.path, f.worktree) for f in op.files} <= wanted
        ):
            break
        count += 1
        covered |= {(f.path, f.worktree) for f in op.files}
    on_disk = {
        (c.path, c.worktree) for c in state.recorded if journal.resolve_path(ws.repo, c.path, c.worktree) in files
    }
    return count if on_disk <= covered else 0
