"""Moving refs without ever losing one: lock, backup refs, journal, atomic update, undo.

Every operation that moves refs goes through `Transaction.commit()`:
  1. the journal entry is written with every old and new value (state "pending"),
  2.+3. all refs move in one `git update-ref --stdin` transaction with old values checked,
     which also keeps each old value under refs/series/backup/<op>/<ref>,
  4. series.yaml's new text, written beside it before step 2 (the write a full disk
     stops), is renamed over it, and the entry becomes "done".
A process killed between steps leaves a pending entry; the next series command, whatever
it is, finishes it or rolls it back (`recover()`, run by the write door in
series.workspace before anything else), so refs are all old or all new again. A rename
that fails (a busy or immutable series.yaml: root's permissions do not help there) puts
every ref back at once: refs and series.yaml never disagree.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import enum
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from series import faults, seriesedit
from series.fs import replace_staged, stage, state_dir, write_atomically
from series import validate
from series.errors import SeriesError
from series.git import checkouts
from series.git.cli import git
from series.persisted import (Json, JsonObject, read_enum, read_list, read_object, read_opt_str, read_pairs, read_str,
                              read_str_map)

ZERO = "0" * 40
BACKUP_PREFIX = "refs/series/backup"


@dataclass(frozen=True)
class RefMove:
    ref: str          # full name, refs/heads/topic/x
    old: str | None   # None: the ref must not exist yet
    new: str | None   # None: delete the ref


class OpState(str, enum.Enum):
    """Where a journal entry stands (the str mixin keeps the JSON value)."""

    PENDING = "pending"
    DONE = "done"
    ROLLED_BACK = "rolled-back"     # killed before its commit point: moved to journal/rolled-back/


@dataclass
class Operation:
    """One journal entry: .git/series/journal/<id>.json.

    `config_path` is relative to the top of the worktree the command ran in (`worktree`:
    None for the main one), so a moved or copied repository journals its own file;
    `edits` are the operation's own series.yaml edits (series.seriesedit), which undo
    reverses on the file as it is then. The full texts before and after are kept for
    `series diff` and for undo when nothing changed the file since. `extra` is what the
    command adds for `series log` and for its own undo (read back through the typed
    accessors below). Read back with every field checked (`read_entry`).
    """

    id: str
    command: str
    summary: str
    moves: list[RefMove]
    config_path: str | None = None
    config_before: str | None = None
    config_after: str | None = None
    state: OpState = OpState.PENDING
    undoes: str | None = None
    time: str = ""
    extra: dict[str, Json] = field(default_factory=dict)
    edits: list[seriesedit.Edit] = field(default_factory=list)
    worktree: str | None = None
    verify: list[tuple[str, str]] = field(default_factory=list)   # (ref, value) that must hold

    def to_json(self) -> str:
        data: dict[str, Json] = {
            "id": self.id, "command": self.command, "summary": self.summary,
            "moves": [{"ref": m.ref, "old": m.old, "new": m.new} for m in self.moves],
            "config_path": self.config_path, "config_before": self.config_before,
            "config_after": self.config_after, "state": self.state.value, "undoes": self.undoes,
            "time": self.time, "extra": dict(self.extra), "edits": [e.to_json() for e in self.edits],
            "worktree": self.worktree, "verify": [[ref, value] for ref, value in self.verify],
        }
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Operation":
        """An entry read back, every field's type checked (ValueError); fields an older
        series did not write take their defaults."""
        d = read_object(json.loads(text), "entry")
        moves, edits = read_list(d, "moves"), read_list(d, "edits", [])
        verify, extra = d.get("verify", []), d.get("extra", {})
        if not isinstance(extra, dict):
            raise ValueError("'extra' is not an object")
        return cls(
            id=read_str(d, "id"), command=read_str(d, "command"), summary=read_str(d, "summary"),
            moves=[_move(read_object(m, "moves[]")) for m in moves], config_path=read_opt_str(d, "config_path"),
            config_before=read_opt_str(d, "config_before"), config_after=read_opt_str(d, "config_after"),
            state=read_enum(OpState, d, "state"), undoes=read_opt_str(d, "undoes"),
            time=read_str(d, "time") if "time" in d else "", extra=dict(extra),
            edits=[seriesedit.Edit.from_json(read_object(e, "edits[]")) for e in edits],
            worktree=read_opt_str(d, "worktree"), verify=read_pairs({"verify": verify}, "verify"))

    def config_edits(self) -> list[seriesedit.Edit]:
        if self.edits:
            return list(self.edits)
        if self.config_before == self.config_after:
            return []
        return [seriesedit.Edit((), self.config_before, self.config_after)]  # an older entry

    # -- what commands put in `extra`, read back typed --------------------------------------------

    def recorded_checkouts(self) -> list[tuple[str, str]]:
        """(path, branch) of the clean checkouts the operation found (the write door's)."""
        return read_pairs({"checkouts": self.extra.get("checkouts", [])}, "checkouts")

    def removed_files(self) -> dict[str, str]:
        """Files the operation removed (path as journaled -> text), which undo puts back."""
        return read_str_map({"removed": self.extra.get("removed", {})}, "removed")

    def extra_text(self, key: str) -> str | None:
        return read_opt_str(self.extra, key)


def _move(d: JsonObject) -> RefMove:
    return RefMove(read_str(d, "ref"), read_opt_str(d, "old"), read_opt_str(d, "new"))


def journal_dir(repo: pygit2.Repository) -> Path:
    directory = state_dir(repo) / "journal"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _new_op_id(repo: pygit2.Repository) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    directory = journal_dir(repo)
    existing = sorted(p.name for p in [*directory.glob("*.json"), *directory.glob("rolled-back/*.json")])
    seq = int(existing[-1].split("-", 1)[0]) + 1 if existing else 1
    return f"{seq:05d}-{stamp}"


def current(repo: pygit2.Repository, ref: str) -> str | None:
    found = repo.references.get(ref)
    if found is None:
        return None
    return str(found.resolve().target)


def relative_config(repo: pygit2.Repository, path: Path) -> tuple[str, str | None]:
    """(path as journaled, worktree name): relative to the worktree the command runs in."""
    name = checkouts.worktree_name(repo)
    top = checkouts.worktree_root(repo, name)
    resolved = path.resolve()
    if top is not None:
        try:
            return str(resolved.relative_to(top.resolve())), name
        except ValueError:
            pass
    return str(resolved), None


def config_file(repo: pygit2.Repository, op: Operation) -> Path | None:
    """The series.yaml `op` edited, in this repository wherever it lives now."""
    if op.config_path is None:
        return None
    return resolve_path(repo, op.config_path, op.worktree)


def resolve_path(repo: pygit2.Repository, journaled: str, worktree: str | None) -> Path | None:
    """A path as relative_config() journaled it, in this repository wherever it lives now."""
    path = Path(journaled)
    if path.is_absolute():
        return path
    top = checkouts.worktree_root(repo, worktree)
    return top / path if top is not None else None


def _update_ref_stdin(repo: pygit2.Repository, moves: list[RefMove], message: str,
                      lenient: int = 0, verify: list[tuple[str, str]] | None = None) -> None:
    """All moves in one git transaction; the first `lenient` ones are written whatever
    their current value (backup refs, which a retried operation may find already there)."""
    lines = ["start"]
    for m in moves:  # the --stdin protocol is space-separated: a bad name would garble it
        problem = validate.ref_component_problem(m.ref)
        if problem is not None:
            raise SeriesError(f"refusing to move '{validate.one_line(m.ref)}': the name {problem} "
                              "(git check-ref-format rules); nothing was moved")
    for ref, value in verify or []:
        lines.append(f"verify {ref} {value}")
    for i, m in enumerate(moves):
        if i < lenient:
            lines.append(f"update {m.ref} {m.new}")
            continue
        old = m.old or ZERO
        if m.new is None:
            lines.append(f"delete {m.ref} {old}")
        else:
            lines.append(f"update {m.ref} {m.new} {old}")
    lines += ["prepare", "commit", ""]
    root = Path(repo.path)
    git(root, "update-ref", "-m", message, "--stdin", input="\n".join(lines))


def _backups(op: Operation) -> list[RefMove]:
    return [RefMove(f"{BACKUP_PREFIX}/{op.id}/{m.ref[len('refs/'):]}", None, m.old)
            for m in op.moves if m.old is not None]


def _write_entry(repo: pygit2.Repository, op: Operation) -> None:
    write_atomically(journal_dir(repo) / f"{op.id}.json", op.to_json())


def _staged(path: Path, op: Operation) -> Path:
    """Where an operation's series.yaml text waits for its refs to move."""
    return path.with_name(f".{path.name}.{op.id}.tmp")


def _set_aside(repo: pygit2.Repository, op: Operation) -> None:
    """An entry that moved nothing in the end: kept in journal/rolled-back/ for the
    record, out of what log, undo and repair read."""
    op.state = OpState.ROLLED_BACK
    aside = journal_dir(repo) / "rolled-back"
    aside.mkdir(exist_ok=True)
    write_atomically(aside / f"{op.id}.json", op.to_json())
    (journal_dir(repo) / f"{op.id}.json").unlink(missing_ok=True)


def _roll_back(repo: pygit2.Repository, op: Operation, path: Path, exc: OSError) -> SeriesError:
    """series.yaml could not be replaced after the refs moved: every ref (and backup) back
    where it was, the entry set aside; the error to raise."""
    undo = [RefMove(m.ref, m.new, m.old) for m in op.moves] + [RefMove(b.ref, b.new, None) for b in _backups(op)]
    why = f"{path}: cannot replace it ({exc.strerror or exc})"
    try:
        if undo:
            _update_ref_stdin(repo, undo, f"series {op.command}: {op.summary} (rolled back)")
    except (SeriesError, OSError) as again:
        return SeriesError(f"{why}, and the refs could not be put back ({validate.one_line(str(again))[:120]}); "
                           "the next series command finishes the operation")
    _set_aside(repo, op)
    return SeriesError(f"{why}: every ref was put back, nothing was changed; make the file replaceable "
                       "(nothing holding it, not immutable: lsattr, chattr -i) and run the command again")


def _write_config(path: Path, text: str | None) -> None:
    if text is None:
        path.unlink(missing_ok=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text)


class Transaction:
    """Collect ref moves (and series.yaml's new text); commit all or none. Used by the
    write door (series.workspace.WriteOperation), which computes the text under the lock."""

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
        self.op_id: str | None = None  # reserve_id(): known before commit(), for resumable callers

    def reserve_id(self) -> str:
        """The id commit() will use: a caller can record it first, to finish or revert the
        operation after a crash (series.engine.rebase does)."""
        if self.op_id is None:
            self.op_id = _new_op_id(self.repo)
        return self.op_id

    def set(self, ref: str, new: str | None, *, expect: str | None | object = ...) -> None:
        """Move `ref` to `new`; the old value is the one seen now unless `expect` says."""
        old = current(self.repo, ref) if expect is ... else expect
        self.moves = [m for m in self.moves if m.ref != ref]
        if old == new:
            return
        self.moves.append(RefMove(ref, old, new))  # type: ignore[arg-type]

    def write_config(self, path: Path, before: str | None, after: str | None,
                     edits: list[seriesedit.Edit]) -> None:
        self.config_path, self.config_before, self.config_after = path, before, after
        self.edits = list(edits)

    def commit(self, fault: str | None = None) -> Operation:
        op = Operation(
            id=self.reserve_id(), command=self.command, summary=self.summary,
            moves=self.moves, time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            extra=self.extra, verify=self.verify, undoes=self.undoes,
        )
        if self.config_path is not None:
            op.config_path, op.worktree = relative_config(self.repo, self.config_path)
            op.config_before, op.config_after = self.config_before, self.config_after
            op.edits = list(self.edits)
        _write_entry(self.repo, op)
        _inject(fault, "after-journal")
        path = self.config_path if self.config_after != self.config_before else None
        staged = None
        if path is not None and self.config_after is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            staged = stage(path, self.config_after, _staged(path, op))
        # The backup refs are created in the same update-ref transaction as the moves: one
        # git process instead of one ref write per topic, and the old commits are reachable
        # from the branches themselves until that transaction commits.
        backups = _backups(op)
        _inject(fault, "after-backup")
        if self.moves:
            _update_ref_stdin(self.repo, backups + self.moves, f"series {self.command}: {self.summary}",
                              lenient=len(backups), verify=self.verify)
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
        op.state = OpState.DONE
        _write_entry(self.repo, op)
        return op


def _inject(fault: str | None, point: str) -> None:
    """Tests kill the process at a named point (SERIES_FAULT, series.engine.state) to prove
    recovery."""
    if fault == point:
        os._exit(99)
    faults.fault(point)


def read_entry(path: Path) -> Operation:
    """One journal entry; a corrupt one (edited, truncated, another tool's) is the user's
    to look at, so it is named, never a crash."""
    try:
        op = Operation.from_json(path.read_bytes().decode("utf-8"))
        _check_entry(op)
        return op
    except (OSError, ValueError, TypeError, KeyError, AttributeError, SeriesError) as exc:
        raise SeriesError(f"{path}: unreadable journal entry ({type(exc).__name__}: "
                          f"{validate.one_line(str(exc))[:120]}); move it out of {path.parent} to go on") from None


def _check_entry(op: Operation) -> None:
    """Right JSON, wrong types (edited by hand, another version): a ValueError here."""
    for move in op.moves:
        if not isinstance(move.ref, str) or not move.ref.startswith("refs/") \
                or validate.ref_component_problem(move.ref):
            raise ValueError(f"move of {str(move.ref)[:60]!r}: not a ref name")
        for value in (move.old, move.new):
            if value is not None:
                validate.commit_id(value, f"move of {move.ref}")


def find(repo: pygit2.Repository, op_id: str) -> Operation | None:
    entry = journal_dir(repo) / f"{op_id}.json"
    return read_entry(entry) if entry.exists() else None


def last_operation(repo: pygit2.Repository) -> Operation | None:
    entries = sorted(journal_dir(repo).glob("*.json"))
    return read_entry(entries[-1]) if entries else None


def operations(repo: pygit2.Repository) -> list[Operation]:
    return [read_entry(p) for p in sorted(journal_dir(repo).glob("*.json"))]


# -- repairing what a kill interrupted ------------------------------------------------------------

def _own_lock_files(repo: pygit2.Repository, op: Operation) -> list[Path]:
    """Ref lock files a killed `git update-ref` of `op` left. git writes the new value
    into <ref>.lock before renaming it over the ref, so a lock file holding exactly the
    value `op` was writing to that ref is provably its own; a ref it only verifies or
    deletes gets a lock with nothing or the expected value in it. (We hold the series
    lock, so no other series process is writing.)"""
    common = checkouts.common_dir(repo)
    wanted: dict[str, set[str]] = {}
    for m in _backups(op) + op.moves:
        wanted.setdefault(m.ref, set()).add(m.new if m.new is not None else (m.old or ""))
        if m.new is None:
            wanted[m.ref].add("")
    for ref, value in op.verify:
        wanted.setdefault(ref, set()).update({value, ""})
    found = []
    for ref, values in wanted.items():
        lock = common / f"{ref}.lock"
        try:
            text = lock.read_text().strip()
        except OSError:
            continue
        if text in values:
            found.append(lock)
    return found


def recover(repo: pygit2.Repository) -> list[str]:
    """Finish or roll back every operation a kill interrupted; what was done, as notes.

    git's files backend commits a multi-ref transaction one rename at a time, so a kill
    can leave some refs moved and others not: the journal decides. An entry whose refs
    moved at all (or, without refs, whose series.yaml was written) is finished: the rest of
    its refs, its backups, its series.yaml edits. One that moved nothing is rolled back:
    nothing to undo, so it is only marked. Its leftover ref lock files go first."""
    notes = []
    # Only the newest entry can be pending: every write runs this first, under the lock,
    # so reading the whole journal (it grows with every operation) is never needed.
    for op in [last] if (last := last_operation(repo)) is not None else []:
        if op.state != OpState.PENDING:
            continue
        for lock in _own_lock_files(repo, op):
            lock.unlink(missing_ok=True)
            notes.append(f"removed {lock.name}, left by an interrupted git update-ref of {op.id}")
        now = {m.ref: current(repo, m.ref) for m in op.moves}
        stray = [m for m in op.moves if now[m.ref] not in (m.old, m.new)]
        if stray:
            m = stray[0]
            raise SeriesError(
                f"operation {op.id} ({op.command}: {op.summary}) was interrupted, and {m.ref} has moved "
                f"since (to {(now[m.ref] or 'deleted')[:12]}; it was going from {(m.old or 'nothing')[:12]} "
                f"to {(m.new or 'nothing')[:12]}): put it back at one of those with 'git update-ref', "
                "then run the command again")
        path = config_file(repo, op)
        if path is not None:
            _staged(path, op).unlink(missing_ok=True)  # its text, if the kill came before the rename
        if op.moves:
            committed = any(now[m.ref] == m.new for m in op.moves)
        else:
            committed = path is not None and _read(path) == op.config_after
        if committed:
            finish(repo, op)
            notes.append(f"finished {op.id} ({op.command}: {op.summary}), which was interrupted")
            notes += settle_checkouts(repo, op)
        else:
            _set_aside(repo, op)  # nothing happened, so nothing to list or undo
            notes.append(f"rolled back {op.id} ({op.command}: {op.summary}): it was interrupted "
                         "before anything moved")
    return notes


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:  # CRLF kept: the editor keeps it
            return f.read()
    except FileNotFoundError:
        return None


def finish(repo: pygit2.Repository, op: Operation) -> Operation:
    """Complete an interrupted operation: backups, the refs not moved yet (each still at
    its old value), its series.yaml edits on the file as it is, then mark it done.
    Idempotent."""
    if op.state == OpState.DONE:
        return op
    todo = []
    for m in op.moves:
        now = current(repo, m.ref)
        if now == m.new:
            continue
        if now != m.old:
            raise SeriesError(f"cannot finish {op.id}: {m.ref} is at {now or 'nothing'}, "
                              f"expected {m.old or 'nothing'} or {m.new or 'nothing'}")
        todo.append(m)
    backups = _backups(op)
    if todo or backups:
        _update_ref_stdin(repo, backups + todo, f"series {op.command}: {op.summary} (finished)",
                          lenient=len(backups))
    path = config_file(repo, op)
    if path is not None and op.config_after != op.config_before:
        text = _read(path)
        if text != op.config_after:
            try:
                new = op.config_after if text == op.config_before else \
                    seriesedit.apply(text, path, op.config_edits())
            except SeriesError as exc:
                raise SeriesError(f"operation {op.id} ({op.command}) was interrupted after its refs moved; "
                                  f"its series.yaml edit cannot be finished: {exc}") from None
            _write_config(path, new)
    op.state = OpState.DONE
    _write_entry(repo, op)
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
