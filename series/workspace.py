"""A series.yaml together with the repository that holds its branches, and the one transaction
every write goes through.

    with ws.transaction("drop", "drop x") as tx:     # or transaction(repo, verb) without a series
        tx.set_topic("x", status="dropped")          # series.yaml edits, by key
        tx.move("refs/heads/topic/x", new)           # ref moves
        tx.commit()                                  # all of it, or none of it

`transaction()` takes the repository's kernel lock for the whole operation, finishes or rolls
back whatever a killed command left half-done (series.ops.changeset.recover), and refuses while
a rebase or an adoption is halted (unless it is the command that resumes it). `commit()`
refuses when a branch it moves is checked out with local changes anywhere, re-reads
series.yaml and compares-and-swaps the operation's own edits onto it (a key someone else
changed stops it, named), journals everything, moves every ref in one transaction, writes
series.yaml, writes (or removes) the other files it staged (tx.write / tx.remove: recorded
resolutions, an imported directory), and updates the clean checkouts. `revert()` fills an operation with the
reverse of an earlier one, which is what undo and an abort commit.
"""

from __future__ import annotations

import contextlib
import errno
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from series.seriesfile import config
from series.errors import SeriesError

if TYPE_CHECKING:
    import pygit2

    from series.ops import journal
    from series.seriesfile import edit as seriesedit
    from series.git import refs
    from series.model import Series, Topic
    from series.persisted import Json
    from series.seriesfile.edit import Edit, KeyPath
    from series.topics import OwnWork, OwnWorks

# pygit2 and the modules of the write path (changeset, journal, halted, fs, refs, topics:
# ~45 ms with pygit2's own import) load in the functions below, once the workspace opens
# its repository: a verb pays for them at its first git call, not at start-up, and one
# that stops earlier (no series.yaml found, a usage error) never does.
# tests/test_startup_imports.py keeps them out of this module's import.


@dataclass(frozen=True)
class Workspace:
    series: Series
    repo: pygit2.Repository
    text: str | None = None  # series.yaml as `series` was parsed from (what edits compare to)

    @cached_property
    def _own(self) -> OwnWorks:
        from series.topics import OwnWorks

        return OwnWorks(self.repo, self.series, self.base_commit())

    def own(self, topic: Topic) -> OwnWork | None:
        """The topic's own commits, paths and stats (series.topics), computed once; None
        when its branch does not exist."""
        return self._own.of(topic)

    def built_on(self, topic: Topic) -> Topic | None:
        """The earlier active topic `topic`'s branch is built on (series.topics.built_on),
        its own commits counted as this series does (a stacked topic with depends_on
        shares none)."""
        from series.topics import built_on

        earlier = self.series.topics[: [t.name for t in self.series.topics].index(topic.name)]
        return built_on(self._own, topic, [t for t in earlier if t.active])

    def require_own(self, topic: Topic) -> OwnWork:
        """`own`, for a verb that needs the branch: the one missing-branch error (`head`)."""
        own = self.own(topic)
        if own is None:
            self.head(topic)  # raises, naming the series.yaml line
            raise AssertionError(topic.branch)
        return own

    @property
    def config_path(self) -> Path:
        return self.series.path

    def base_commit(self) -> pygit2.Commit:
        from series.git.repo import resolve_commit

        try:
            return resolve_commit(self.repo, self.series.upstream.base, "ref")
        except SeriesError as exc:
            # name the file and line, like every other series.yaml error
            line = self.series.lines.get("upstream.base", 1)
            raise SeriesError(f"{self.config_path.name}:{line}: upstream.base: {exc.message}", exc.hint) from None

    def head(self, topic: Topic) -> pygit2.Commit:
        from series.git.repo import branch_commit

        commit = branch_commit(self.repo, topic.branch)
        if commit is None:
            raise SeriesError(
                f"{self.config_path.name}:{self.series.lines.get(f'topics.{topic.name}.branch', topic.line)}: "
                f"topics ({topic.name}).branch: "
                f"branch '{topic.branch}' does not exist (create it, or fix the name)"
            )
        return commit

    def reload(self) -> "Workspace":
        from series.ops import fs

        text = fs.read_text(self.config_path)
        return Workspace(config.read(text or "", self.config_path), self.repo, text)

    def transaction(
        self, command: str, summary: str = "", *, resumes: str | None = None
    ) -> contextlib.AbstractContextManager["Transaction"]:
        """The transaction for this workspace's series.yaml (see the module docstring)."""
        return transaction(self.repo, command, summary, config_path=self.config_path, seen=self.text, resumes=resumes)

    def draft(self, command: str, summary: str = "") -> "Transaction":
        """An operation that is only previewed (--dry-run): no lock, never committed."""
        return Transaction(self.repo, command, summary, self.config_path, self.text, [], draft=True)


def open_workspace(config_file: Path | None, directory: Path | None, check_branches: bool = True) -> Workspace:
    start = directory or Path.cwd()
    path = config.find(start, config_file)
    text = config.read_text(path)  # UTF-8, no NUL: else exit 1 naming the file
    from series.git.repo import open_repo  # the first git call: pygit2 loads here

    repo = open_repo(path.parent)
    if repair(repo):
        text = config.read_text(path)  # a finished operation may have edited it
    series = config.read(text, path)
    ws = Workspace(series, repo, text)
    if check_branches:
        for topic in series.topics:
            if topic.active:
                ws.head(topic)
    _complete_clone(ws)
    return ws


def _complete_clone(ws: Workspace) -> None:
    """A partial clone gets the blobs the topics need; a shallow one is checked (partial.py)."""
    from series.git import partial

    if not (ws.repo.is_shallow or partial.is_partial(ws.repo)):
        return
    try:
        base = ws.base_commit()
    except SeriesError:
        return  # the command says what is wrong with the base in its own words
    heads = [
        ws.head(t)
        for t in ws.series.topics
        if t.active and ws.repo.references.get(f"refs/heads/{t.branch}") is not None
    ]
    partial.check_shallow(ws.repo, base, heads, ws.series.upstream.base, ws.series.upstream.remote)
    partial.ensure_blobs(ws.repo, base, heads)


def repair(repo: pygit2.Repository) -> list[str]:
    """Before any command reads: finish or roll back an operation a kill left half-done
    (only ever the newest entry, since every write repairs first), unless a command is
    running right now (then that entry is its own)."""
    from series.ops import changeset, fs, journal

    last = journal.last_operation(repo)
    if last is None or last.state != journal.OpState.PENDING:
        return []
    try:
        with fs.Lock(repo, "repair"):
            return changeset.recover(repo).notes
    except SeriesError:
        return []


def open_repaired(start: Path) -> pygit2.Repository:
    """The repository at `start`, an operation a kill interrupted finished or rolled back
    first: for the verbs that read the journal without a series.yaml (log, undo, predict)."""
    from series.git.repo import open_repo

    repo = open_repo(start)
    repair(repo)
    return repo


class Transaction:
    """What one command changes; nothing happens before commit()."""

    def __init__(
        self,
        repo: pygit2.Repository,
        command: str,
        summary: str,
        config_path: Path | None,
        seen: str | None,
        notes: list[str],
        draft: bool = False,
    ):
        from series.ops import changeset

        self.repo = repo
        self.draft = draft
        self.command = command
        self.changes = changeset.Changeset(repo, command, summary)
        self.config_path = config_path
        self._seen_text = seen
        self._seen: seriesedit.Plain | None = None
        self.edits: list[Edit] = []
        self.notes = notes  # what the transaction did on the way (a repaired operation, checkouts)
        self.finished: journal.Operation | None = None  # the interrupted operation the transaction finished first
        self.committed: journal.Operation | None = None

    @property
    def summary(self) -> str:
        return self.changes.summary

    @summary.setter
    def summary(self, text: str) -> None:
        self.changes.summary = text

    @property
    def extra(self) -> dict[str, Json]:
        return self.changes.extra

    def reserve_id(self) -> str:
        return self.changes.reserve_id()

    # -- refs --------------------------------------------------------------------------------

    def move(self, ref: str, new: str | None, *, expect: str | None | object = ...) -> None:
        self.changes.set(ref, new, expect=expect)

    def verify(self, ref: str, value: str) -> None:
        """`ref` must still be `value` when the refs move (checked inside git's transaction)."""
        self.changes.verify.append((ref, value))

    @property
    def moves(self) -> list[refs.RefMove]:
        return self.changes.moves

    # -- other files of the series (resolutions, an imported directory) ---------------------

    def write(self, path: Path, data: str | bytes) -> None:
        """Write `path` when the operation commits (staged before the refs move, journaled
        with its old content, so undo puts that back)."""
        self.changes.file(path, data.encode("utf-8") if isinstance(data, str) else data)

    def remove(self, path: Path) -> None:
        """Remove `path` when the operation commits (journaled with its content)."""
        self.changes.file(path, None)

    @property
    def files(self) -> list[journal.FileChange]:
        return self.changes.files

    def write_recorded(self, change: journal.FileChange) -> None:
        """Write a file change an earlier step recorded (its path as the journal keeps it);
        one whose worktree is gone, or that removes the file, is left out."""
        from series.ops import journal

        where = journal.resolve_path(self.repo, change.path, change.worktree)
        if where is not None and change.after is not None:
            self.write(where, change.after)

    # -- the journal, for a step that goes on with an operation it began (series.engine) -----

    def find(self, op_id: str) -> journal.Operation | None:
        from series.ops import journal

        return journal.find(self.repo, op_id)

    def finish(self, op: journal.Operation) -> journal.Operation:
        """Complete `op` if a kill interrupted it (series.ops.changeset.finish; idempotent)."""
        from series.ops import changeset

        return changeset.finish(self.repo, op)

    def settle_checkouts(self, op: journal.Operation) -> list[str]:
        """The clean checkouts `op` recorded, brought to their branch's new commit."""
        from series.ops import changeset

        return changeset.settle_checkouts(self.repo, op)

    # -- series.yaml -------------------------------------------------------------------------

    def seen(self, text: str | None = None) -> seriesedit.Plain:
        """series.yaml as the operation read it (what its edits are relative to)."""
        from series.ops import fs
        from series.seriesfile import edit as seriesedit

        if text is not None:
            self._seen_text, self._seen = text, None
        if self._seen is None:
            if self._seen_text is None and self.config_path is not None:
                self._seen_text = fs.read_text(self.config_path)
            if self._seen_text is None or self.config_path is None:
                raise SeriesError("no series.yaml to edit", "run 'series init --base REF' first")
            self._seen = seriesedit.load_plain(self._seen_text, self.config_path)
        return self._seen

    def edit(self, path: KeyPath, new: Any) -> None:
        from series.seriesfile import edit as seriesedit
        from series.seriesfile.edit import Edit

        self.edits.append(Edit(path, seriesedit.value_at(self.seen(), path), new))

    def set_topic(self, name: str, **fields: Any) -> None:
        """Set (None: remove) fields of one topic."""
        for key, value in fields.items():
            self.edit(("topics", name, key), list(value) if isinstance(value, tuple) else value)

    def add_topic(self, fields: dict[str, Any], *, after: str | None = None, before: str | None = None) -> None:
        from series.seriesfile.edit import Edit

        topic = {k: (list(v) if isinstance(v, tuple) else v) for k, v in fields.items() if v is not None}
        names = [t["name"] for t in self.seen().get("topics") or []]
        if after is None and before is None and names:
            after = names[-1]
        elif after is not None and before is None and after in names and names.index(after) + 1 < len(names):
            before = names[names.index(after) + 1]
        self.edits.append(Edit(("topics", str(topic["name"])), None, topic, after=after, before=before))

    def write_file(self, text: str) -> None:
        """The whole file (series init): refused at commit if it changed since it was read."""
        from series.ops import fs
        from series.seriesfile.edit import Edit

        if self._seen_text is None and self.config_path is not None:
            self._seen_text = fs.read_text(self.config_path)
        self.edits.append(Edit((), self._seen_text, text))

    def preview(self) -> str | None:
        """series.yaml as this operation would leave it, validated (for --dry-run and checks)."""
        from series.seriesfile import edit as seriesedit

        if not self.edits or self.config_path is None:
            return self._seen_text
        return seriesedit.apply(self._seen_text, self.config_path, self.edits)

    def revert(self, target: journal.Operation) -> None:
        """Fill this operation with the reverse of `target`: its refs back (each must still
        be where `target` left it), and its own series.yaml edits reversed on the file as it
        is now (byte for byte when nobody changed the file since)."""
        from series.ops import fs, journal
        from series.git import refs
        from series.seriesfile.edit import Edit

        for m in reversed(target.moves):
            now = refs.current(self.repo, m.ref)
            if now == m.old:
                continue  # never moved (an operation killed before its refs moved)
            if now != m.new:
                raise SeriesError(
                    f"cannot undo {target.id}: {m.ref} moved since ({(now or 'deleted')[:12]}, expected "
                    f"{(m.new or 'deleted')[:12]}); its old value is kept at "
                    f"{journal.BACKUP_PREFIX}/{target.id}/{m.ref[len('refs/') :]}"
                )
            self.move(m.ref, m.old, expect=now)
        self.changes.command = "undo"  # what `series undo` and `series log` look for
        path = journal.config_file(self.repo, target)
        edits = target.config_edits()
        if path is not None and edits:
            self.config_path = path
            now_text = fs.read_text(path)
            self._seen_text, self._seen = now_text, None
            if now_text == target.config_after:
                self.edits = [Edit((), now_text, target.config_before)]
            else:
                self.edits = [e.reversed() for e in reversed(edits)]
        self.changes.undoes = target.id
        for change in reversed(target.file_changes()):
            where = journal.resolve_path(self.repo, change.path, change.worktree)
            if where is None:
                continue  # its worktree is gone: nothing of it to put back
            content = where.read_bytes() if where.is_file() else None
            if content == change.before:
                continue  # never changed (an operation killed before its files did)
            if content != change.after:
                raise SeriesError(
                    f"cannot undo {target.id}: {where} changed since it {'wrote' if change.after is not None else 'removed'} "
                    "it; move that file aside (or put back what the operation left) and run 'series undo' again"
                )
            self.changes.file(where, change.before, before=content)

    # -- commit ------------------------------------------------------------------------------

    def commit(self, fault: str | None = None) -> journal.Operation:
        from series.ops import changeset, fs
        from series.seriesfile import edit as seriesedit
        from series.git import checkouts

        if self.draft:
            raise AssertionError("a draft operation (--dry-run) is never committed")
        branches = {m.ref[len("refs/heads/") :] for m in self.moves if m.ref.startswith("refs/heads/")}
        found = checkouts.checkouts(self.repo, branches)
        for checkout in found:
            if checkouts.dirty(checkout):
                raise SeriesError(
                    f"{checkout.branch} is checked out in {checkout.path} with local changes; "
                    f"commit or stash them, then run 'series {self.command}' again "
                    "(nothing was changed)"
                )
        if self.edits and self.config_path is not None:
            before = fs.read_text(self.config_path)
            after = seriesedit.apply(before, self.config_path, self.edits)
            self.changes.write_config(self.config_path, before, after, self.edits)
        self.changes.extra["checkouts"] = [[str(c.path), c.branch] for c in found]
        op = self.changes.commit(fault)
        self.committed = op
        self.notes += changeset.settle_checkouts(self.repo, op)
        return op


NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def disk_error(exc: OSError) -> SeriesError:
    """A full disk or a permission problem is the user's to fix: exit 1, with the path."""
    where = exc.filename or "the repository"
    what = {
        errno.ENOSPC: "no space left on the device: free some and run the command again",
        errno.EDQUOT: "disk quota exceeded: free some space and run the command again",
        errno.EROFS: "read-only file system",
    }.get(exc.errno or 0, f"{exc.strerror}: check its permissions")
    return SeriesError(
        f"{where}: {what} (the next series command finishes or rolls back anything half-done; nothing is left locked)"
    )


@contextlib.contextmanager
def transaction(
    repo: pygit2.Repository,
    command: str,
    summary: str = "",
    *,
    config_path: Path | None = None,
    seen: str | None = None,
    resumes: str | None = None,
) -> Iterator[Transaction]:
    """The transaction (module docstring). `resumes`: the kind of halted operation this
    command goes on with (series.ops.halted.Halt.kind), which the halt guard lets through."""
    from series.ops import changeset, fs, halted

    try:
        with fs.Lock(repo, command):
            recovery = changeset.recover(repo)
            halt = halted.load_halt(repo)
            if halt is not None and halt.kind != resumes:
                raise SeriesError(halted.halted_message(halt, f"series {command}"))
            tx = Transaction(repo, command, summary, config_path, seen, recovery.notes)
            tx.finished = recovery.finished
            yield tx
    except OSError as exc:
        if exc.errno in NO_SPACE:
            raise disk_error(exc) from None
        raise


def undoable(repo: pygit2.Repository) -> journal.Operation:
    """The newest operation that is neither an undo, undone, rolled back, nor a record
    (journal.RECORD: a frozen prediction stays on record)."""
    from series.ops import journal

    ops = journal.operations(repo)
    undone = {op.undoes for op in ops if op.undoes}
    for op in reversed(ops):
        if op.command != "undo" and op.id not in undone and op.state == journal.OpState.DONE and not op.is_record():
            return op
    raise SeriesError("nothing to undo: 'series log' lists no operation that is not undone already")
