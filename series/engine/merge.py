"""The one merge: three trees in, git's merge-ort answer out.

    merge_trees(store, base, ours, theirs) -> TreeMerge

Every replayed commit (base = its parent's tree, ours = the new head's, theirs = its own)
and every topic merged into the integration branch goes through here. git is the
reference, so there are exactly two ways to an answer:

- The fast path, taken only where it is provably merge-ort's answer: every path the
  commit changes is unchanged on our side (same mode and id as in the base), so the result
  is our tree with the commit's entries written in. What could make merge-ort do anything
  else is ruled out first: a rename needs a deletion on one side of a path the other side
  changed (our side changed none of the commit's paths); a directory rename on our side
  needs a directory of the base that our side removed and that the commit adds into
  (refused below); one on the commit's side needs a directory the commit empties that our
  side added into (refused unless our side left that directory untouched). A path where
  a file meets a directory is left to git too.
- Everything else is asked of git: `git merge-tree --write-tree` (merge-ort in memory, no
  checkout), long-lived `--stdin` processes (with two cores, the merges known ahead
  go to processes apart from the ones needed now, see Mergers), the user's own git and merge
  config (rename limits, directory renames, conflict style). git 2.39 has no
  `--merge-base`, so each merge is two tiny commits with a shared parentless parent
  carrying the base tree; with one merge base, merge-ort merges exactly those three trees.
  Where the replay would wait for git's answer, it runs the work handed in for such waits
  (MemOdb.when_waiting: the verb's look at topics already replayed) until the answer can
  be read; that work changes no merge.

The result tree of a conflicted merge holds git's conflicted files (markers and all); the
conflicted paths come with their index stages and git's conflict kinds.
"""

from __future__ import annotations

import atexit
import os
import re
import select
import subprocess
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, NoReturn, TypeVar

import pygit2

from series.engine.odb import TREE, Entry, MemOdb, PathConflict
from series.errors import SeriesError
from series.git.command import clean_env, git

# The version this design needs: `merge-tree --write-tree --stdin` (merge-ort in memory,
# many merges in one process).
GIT_NEEDED = (2, 39)

_IDENT = b"series <series@localhost> 0 +0000"


@dataclass(frozen=True)
class PathStages:
    """One conflicted path as git leaves it in the index: stage -> (mode, id)."""

    path: str
    stages: dict[int, Entry]
    kind: str  # git's conflict type, e.g. "contents", "rename/delete"
    message: str = ""  # git's own sentence about it


@dataclass(frozen=True)
class TreeMerge:
    tree: pygit2.Oid  # the merged tree (git's conflicted files where unclean)
    conflicts: tuple[PathStages, ...] = ()
    fast: bool = False  # answered without git (provably the same answer)
    labels: tuple[str, str, str] | tuple[()] = ()  # git's marker labels: base, ours, theirs

    @property
    def clean(self) -> bool:
        return not self.conflicts


# -- the fast path --------------------------------------------------------------------


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def fast_updates(
    store: MemOdb, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid
) -> dict[str, Entry | None] | None:
    """The commit's entries to write over `ours`, when that is provably merge-ort's whole
    answer (see the module docstring); None when git must decide."""
    updates: dict[str, Entry | None] = {}
    emptied: set[str] = set()
    for path, old, new in store.changed(base, theirs):
        if store.lookup(ours, path) != old:
            return None  # our side changed it too (or moved it): a real merge
        if old is None:  # an addition: no directory on its way may have vanished on our side
            for parent in _parents(path):
                here = store.lookup(base, parent)
                if here is not None and (here[0] != TREE or _kind(store, ours, parent) != TREE):
                    return None
        if new is None:
            emptied.update(p for p in _parents(path) if _kind(store, theirs, p) != TREE)
        updates[path] = new
    for folder in emptied:  # the commit removed this directory: ours must not have added to it
        if store.lookup(ours, folder) != store.lookup(base, folder):
            return None
    return updates


def _kind(store: MemOdb, tree: pygit2.Oid, path: str) -> int | None:
    found = store.lookup(tree, path)
    return None if found is None else found[0]


# -- git's answer ---------------------------------------------------------------------


def git_version() -> tuple[int, ...]:
    out = git(Path.cwd(), "version").stdout
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(x) for x in found.groups(default="0")) if found else (0,)


_checked: list[tuple[int, ...]] = []


def require_git() -> None:
    """Refuse, in one line, a git older than this design needs (asked once per process)."""
    if not _checked:
        _checked.append(git_version())
    version = _checked[0]
    if version[:2] < GIT_NEEDED:
        raise SeriesError(
            f"git {'.'.join(map(str, version))} is too old: series replays with "
            f"'git merge-tree --write-tree --stdin' (git {GIT_NEEDED[0]}.{GIT_NEEDED[1]} "
            "or newer)",
            "install a newer git",
        )


Triple = tuple[pygit2.Oid, pygit2.Oid, pygit2.Oid]  # base, ours, theirs
K = TypeVar("K")


class Merger:
    """A `git merge-tree --write-tree --stdin` process over the store's scratch objects.
    Merges are sent ahead (`submit`) and answered in the order sent (`answer`)."""

    def __init__(self, store: MemOdb):
        require_git()
        self.store = store
        scratch = store.scratch_dir()
        env = clean_env(
            {
                "GIT_OBJECT_DIRECTORY": str(scratch),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(
                    [str(store.objects_dir()), str(store.inputs_dir())]
                ),
            }
        )
        self._proc = subprocess.Popen(
            ["git", "merge-tree", "--write-tree", "--stdin", "-z", "--messages"],
            cwd=store.repo.path,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # Reaped before the scratch directory it reads is removed (atexit runs handlers
        # last-registered first; the directory's was registered above): no git left
        # running over removed objects, and its CPU counts as this process's child's.
        atexit.register(self._reap)
        self._buffer = b""
        self._roots: dict[pygit2.Oid, pygit2.Oid] = {}
        self._sentinel: pygit2.Oid | None = None
        self.pending: deque[tuple[Triple, tuple[str, str, str]]] = deque()  # sent, not yet read

    def _reap(self) -> None:
        if self._proc.poll() is not None:
            return
        if self.pending:
            # answers nobody asked for (a topic found merged before its replay): git may
            # be blocked writing them, and its writes go to the scratch directory only
            self._proc.kill()
        else:
            try:
                if self._proc.stdin is not None:
                    self._proc.stdin.close()  # end of input: git exits
                self._proc.wait(timeout=10)
                return
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
        self._proc.wait()

    def _commit(self, tree: pygit2.Oid, parents: list[pygit2.Oid]) -> pygit2.Oid:
        return self.store.commit(tree, parents, _IDENT, _IDENT, b"series merge input\n")

    def submit(self, triple: Triple) -> None:
        base, ours, theirs = triple
        root = self._roots.get(base)
        if root is None:
            root = self._roots[base] = self._commit(base, [])
        if self._sentinel is None:
            self._sentinel = root
        left, right = self._commit(ours, [root]), self._commit(theirs, [root])
        self.store.flush([left, right])
        # git 2.39 flushes a merge's output but not the NUL that ends it: a merge of a
        # commit with itself after each real one marks where the real answer ends.
        line = f"{left} {right}\n{self._sentinel} {self._sentinel}\n".encode()
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(line)
            self._proc.stdin.flush()
        except BrokenPipeError:
            self._stopped()
        self.pending.append((triple, (str(root), str(left), str(right))))

    def answer(self) -> tuple[Triple, TreeMerge]:
        """The answer to the oldest merge sent and not yet read."""
        triple, labels = self.pending.popleft()
        try:
            result = self._read_merge()
            self._read_merge(sentinel=True)
        except EOFError:
            self._stopped()
        return triple, TreeMerge(result.tree, result.conflicts, labels=labels)

    def _stopped(self) -> NoReturn:
        err = self._proc.stderr.read().decode("utf-8", "replace").strip() if self._proc.stderr else ""
        raise SeriesError(f"git merge-tree stopped: {err.splitlines()[-1] if err else 'no output'}")

    # -z output of one merge: status, tree, staged conflict entries, "", then messages
    # (count, paths, type, text), and a "" that git may only flush with the next merge.
    def _field(self) -> bytes:
        stdout: IO[bytes] = self._proc.stdout  # type: ignore[assignment]
        # read from the pipe itself, never through its buffered reader, so that "nothing
        # to read" (select) is the truth
        fd = stdout.fileno()
        while b"\0" not in self._buffer:
            self._meanwhile(fd)
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        field, _, self._buffer = self._buffer.partition(b"\0")
        return field

    def _meanwhile(self, fd: int) -> None:
        """While git has nothing for us yet, the work handed in for such a wait
        (MemOdb.when_waiting), a task at a time."""
        tasks = self.store.meanwhile
        while tasks and not select.select([fd], [], [], 0)[0]:
            task = tasks.popleft()
            try:
                task()
            except Exception:  # noqa: BLE001 - its caller does it again at the end, and fails there
                pass

    def _read_merge(self, sentinel: bool = False) -> TreeMerge:
        status = self._field()
        while status == b"":  # the previous merge's end marker
            status = self._field()
        tree = pygit2.Oid(hex=self._field().decode())
        staged: dict[str, dict[int, Entry]] = {}
        while (entry := self._field()) != b"":
            info, _, raw_path = entry.partition(b"\t")
            mode, oid, stage = info.split(b" ")
            path = raw_path.decode("utf-8", "surrogateescape")
            staged.setdefault(path, {})[int(stage)] = (int(mode, 8), pygit2.Oid(hex=oid.decode()))
        if sentinel:
            return TreeMerge(tree)  # a merge of a commit with itself: nothing more follows
        kinds: dict[str, tuple[str, str]] = {}
        while True:
            count = self._field()
            if count == b"":
                break
            paths = [self._field().decode("utf-8", "surrogateescape") for _ in range(int(count))]
            kind = self._field().decode("utf-8", "replace")
            text = self._field().decode("utf-8", "replace").rstrip("\n")
            if kind.startswith("CONFLICT"):
                short = kind[len("CONFLICT") :].strip().strip("()")
                for path in paths:
                    kinds.setdefault(path, (short, text))
        conflicts = tuple(
            PathStages(path, stages, *kinds.get(path, ("contents", ""))) for path, stages in sorted(staged.items())
        )
        if not conflicts and status == b"0":
            # unclean with nothing staged (e.g. a file in the way): report git's paths
            conflicts = tuple(PathStages(path, {}, kind, text) for path, (kind, text) in sorted(kinds.items()))
        return TreeMerge(tree, conflicts)


class Mergers:
    """git's merges for one run. Merges of different topics do not depend on each other:
    those known ahead (each topic's first merge git must answer) are sent at once to
    merge-tree processes of their own, so git works on them while the replay goes on;
    the merges the replay needs now (a topic's later commits, each onto the one before)
    go to another process, never behind that queue. A merge where git looks for a
    rename (the commit changes a file our side no longer has: merge-ort compares it with
    every file our side added) can take a hundred times longer than another, so those
    sent ahead go to processes of their own (at most two), not in front of the quick
    ones. With one core, one process does all. Each process answers in the order it was
    asked."""

    _AHEAD = 64  # merges sent to one process but unread: far below what a pipe holds
    _SLOW_LANES = 2

    def __init__(self, store: MemOdb):
        self.store = store
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self._parallel = cores > 1
        self._now: Merger | None = None
        self._ahead: Merger | None = None
        self._slow: list[Merger] = []
        self._sent: dict[Triple, Merger] = {}
        self._answers: dict[Triple, TreeMerge] = {}

    def _now_process(self) -> Merger:
        if self._now is None:
            self._now = Merger(self.store)
        return self._now

    def _process_for(self, slow: bool) -> Merger:
        """Where a merge sent ahead goes; each process starts when first needed."""
        if not self._parallel:
            return self._now_process()
        if not slow:
            if self._ahead is None:
                self._ahead = Merger(self.store)
            return self._ahead
        idle = [proc for proc in self._slow if not proc.pending]
        if idle:
            return idle[0]
        if len(self._slow) < self._SLOW_LANES:
            self._slow.append(Merger(self.store))
            return self._slow[-1]
        return min(self._slow, key=lambda proc: len(proc.pending))

    def submit(self, triple: Triple, slow: bool = False) -> None:
        """Send a merge ahead of its need (`slow`: git will look for a rename)."""
        if triple in self._sent or triple in self._answers:
            return
        proc = self._process_for(slow)
        if len(proc.pending) >= self._AHEAD:
            self._read_one(proc)
        proc.submit(triple)
        self._sent[triple] = proc

    def _read_one(self, proc: Merger) -> None:
        triple, result = proc.answer()
        self._sent.pop(triple, None)
        self._answers[triple] = result

    def knows(self, triple: Triple) -> bool:
        """Sent ahead, or answered already (by git, or in memory by `prefetch`)."""
        return triple in self._sent or triple in self._answers

    def keep(self, triple: Triple, answer: TreeMerge) -> None:
        self._answers[triple] = answer

    def merge(self, triple: Triple) -> TreeMerge:
        if triple not in self._answers:  # an answer at hand starts no process
            proc = self._sent.get(triple)
            if proc is None:
                proc = self._now_process()
                proc.submit(triple)
                self._sent[triple] = proc
            while triple not in self._answers:
                self._read_one(proc)
        return self._answers.pop(triple)


def _mergers(store: MemOdb) -> Mergers:
    """The store's git mergers, started on first use."""
    if not isinstance(store.merger, Mergers):
        store.merger = Mergers(store)
    return store.merger


def _in_memory(store: MemOdb, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> TreeMerge | None:
    """merge-ort's answer where it is provably the fast path's; None when git must decide."""
    if ours == base:
        return TreeMerge(theirs, fast=True)
    if theirs == base or theirs == ours:
        return TreeMerge(ours, fast=True)
    updates = fast_updates(store, base, ours, theirs)
    if updates is not None:
        try:
            tree = store.edit(ours, updates)
        except PathConflict:
            return None  # a file where a directory goes: git's file/directory rules decide
        return TreeMerge(tree if tree is not None else store.tree({}), fast=True)
    return None


def merge_trees(store: MemOdb, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> TreeMerge:
    """merge-ort's answer for the three trees: the fast path where provably the same,
    git itself everywhere else."""
    triple = (base, ours, theirs)
    if isinstance(store.merger, Mergers) and store.merger.knows(triple):
        return store.merger.merge(triple)  # prefetch decided it already
    return _in_memory(store, *triple) or _mergers(store).merge(triple)


def _looks_for_renames(store: MemOdb, base: pygit2.Oid, ours: pygit2.Oid, theirs: pygit2.Oid) -> bool:
    """Does the commit change a path our side no longer has? Then merge-ort looks for
    where our side moved it, against every file our side added: a slow merge."""
    return any(old is not None and store.lookup(ours, path) is None for path, old, _ in store.changed(base, theirs))


Chain = tuple[pygit2.Oid, Sequence[tuple[pygit2.Oid, pygit2.Oid]]]  # ours, then (base, theirs) per commit


def prefetch(store: MemOdb, chains: Mapping[K, Chain]) -> list[K]:
    """Work out now what can be known before the replay: for each chain (a topic's
    commits onto the new base: ours for the first, then each commit's parent tree and
    own tree), the answers in memory one after another, up to the first merge git must
    answer, which is sent to git at once (see Mergers). The chains go a commit at a time,
    all first commits first, so git starts early on the merges that wait for it. A later
    merge_trees of any of them reads the answer. One never asked for costs only git's
    time. A single merge for git is left to be asked for: a process of its own would
    cost more than it saves. The chains whose next merge went to git are returned, in
    the order their answers can be expected: the slow ones last."""
    mergers = _mergers(store)
    first: tuple[K, Triple] | None = None  # sent once a second one shows up
    sent: dict[K, bool] = {}  # -> slow
    ours = {key: chain[0] for key, chain in chains.items()}  # where each chain has got to
    depth = 0
    while ours:
        for key in list(ours):
            commits = chains[key][1]
            if depth >= len(commits):
                del ours[key]
                continue
            base, theirs = commits[depth]
            triple = (base, ours[key], theirs)
            answer = _in_memory(store, *triple)
            if answer is not None:
                mergers.keep(triple, answer)
                ours[key] = answer.tree
                continue
            del ours[key]
            if first is None:
                first = (key, triple)
                continue
            for k, t in (first, (key, triple)):
                if k not in sent:
                    sent[k] = _looks_for_renames(store, *t)
                    mergers.submit(t, slow=sent[k])
        depth += 1
    return sorted(sent, key=sent.__getitem__)
