"""Moving refs without ever losing one: lock, backup refs, journal, atomic update, undo.

Every operation that moves refs goes through `Transaction.commit()`:
  1. the journal entry is written with every old and new value (state "pending"),
  2.+3. all refs move in one `git update-ref --stdin` transaction with old values checked,
     which also keeps each old value under refs/series/backup/<op>/<ref>,
  4. series.yaml gets its new text, and the entry becomes "done".
A process killed between steps leaves a pending entry; `series undo` (or the command's
--abort) puts every ref and series.yaml back from it.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from series.config import write_text_atomically
from series import validate
from series.errors import SeriesError
from series.git.cli import git

ZERO = "0" * 40
BACKUP_PREFIX = "refs/series/backup"


def state_dir(repo: pygit2.Repository) -> Path:
    """.git/series/ of the main repository (shared by all worktrees)."""
    common = Path(repo.path)
    commondir = common / "commondir"
    if commondir.exists():
        common = (common / commondir.read_text().strip()).resolve()
    directory = common / "series"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Lock:
    """One series process per repository: .git/series/lock holds host and pid."""

    def __init__(self, repo: pygit2.Repository):
        self.path = state_dir(repo) / "lock"
        self.held = False

    def __enter__(self) -> "Lock":
        me = f"{socket.gethostname()} {os.getpid()}\n"
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self._break_stale():
                    continue
                owner = self.path.read_text().strip() if self.path.exists() else "?"
                raise SeriesError(
                    f"another series command is running in this repository (lock held by {owner}); "
                    f"wait for it, or remove {self.path} if that process is gone"
                ) from None
            with os.fdopen(fd, "w") as f:
                f.write(me)
            self.held = True
            return self
        raise SeriesError(f"could not take the lock {self.path}")

    def _break_stale(self) -> bool:
        """A lock left by a dead process on this host is taken over."""
        try:
            host, pid = self.path.read_text().split()
        except (OSError, ValueError):
            return False
        if host == socket.gethostname() and not _pid_alive(int(pid)):
            self.path.unlink(missing_ok=True)
            return True
        return False

    def __exit__(self, *exc: object) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


@dataclass(frozen=True)
class RefMove:
    ref: str          # full name, refs/heads/topic/x
    old: str | None   # None: the ref must not exist yet
    new: str | None   # None: delete the ref


@dataclass
class Operation:
    id: str
    command: str
    summary: str
    moves: list[RefMove]
    config_path: str | None = None
    config_before: str | None = None
    config_after: str | None = None
    state: str = "pending"
    undoes: str | None = None
    time: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        return json.dumps(data, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Operation":
        data = json.loads(text)
        data["moves"] = [RefMove(**m) for m in data["moves"]]
        return cls(**data)


def journal_dir(repo: pygit2.Repository) -> Path:
    directory = state_dir(repo) / "journal"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _new_op_id(repo: pygit2.Repository) -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    existing = sorted(journal_dir(repo).glob("*.json"))
    seq = int(existing[-1].name.split("-", 1)[0]) + 1 if existing else 1
    return f"{seq:05d}-{stamp}"


def current(repo: pygit2.Repository, ref: str) -> str | None:
    found = repo.references.get(ref)
    if found is None:
        return None
    return str(found.resolve().target)


def _update_ref_stdin(repo: pygit2.Repository, moves: list[RefMove], message: str,
                      lenient: int = 0) -> None:
    """All moves in one git transaction; the first `lenient` ones are written whatever
    their current value (backup refs, which a retried operation may find already there)."""
    lines = ["start"]
    for m in moves:  # the --stdin protocol is space-separated: a bad name would garble it
        problem = validate.ref_component_problem(m.ref)
        if problem is not None:
            raise SeriesError(f"refusing to move '{validate.one_line(m.ref)}': the name {problem} "
                              "(git check-ref-format rules); nothing was moved")
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


class Transaction:
    """Collect ref moves (and a new series.yaml text); commit all or none."""

    def __init__(self, repo: pygit2.Repository, command: str, summary: str):
        self.repo = repo
        self.command = command
        self.summary = summary
        self.moves: list[RefMove] = []
        self.config_path: Path | None = None
        self.config_after: str | None = None
        self.extra: dict[str, Any] = {}
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
        if old == new:
            return
        self.moves.append(RefMove(ref, old, new))  # type: ignore[arg-type]

    def write_config(self, path: Path, text: str) -> None:
        self.config_path = path
        self.config_after = text

    def commit(self, fault: str | None = None) -> Operation:
        op = Operation(
            id=self.reserve_id(), command=self.command, summary=self.summary,
            moves=self.moves, time=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            extra=self.extra,
        )
        if self.config_path is not None:
            op.config_path = str(self.config_path)
            op.config_before = self.config_path.read_text() if self.config_path.exists() else None
            op.config_after = self.config_after
        entry = journal_dir(self.repo) / f"{op.id}.json"
        write_text_atomically(entry, op.to_json())
        _inject(fault, "after-journal")
        # The backup refs are created in the same update-ref transaction as the moves: one
        # git process instead of one ref write per topic, and the old commits are reachable
        # from the branches themselves until that transaction commits.
        backups = [RefMove(f"{BACKUP_PREFIX}/{op.id}/{m.ref[len('refs/'):]}", None, m.old)
                   for m in self.moves if m.old is not None]
        _inject(fault, "after-backup")
        if self.moves:
            _update_ref_stdin(self.repo, backups + self.moves, f"series {self.command}: {self.summary}",
                              lenient=len(backups))
        _inject(fault, "after-refs")
        if self.config_path is not None and self.config_after is not None:
            write_text_atomically(self.config_path, self.config_after)
        op.state = "done"
        write_text_atomically(entry, op.to_json())
        return op


def _inject(fault: str | None, point: str) -> None:
    """Tests kill the process at a named point (SERIES_FAULT) to prove recovery."""
    wanted = fault or os.environ.get("SERIES_FAULT")
    if wanted == point:
        os._exit(99)


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
    for name in ("id", "command", "summary", "state", "time"):
        if not isinstance(getattr(op, name), str):
            raise ValueError(f"'{name}' is not a string")
    for name in ("config_path", "config_before", "config_after", "undoes"):
        if not isinstance(getattr(op, name), (str, type(None))):
            raise ValueError(f"'{name}' is not a string")
    if not isinstance(op.extra, dict):
        raise ValueError("'extra' is not an object")
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


def finish(repo: pygit2.Repository, op: Operation) -> Operation:
    """Complete a pending operation whose process died: backups, the refs not moved yet
    (each still at its old value), series.yaml, then mark it done. Idempotent."""
    if op.state == "done":
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
    backups = [RefMove(f"{BACKUP_PREFIX}/{op.id}/{m.ref[len('refs/'):]}", None, m.old)
               for m in op.moves if m.old is not None]
    if todo or backups:
        _update_ref_stdin(repo, backups + todo, f"series {op.command}: {op.summary} (finished)",
                          lenient=len(backups))
    if op.config_path and op.config_after is not None:
        path = Path(op.config_path)
        if not path.exists() or path.read_text() != op.config_after:
            write_text_atomically(path, op.config_after)
    op.state = "done"
    write_text_atomically(journal_dir(repo) / f"{op.id}.json", op.to_json())
    return op


def revert(repo: pygit2.Repository, op: Operation) -> Operation:
    """Put back what `op` moved (done or pending), as a journaled 'undo' operation."""
    return _revert(repo, op)


def operations(repo: pygit2.Repository) -> list[Operation]:
    return [read_entry(p) for p in sorted(journal_dir(repo).glob("*.json"))]


def undo_last(repo: pygit2.Repository) -> Operation:
    """Revert the newest operation not yet undone: refs back, series.yaml back."""
    ops = operations(repo)
    undone = {op.undoes for op in ops if op.undoes}
    for op in reversed(ops):
        if op.command == "undo" or op.id in undone:
            continue
        return _revert(repo, op)
    raise SeriesError("nothing to undo: 'series log' lists no operation that is not undone already")


def _revert(repo: pygit2.Repository, op: Operation) -> Operation:
    txn = Transaction(repo, "undo", f"undo {op.id} ({op.command}: {op.summary})")
    for m in reversed(op.moves):
        now = current(repo, m.ref)
        # A pending op may have stopped before its refs moved: then they are already old.
        if now == m.old:
            continue
        if now != m.new:
            raise SeriesError(
                f"cannot undo {op.id}: {m.ref} moved since ({now or 'deleted'}, expected {m.new}); "
                f"its old value is kept at {BACKUP_PREFIX}/{op.id}/{m.ref[len('refs/'):]}"
            )
        txn.set(m.ref, m.old, expect=now)
    if op.config_path and op.config_before is not None:
        path = Path(op.config_path)
        if path.exists() and path.read_text() != op.config_before:
            txn.write_config(path, op.config_before)
    result = txn.commit()
    result.undoes = op.id
    entry = journal_dir(repo) / f"{result.id}.json"
    write_text_atomically(entry, result.to_json())
    return result
