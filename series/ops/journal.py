"""The journal: one entry per operation, .git/series/journal/<id>.json, with every ref
move's old and new value and the operation's own series.yaml edits; what `series log`,
`series diff` and `series undo` read, and what recovery after a kill decides from.

An entry is written "pending" before anything moves and "done" after (series.ops.changeset);
one that moved nothing in the end is set aside in journal/rolled-back/. Each old value is
also kept under refs/series/backup/<op>/<ref> (`backups`), so an undone or overwritten
branch can always be found again.
"""

from __future__ import annotations

import base64
import datetime
import enum
import json
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from series.seriesfile import edit as seriesedit
from series import validate
from series.errors import SeriesError
from series.ops.fs import state_dir, write_atomically
from series.git import checkouts
from series.git.refs import RefMove
from series.persisted import (
    Json,
    JsonObject,
    read_enum,
    read_list,
    read_object,
    read_opt_str,
    read_pairs,
    read_str,
    read_str_map,
)

BACKUP_PREFIX = "refs/series/backup"
# An entry whose extra holds RECORD: true is a record, not a change (a frozen prediction, an
# explanation: series.measure.predictions): `series undo` passes over it, since undoing a
# claim made before a measurement would be a way to rewrite it.
RECORD = "record"


class OpState(str, enum.Enum):
    """Where a journal entry stands (the str mixin keeps the JSON value)."""

    PENDING = "pending"
    DONE = "done"
    ROLLED_BACK = "rolled-back"  # killed before its commit point: moved to journal/rolled-back/


@dataclass(frozen=True)
class FileChange:
    """One file an operation writes or removes beside series.yaml (a recorded conflict
    resolution, a pruned one, an imported directory's files): its content before and
    after (None: no file), so recovery can finish it and undo put the old one back.
    `path` as relative_config() journals it, in the worktree `worktree`."""

    path: str
    worktree: str | None
    before: bytes | None
    after: bytes | None

    def to_json(self) -> dict[str, Json]:
        return {
            "path": self.path,
            "worktree": self.worktree,
            "before": _content(self.before),
            "after": _content(self.after),
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> "FileChange":
        return cls(
            read_str(d, "path"), read_opt_str(d, "worktree"), _read_content(d, "before"), _read_content(d, "after")
        )

    def reversed(self) -> "FileChange":
        return FileChange(self.path, self.worktree, self.after, self.before)


def _content(data: bytes | None) -> Json:
    """A file's bytes in JSON: as text when it is UTF-8 (readable in the entry), else base64."""
    if data is None:
        return None
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def _read_content(d: JsonObject, key: str) -> bytes | None:
    value = d.get(key)
    if value is None:
        return None
    content = read_object(value, key)
    if "text" in content:
        return read_str(content, "text").encode("utf-8")
    return base64.b64decode(read_str(content, "base64"), validate=True)


@dataclass
class Operation:
    """One journal entry: .git/series/journal/<id>.json.

    `config_path` is relative to the top of the worktree the command ran in (`worktree`:
    None for the main one), so a moved or copied repository journals its own file;
    `edits` are the operation's own series.yaml edits (series.seriesfile.edit), which undo
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
    verify: list[tuple[str, str]] = field(default_factory=list)  # (ref, value) that must hold
    files: list[FileChange] = field(default_factory=list)  # written after the refs moved

    def to_json(self) -> str:
        data: dict[str, Json] = {
            "id": self.id,
            "command": self.command,
            "summary": self.summary,
            "moves": [{"ref": m.ref, "old": m.old, "new": m.new} for m in self.moves],
            "config_path": self.config_path,
            "config_before": self.config_before,
            "config_after": self.config_after,
            "state": self.state.value,
            "undoes": self.undoes,
            "time": self.time,
            "extra": dict(self.extra),
            "edits": [e.to_json() for e in self.edits],
            "worktree": self.worktree,
            "verify": [[ref, value] for ref, value in self.verify],
            "files": [f.to_json() for f in self.files],
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
            id=read_str(d, "id"),
            command=read_str(d, "command"),
            summary=read_str(d, "summary"),
            moves=[_move(read_object(m, "moves[]")) for m in moves],
            config_path=read_opt_str(d, "config_path"),
            config_before=read_opt_str(d, "config_before"),
            config_after=read_opt_str(d, "config_after"),
            state=read_enum(OpState, d, "state"),
            undoes=read_opt_str(d, "undoes"),
            time=read_str(d, "time") if "time" in d else "",
            extra=dict(extra),
            edits=[seriesedit.Edit.from_json(read_object(e, "edits[]")) for e in edits],
            worktree=read_opt_str(d, "worktree"),
            verify=read_pairs({"verify": verify}, "verify"),
            files=[FileChange.from_json(read_object(f, "files[]")) for f in read_list(d, "files", [])],
        )

    def config_edits(self) -> list[seriesedit.Edit]:
        if self.edits:
            return list(self.edits)
        if self.config_before == self.config_after:
            return []
        return [seriesedit.Edit((), self.config_before, self.config_after)]  # an older entry

    # -- what commands put in `extra`, read back typed --------------------------------------------

    def recorded_checkouts(self) -> list[tuple[str, str]]:
        """(path, branch) of the clean checkouts the operation found (the transaction's)."""
        return read_pairs({"checkouts": self.extra.get("checkouts", [])}, "checkouts")

    def file_changes(self) -> list[FileChange]:
        """The files the operation wrote or removed; an entry of an older series kept what
        `resolutions --prune` removed in extra["removed"] (path -> text)."""
        removed = read_str_map({"removed": self.extra.get("removed", {})}, "removed")
        worktree = self.extra_text("worktree")
        return list(self.files) + [
            FileChange(rel, worktree, text.encode("utf-8"), None) for rel, text in removed.items()
        ]

    def is_record(self) -> bool:
        return self.extra.get(RECORD) is True

    def extra_text(self, key: str) -> str | None:
        return read_opt_str(self.extra, key)


def _move(d: JsonObject) -> RefMove:
    return RefMove(read_str(d, "ref"), read_opt_str(d, "old"), read_opt_str(d, "new"))


def journal_dir(repo: pygit2.Repository) -> Path:
    directory = state_dir(repo) / "journal"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def new_op_id(repo: pygit2.Repository) -> str:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    directory = journal_dir(repo)
    existing = sorted(p.name for p in [*directory.glob("*.json"), *directory.glob("rolled-back/*.json")])
    seq = int(existing[-1].split("-", 1)[0]) + 1 if existing else 1
    return f"{seq:05d}-{stamp}"


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


def backups(op: Operation) -> list[RefMove]:
    return [
        RefMove(f"{BACKUP_PREFIX}/{op.id}/{m.ref[len('refs/') :]}", None, m.old) for m in op.moves if m.old is not None
    ]


def write_entry(repo: pygit2.Repository, op: Operation) -> None:
    write_atomically(journal_dir(repo) / f"{op.id}.json", op.to_json())


def set_aside(repo: pygit2.Repository, op: Operation) -> None:
    """An entry that moved nothing in the end: kept in journal/rolled-back/ for the
    record, out of what log, undo and repair read."""
    op.state = OpState.ROLLED_BACK
    aside = journal_dir(repo) / "rolled-back"
    aside.mkdir(exist_ok=True)
    write_atomically(aside / f"{op.id}.json", op.to_json())
    (journal_dir(repo) / f"{op.id}.json").unlink(missing_ok=True)


def read_entry(path: Path) -> Operation:
    """One journal entry; a corrupt one (edited, truncated, another tool's) is the user's
    to look at, so it is named, never a crash."""
    try:
        op = Operation.from_json(path.read_bytes().decode("utf-8"))
        _check_entry(op)
        return op
    except (OSError, ValueError, TypeError, KeyError, AttributeError, SeriesError) as exc:
        raise SeriesError(
            f"{path}: unreadable journal entry ({type(exc).__name__}: "
            f"{validate.one_line(str(exc))[:120]}); move it out of {path.parent} to go on"
        ) from None


def _check_entry(op: Operation) -> None:
    """Right JSON, wrong types (edited by hand, another version): a ValueError here."""
    for move in op.moves:
        if (
            not isinstance(move.ref, str)
            or not move.ref.startswith("refs/")
            or validate.ref_component_problem(move.ref)
        ):
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
