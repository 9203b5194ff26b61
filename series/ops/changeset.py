"""Committing an operation without ever losing a ref, and repairing one a kill interrupted.

Every operation that moves refs goes through `Changeset.commit()`:
  1. the journal entry is written with every old and new value (state "pending"),
  2.+3. all refs move in one `git update-ref --stdin` transaction with old values checked,
     which also keeps each old value under refs/series/backup/<op>/<ref>,
  4. series.yaml's new text, written beside it before step 2 (the write a full disk
     stops), is renamed over it,
  5. the other files the operation writes (staged beside each before step 2, too) or
     removes change (`FileChange`: recorded resolutions, pruned ones, an imported
     directory), and the entry becomes "done".
A process killed between steps leaves a pending entry; the next series command, whatever
it is, finishes it or rolls it back (`recover()`, run by the transaction in
series.workspace before anything else), so refs are all old or all new again. A rename
that fails (a busy or immutable series.yaml: root's permissions do not help there) puts
every ref back at once: refs and series.yaml never disagree.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from series.ops import faults, fs
from series.seriesfile import edit as seriesedit
from series import validate
from series.errors import SeriesError
from series.ops.fs import replace_staged, stage, write_atomically
from series.git import checkouts, refs
from series.git.refs import RefMove
from series.ops.journal import (
    FileChange,
    Operation,
    OpState,
    backups,
    config_file,
    last_operation,
    new_op_id,
    relative_config,
    resolve_path,
    set_aside,
    write_entry,
)
from series.persisted import Json


def _staged(path: Path, op: Operation) -> Path:
    """Where an operation's series.yaml text waits for its refs to move."""
    return path.with_name(f".{path.name}.{op.id}.tmp")


def _roll_back(repo: pygit2.Repository, op: Operation, path: Path, exc: OSError) -> SeriesError:
    """series.yaml could not be replaced after the refs moved: every ref (and backup) back
    where it was, the entry set aside; the error to raise."""
    undo = [RefMove(m.ref, m.new, m.old) for m in op.moves] + [RefMove(b.ref, b.new, None) for b in backups(op)]
    why = f"{path}: cannot replace it ({exc.strerror or exc})"
    try:
        if undo:
            refs.update(repo, undo, f"series {op.command}: {op.summary} (rolled back)")
    except (SeriesError, OSError) as again:
        return SeriesError(
            f"{why}, and the refs could not be put back ({validate.one_line(str(again))[:120]}); "
            "the next series command finishes the operation"
        )
    set_aside(repo, op)
    return SeriesError(
        f"{why}: every ref was put back, nothing was changed; make the file replaceable "
        "(nothing holding it, not immutable: lsattr, chattr -i) and run the command again"
    )


def _write_config(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _files(repo: pygit2.Repository, op: Operation) -> list[tuple[Path, FileChange]]:
    """Each file change of `op` with where it is in this repository now (a change whose
    worktree is gone is left out: nothing to write there)."""
    found = []
    for change in op.files:
        path = resolve_path(repo, change.path, change.worktree)
        if path is not None:
            found.append((path, change))
    return found


def _apply(repo: pygit2.Repository, path: Path, change: FileChange, staged: Path | None = None) -> None:
    """One file to its new content (the staged copy renamed over it, or written now), or
    removed, with the directories that removal leaves empty up to the worktree's top."""
    if change.after is None:
        path.unlink(missing_ok=True)
        top = checkouts.worktree_root(repo, change.worktree)
        here = path.parent
        while (
            top is not None and here != top and here.is_relative_to(top) and here.is_dir() and not any(here.iterdir())
        ):
            here.rmdir()
            here = here.parent
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if staged is not None and staged.exists():
        replace_staged(staged, path)
    else:
        write_atomically(path, change.after)


def _applied(path: Path, change: FileChange) -> bool:
    return change.before != change.after and _read(path) == change.after


class Changeset:
    """Collect ref moves (and series.yaml's new text); commit all or none. Used by the
    transaction (series.workspace.Transaction), which computes the text under the lock."""

    def __init__(self, repo: pygit2.Repository, command: str, summary: str):
        self.repo = repo
        self.command = command
        self.summary = summary
        self.moves: list[RefMove] = []
        self.verify: list[tuple[str, str]] = []
        self.config_path: Path | None = None
        self.config_before: str | None = None
        self.config_after: str | None = None
        self.edits: list[seriesedit.Edit] = []
        self.extra: dict[str, Json] = {}
        self.undoes: str | None = None
        self.files: list[FileChange] = []
        self.op_id: str | None = None  # reserve_id(): known before commit(), for resumable callers

    def reserve_id(self) -> str:
        """The id commit() will use: a caller can record it first, to finish or revert the
        operation after a crash (series.engine.rebase does)."""
        if self.op_id is None:
            self.op_id = new_op_id(self.repo)
        return self.op_id

    def set(self, ref: str, new: str | None, *, expect: str | None | object = ...) -> None:
        """Move `ref` to `new`; the old value is the one seen now unless `expect` says."""
        old = refs.current(self.repo, ref) if expect is ... else expect
        self.moves = [m for m in self.moves if m.ref != ref]
        if old == new:
            return
        self.moves.append(RefMove(ref, old, new))  # type: ignore[arg-type]

    def file(self, path: Path, after: bytes | None, before: bytes | None | object = ...) -> None:
        """Write `after` to `path` (None: remove it) when the operation commits; the old
        content is the one there now unless `before` says (undo, which knows it)."""
        old = _read(path) if before is ... else before
        rel, worktree = relative_config(self.repo, path)
        self.files = [f for f in self.files if (f.path, f.worktree) != (rel, worktree)]
        if old != after:
            self.files.append(FileChange(rel, worktree, old, after))  # type: ignore[arg-type]

    def write_config(self, path: Path, before: str | None, after: str | None, edits: list[seriesedit.Edit]) -> None:
        self.config_path, self.config_before, self.config_after = path, before, after
        self.edits = list(edits)

    def commit(self, fault: str | None = None) -> Operation:
        op = Operation(
            id=self.reserve_id(),
            command=self.command,
            summary=self.summary,
            moves=self.moves,
            time=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            extra=self.extra,
            verify=self.verify,
            undoes=self.undoes,
            files=list(self.files),
        )
        if self.config_path is not None:
            op.config_path, op.worktree = relative_config(self.repo, self.config_path)
            op.config_before, op.config_after = self.config_before, self.config_after
            op.edits = list(self.edits)
        write_entry(self.repo, op)
        _inject(fault, "after-journal")
        path = self.config_path if self.config_after != self.config_before else None
        staged = None
        if path is not None and self.config_after is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            staged = stage(path, self.config_after, _staged(path, op))
        files = _files(self.repo, op)
        waiting = {}  # the new content of every file, beside it before any ref moves (a full disk stops here)
        for where, change in files:
            if change.after is not None:
                where.parent.mkdir(parents=True, exist_ok=True)
                waiting[where] = stage(where, change.after, _staged(where, op))
        # The backup refs are created in the same update-ref transaction as the moves: one
        # git process instead of one ref write per topic, and the old commits are reachable
        # from the branches themselves until that transaction commits.
        kept = backups(op)
        _inject(fault, "after-backup")
        if self.moves:
            refs.update(
                self.repo,
                kept + self.moves,
                f"series {self.command}: {self.summary}",
                lenient=len(kept),
                verify=self.verify,
            )
        _inject(fault, "after-refs")
        if path is not None:
            try:
                if staged is not None:
                    replace_staged(staged, path)
                else:
                    path.unlink(missing_ok=True)  # the undo of an init
            except OSError as exc:
                raise _roll_back(self.repo, op, path, exc) from None
        _inject(fault, "after-config")
        for n, (where, change) in enumerate(files):
            _apply(self.repo, where, change, waiting.get(where))
            if n == 0:
                _inject(fault, "after-first-file")
        _inject(fault, "after-files")
        op.state = OpState.DONE
        write_entry(self.repo, op)
        return op


def _inject(fault: str | None, point: str) -> None:
    """Tests kill the process at a named point (SERIES_FAULT, series.ops.faults) to prove
    recovery."""
    if fault == point:
        os._exit(99)
    faults.fault(point)


@dataclass(frozen=True)
class Recovery:
    """What `recover` did: its notes, and the interrupted operation it finished (None when
    there was none or it was rolled back), which a command that would repeat it needs
    (`series undo` run again after a killed undo stops there: series.verbs.undo)."""

    notes: list[str] = field(default_factory=list)
    finished: Operation | None = None


def recover(repo: pygit2.Repository) -> Recovery:
    """Finish or roll back every operation a kill interrupted; what was done, as notes.

    git's files backend commits a multi-ref transaction one rename at a time, so a kill
    can leave some refs moved and others not: the journal decides. An entry whose refs
    moved at all (or, without refs, whose series.yaml was written) is finished: the rest of
    its refs, its backups, its series.yaml edits. One that moved nothing is rolled back:
    nothing to undo, so it is only marked. Its leftover ref lock files go first."""
    notes = []
    finished = None
    # Only the newest entry can be pending: every write runs this first, under the lock,
    # so reading the whole journal (it grows with every operation) is never needed.
    for op in [last] if (last := last_operation(repo)) is not None else []:
        if op.state != OpState.PENDING:
            continue
        for lock in refs.own_lock_files(repo, backups(op) + op.moves, op.verify):
            lock.unlink(missing_ok=True)
            notes.append(f"removed {lock.name}, left by an interrupted git update-ref of {op.id}")
        now = {m.ref: refs.current(repo, m.ref) for m in op.moves}
        stray = [m for m in op.moves if now[m.ref] not in (m.old, m.new)]
        if stray:
            m = stray[0]
            raise SeriesError(
                f"operation {op.id} ({op.command}: {op.summary}) was interrupted, and {m.ref} has moved "
                f"since (to {(now[m.ref] or 'deleted')[:12]}; it was going from {(m.old or 'nothing')[:12]} "
                f"to {(m.new or 'nothing')[:12]}): put it back at one of those with 'git update-ref', "
                "then run the command again"
            )
        path = config_file(repo, op)
        if path is not None:
            _staged(path, op).unlink(missing_ok=True)  # its text, if the kill came before the rename
        for where, _ in _files(repo, op):
            _staged(where, op).unlink(missing_ok=True)
        if op.moves:
            committed = any(now[m.ref] == m.new for m in op.moves)
        else:  # series.yaml is renamed before the files change, so either tells
            committed = (
                path is not None and op.config_after != op.config_before and fs.read_text(path) == op.config_after
            ) or any(_applied(where, change) for where, change in _files(repo, op))
        if committed:
            finished = finish(repo, op)
            notes.append(f"finished {op.id} ({op.command}: {op.summary}), which was interrupted")
            notes += settle_checkouts(repo, op)
        else:
            set_aside(repo, op)  # nothing happened, so nothing to list or undo
            notes.append(f"rolled back {op.id} ({op.command}: {op.summary}): it was interrupted before anything moved")
    return Recovery(notes, finished)


def finish(repo: pygit2.Repository, op: Operation) -> Operation:
    """Complete an interrupted operation: backups, the refs not moved yet (each still at
    its old value), its series.yaml edits on the file as it is, then mark it done.
    Idempotent."""
    if op.state == OpState.DONE:
        return op
    todo = []
    for m in op.moves:
        now = refs.current(repo, m.ref)
        if now == m.new:
            continue
        if now != m.old:
            raise SeriesError(
                f"cannot finish {op.id}: {m.ref} is at {now or 'nothing'}, "
                f"expected {m.old or 'nothing'} or {m.new or 'nothing'}"
            )
        todo.append(m)
    kept = backups(op)
    if todo or kept:
        refs.update(repo, kept + todo, f"series {op.command}: {op.summary} (finished)", lenient=len(kept))
    path = config_file(repo, op)
    if path is not None and op.config_after != op.config_before:
        text = fs.read_text(path)
        if text != op.config_after:
            try:
                new = op.config_after if text == op.config_before else seriesedit.apply(text, path, op.config_edits())
            except SeriesError as exc:
                raise SeriesError(
                    f"operation {op.id} ({op.command}) was interrupted after its refs moved; "
                    f"its series.yaml edit cannot be finished: {exc.message}",
                    exc.hint,
                ) from None
            _write_config(path, new)
    for where, change in _files(repo, op):
        if _read(where) != change.after:
            _apply(repo, where, change)
    op.state = OpState.DONE
    write_entry(repo, op)
    return op


def settle_checkouts(repo: pygit2.Repository, op: Operation) -> list[str]:
    """Bring the clean checkouts `op` recorded (extra["checkouts"]) to their branch's new
    commit; one still holding the old commit's tree is updated, any other is left alone."""
    notes = []
    moved = {m.ref: m for m in op.moves}
    for path, branch in op.recorded_checkouts():
        move = moved.get(f"refs/heads/{branch}")
        if move is None or move.old is None or move.new is None:
            continue
        checkout = checkouts.Checkout(Path(path), branch)
        try:
            old_tree = str(repo[pygit2.Oid(hex=move.old)].peel(pygit2.Commit).tree_id)
        except (KeyError, ValueError):
            continue
        if Path(path).is_dir() and checkouts.index_tree(checkout) == old_tree:
            checkouts.update(checkout, move.old, move.new)
            notes.append(f"updated the checkout of {branch} in {path}")
    return notes
