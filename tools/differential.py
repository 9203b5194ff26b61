#!/usr/bin/env python3
"""`series rebase` against `git rebase`, topic by topic, on real vLLM code.

    python tools/differential.py [--upstream /tmp/bench/upstream4] [--pairs v0.30.0:v0.31.0,v0.31.0:v0.32.0]
                                 [--topics 160] [--seed 1] [--work DIR] [--json FILE]

For each release pair A:B, a fork of the upstream repository gets --topics topic branches
over A, built deterministically (--seed) from what upstream really changed between A and
B, in every class where a rebase tool can go wrong: edits to files upstream modified
(random lines, so some far from upstream's hunks, some next to them, some on them),
edits on repeated lines (where the diff algorithm decides), backports of a real later
hunk and of a whole later file, edits to files upstream renamed or deleted, the topic
deleting or renaming those, renaming files upstream modified, additions inside
directories upstream moved wholesale, add/add, file/directory, modes, symlinks, type
changes, binaries, CRLF and whitespace, empty commits, multi-commit topics, and plain
edits upstream did not touch.

Then every topic is rebased twice: by `series rebase --onto B` (the real CLI: a dry run
for the outcomes, then a real run that moves every topic it can), and by
`git rebase --onto B A <copy>` (merge-ort, git's defaults, the same committer identity
and date). Compared per topic: outcome, the commit git stops at and its conflicted paths,
the final tree, and each commit's tree, author, message and committer.

    silent    series says clean where git conflicts, or both clean with different trees
    boundary  series conflicts where git is clean, or both conflict differently
    history   same final tree, different commits (kept/dropped, ids, metadata)

Prints `differential: N topics, S silent, B boundary, H history differences` (the target is
0 / 0 / 0) and, with --json, every difference with its class and details.
The upstream repository with the releases: ../shared/bench/vllm_upstream.py builds it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

ROOT = Path(__file__).resolve().parent.parent
IDENTITY = {
    "GIT_AUTHOR_NAME": "Fork Dev",
    "GIT_AUTHOR_EMAIL": "dev@fork.example",
    "GIT_COMMITTER_NAME": "Fork Maintainer",
    "GIT_COMMITTER_EMAIL": "fork@example.com",
    "GIT_COMMITTER_DATE": "1767225600 +0000",
    "GIT_CONFIG_NOSYSTEM": "1",
}

Change = dict[str, "tuple[int, bytes] | None"]  # path -> (mode, content) or None: delete


@dataclass
class Spec:
    name: str
    kind: str
    commits: list[tuple[str, Change]] = field(default_factory=list)  # (message, changes)


# -- what upstream changed between the two releases ---------------------------------------


@dataclass
class UpstreamChange:
    files: dict[str, tuple[int, pygit2.Oid]]  # every blob of A
    modified: list[str]
    renamed: list[tuple[str, str]]
    deleted: list[str]
    added: list[str]
    moved_dirs: list[tuple[str, str]]  # directories gone in B, most files moved


def _git(
    repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    full = dict(os.environ, **IDENTITY, **(env or {}))
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=full, check=check, input=input)


def _blobs(tree: pygit2.Tree, prefix: str = "") -> dict[str, tuple[int, pygit2.Oid]]:
    out = {}
    for entry in tree:
        path = prefix + entry.name
        if entry.filemode == pygit2.enums.FileMode.TREE:
            out.update(_blobs(entry.peel(pygit2.Tree), path + "/"))
        elif entry.filemode != pygit2.enums.FileMode.COMMIT:
            out[path] = (int(entry.filemode), entry.id)
    return out


def upstream_change(repo: pygit2.Repository, path: Path, a: str, b: str) -> UpstreamChange:
    files = _blobs(repo.revparse_single(a).peel(pygit2.Tree))
    raw = _git(path, "diff", "-M", "--name-status", "-z", a, b).stdout.decode("utf-8", "surrogateescape")
    fields = raw.split("\0")
    modified, renamed, deleted, added = [], [], [], []
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status.startswith("R"):
            renamed.append((fields[i + 1], fields[i + 2]))
            i += 3
            continue
        target = {"M": modified, "D": deleted, "A": added}.get(status[:1])
        if target is not None:
            target.append(fields[i + 1])
        i += 2
    b_tree = repo.revparse_single(b).peel(pygit2.Tree)
    moves: dict[tuple[str, str], int] = {}
    for old, new in renamed:
        pair = (os.path.dirname(old), os.path.dirname(new))
        if pair[0] and pair[0] != pair[1]:
            moves[pair] = moves.get(pair, 0) + 1
    moved = []
    for (old_dir, new_dir), count in sorted(moves.items()):
        try:
            b_tree[old_dir]
        except KeyError:
            if count >= 2:
                moved.append((old_dir, new_dir))
    return UpstreamChange(files, sorted(modified), sorted(renamed), sorted(deleted), sorted(added), moved)


# -- topics ---------------------------------------------------------------------------


class Builder:
    """Makes topic specs from an UpstreamChange, deterministically from a seed."""

    def __init__(self, repo: pygit2.Repository, up: UpstreamChange, a: str, b: str, seed: int):
        self.repo, self.up, self.rng = repo, up, random.Random(seed)
        self.a_tree = repo.revparse_single(a).peel(pygit2.Tree)
        self.b_tree = repo.revparse_single(b).peel(pygit2.Tree)
        touched = set(up.modified) | set(up.deleted) | {o for o, _ in up.renamed}
        self.text = lambda p: p in up.files and up.files[p][0] == 0o100644 and self._is_text(p)
        self.untouched = [p for p in up.files if p not in touched and p.endswith(".py")]
        self.modified_py = [
            p for p in up.modified if p.endswith((".py", ".md", ".txt", ".yaml", ".sh")) and self.text(p)
        ]
        self.binaries = [p for p in up.files if not self._is_text(p)]

    def _is_text(self, path: str) -> bool:
        data = self.data(path)
        return data is not None and b"\0" not in data[:8000] and len(data) < 400_000

    def data(self, path: str, tree: pygit2.Tree | None = None) -> bytes | None:
        try:
            obj = (tree or self.a_tree)[path]
        except KeyError:
            return None
        return obj.peel(pygit2.Blob).data if obj.type == pygit2.enums.ObjectType.BLOB else None

    def pick(self, items: list) -> object:  # type: ignore[type-arg]
        return items[self.rng.randrange(len(items))]

    # edits of one file's lines ---------------------------------------------------------
    def edit_lines(self, data: bytes, count: int, repeated: bool = False) -> bytes:
        lines = data.split(b"\n")
        candidates = list(range(len(lines)))
        if repeated:
            seen: dict[bytes, int] = {}
            for line in lines:
                if line.strip():
                    seen[line] = seen.get(line, 0) + 1
            candidates = [i for i, line in enumerate(lines) if seen.get(line, 0) > 1] or candidates
        for _ in range(count):
            i = candidates[self.rng.randrange(len(candidates))]
            how = self.rng.randrange(3)
            if how == 0:
                lines[i] = lines[i] + b"  # fork"
            elif how == 1:
                lines.insert(i, b"# fork: added line %d" % self.rng.randrange(1000))
            elif len(lines) > 3:
                del lines[i]
                candidates = [c for c in candidates if c < len(lines)] or [0]
        return b"\n".join(lines)

    def backport_hunk(self, path: str) -> bytes | None:
        old, new = self.data(path), self.data(path, self.b_tree)
        if old is None or new is None:
            return None
        a, b = old.split(b"\n"), new.split(b"\n")
        ops = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
        if not ops:
            return None
        tag, i1, i2, j1, j2 = ops[self.rng.randrange(len(ops))]
        return b"\n".join(a[:i1] + b[j1:j2] + a[i2:])

    # the classes --------------------------------------------------------------------------
    def make(self, kind: str) -> list[tuple[str, Change]] | None:
        up, rng = self.up, self.rng
        f = getattr(self, "k_" + kind.replace("-", "_"))
        return f(up, rng)  # type: ignore[no-any-return]

    def k_edit_modified(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not self.modified_py:
            return None
        path = str(self.pick(self.modified_py))
        return [
            (
                "edit a file upstream changed",
                {path: (0o100644, self.edit_lines(self.data(path) or b"", rng.randint(1, 4)))},
            )
        ]

    def k_repetitive(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not self.modified_py:
            return None
        path = str(self.pick(self.modified_py))
        return [
            (
                "edit repeated lines",
                {path: (0o100644, self.edit_lines(self.data(path) or b"", rng.randint(1, 3), True))},
            )
        ]

    def k_backport_hunk(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        for _ in range(5):
            if not self.modified_py:
                return None
            path = str(self.pick(self.modified_py))
            data = self.backport_hunk(path)
            if data is not None:
                commits: list[tuple[str, Change]] = [("backport a later upstream hunk", {path: (0o100644, data)})]
                if rng.random() < 0.5:
                    commits.append(("and edit around it", {path: (0o100644, self.edit_lines(data, 1))}))
                return commits
        return None

    def k_backport_file(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not self.modified_py:
            return None
        path = str(self.pick(self.modified_py))
        commits: list[tuple[str, Change]] = [
            ("backport a whole later file", {path: (0o100644, self.data(path, self.b_tree) or b"")})
        ]
        if self.untouched and rng.random() < 0.5:
            other = str(self.pick(self.untouched))
            commits.append(("and a fork change", {other: (0o100644, self.edit_lines(self.data(other) or b"", 1))}))
        return commits

    def k_edit_renamed(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        pairs = [p for p in up.renamed if self.text(p[0])]
        if not pairs:
            return None
        old, _ = self.pick(pairs)  # type: ignore[misc]
        return [
            ("edit a file upstream moved", {old: (0o100644, self.edit_lines(self.data(old) or b"", rng.randint(1, 3)))})
        ]

    def k_edit_deleted(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        paths = [p for p in up.deleted if self.text(p)]
        if not paths:
            return None
        path = str(self.pick(paths))
        return [("edit a file upstream deleted", {path: (0o100644, self.edit_lines(self.data(path) or b"", 1))})]

    def k_delete_renamed(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not up.renamed:
            return None
        old, _ = self.pick(up.renamed)  # type: ignore[misc]
        return [("delete a file upstream moved", {old: None})]

    def k_rename_renamed(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not up.renamed:
            return None
        old, _ = self.pick(up.renamed)  # type: ignore[misc]
        entry = up.files[old]
        target = os.path.join(os.path.dirname(old), "fork_" + os.path.basename(old))
        return [("move a file upstream moved elsewhere", {old: None, target: (entry[0], self.data(old) or b"")})]

    def k_rename_deleted(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not up.deleted:
            return None
        path = str(self.pick(up.deleted))
        target = os.path.join(os.path.dirname(path), "fork_" + os.path.basename(path))
        return [("move a file upstream deleted", {path: None, target: (up.files[path][0], self.data(path) or b"")})]

    def k_rename_modified(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not self.modified_py:
            return None
        path = str(self.pick(self.modified_py))
        data = self.data(path) or b""
        if rng.random() < 0.5:
            data = self.edit_lines(data, 1)
        target = os.path.join(os.path.dirname(path), "fork_" + os.path.basename(path))
        return [("move a file upstream changed", {path: None, target: (0o100644, data)})]

    def k_add_in_moved_dir(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not up.moved_dirs:
            return None
        old_dir, _ = self.pick(up.moved_dirs)  # type: ignore[misc]
        name = f"fork_added_{rng.randrange(1000)}.py"
        return [("add a file in a directory upstream moved", {f"{old_dir}/{name}": (0o100644, b"# fork\nVALUE = 1\n")})]

    def k_add_new(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        folder = (
            os.path.dirname(str(self.pick(self.untouched))) if rng.random() < 0.5 else f"vllm/fork_{rng.randrange(100)}"
        )
        return [
            (
                "add a new file",
                {f"{folder}/fork_new_{rng.randrange(1000)}.py": (0o100644, b"def fork():\n    return 1\n")},
            )
        ]

    def k_delete(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        pool = self.modified_py if rng.random() < 0.5 else self.untouched
        return [("delete a file", {str(self.pick(pool)): None})] if pool else None

    def k_mode(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        pool = self.modified_py if rng.random() < 0.5 else self.untouched
        path = str(self.pick(pool))
        data = self.data(path) or b""
        if rng.random() < 0.5:
            data = self.edit_lines(data, 1)
        return [("make a file executable", {path: (0o100755, data)})]

    def k_symlink(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        how = rng.randrange(3)
        if how == 0:
            return [("add a symlink", {f"vllm/fork_link_{rng.randrange(1000)}.py": (0o120000, b"../setup.py")})]
        pool = self.untouched if how == 1 else self.modified_py
        path = str(self.pick(pool))
        return [("turn a file into a symlink", {path: (0o120000, os.path.basename(path).encode() + b".orig")})]

    def k_binary(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        blob = bytes(rng.randrange(256) for _ in range(64)) + b"\0"
        if self.binaries and rng.random() < 0.5:
            path = str(self.pick(self.binaries))
            return [("change a binary file", {path: (up.files[path][0], (self.data(path) or b"") + blob)})]
        return [("add a binary file", {f"docs/assets/fork_{rng.randrange(1000)}.bin": (0o100644, blob)})]

    def k_crlf(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        pool = self.modified_py if rng.random() < 0.5 else self.untouched
        path = str(self.pick(pool))
        data = (self.data(path) or b"").replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        return [("CRLF line endings", {path: (0o100644, data)})]

    def k_whitespace(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not self.modified_py:
            return None
        path = str(self.pick(self.modified_py))
        lines = (self.data(path) or b"").split(b"\n")
        for _ in range(rng.randint(1, 5)):
            i = rng.randrange(len(lines))
            lines[i] = lines[i] + b" \t"
        return [("trailing whitespace", {path: (0o100644, b"\n".join(lines))})]

    def k_add_add(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        texts = [p for p in up.added if self.data(p, self.b_tree) is not None]
        if not texts:
            return None
        path = str(self.pick(texts))
        theirs = self.data(path, self.b_tree) or b""
        how = rng.randrange(3)
        data = theirs if how == 0 else self.edit_lines(theirs, 1) if how == 1 else b"# the fork's own version\n"
        return [("add a file upstream also added", {path: (0o100644, data)})]

    def k_file_dir(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        new_dirs = sorted({os.path.dirname(p) for p in up.added} - {os.path.dirname(p) for p in up.files})
        new_dirs = [d for d in new_dirs if d and self.data(d) is None]
        if new_dirs and rng.random() < 0.6:
            return [("add a file where upstream added a directory", {str(self.pick(new_dirs)): (0o100644, b"fork\n")})]
        if not up.added:
            return None
        path = str(self.pick(up.added))
        return [("add a directory where upstream added a file", {f"{path}/fork.py": (0o100644, b"fork = 1\n")})]

    def k_empty(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        commits: list[tuple[str, Change]] = [("an empty commit (a marker)", {})]
        if rng.random() < 0.7 and self.untouched:
            path = str(self.pick(self.untouched))
            commits.append(("a fork change", {path: (0o100644, self.edit_lines(self.data(path) or b"", 1))}))
        if rng.random() < 0.5:
            commits.append(("another empty commit", {}))
        return commits

    def k_untouched(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        path = str(self.pick(self.untouched))
        return [("edit a file upstream left alone", {path: (0o100644, self.edit_lines(self.data(path) or b"", 2))})]

    def k_multi(self, up: UpstreamChange, rng: random.Random) -> list[tuple[str, Change]] | None:
        if not self.modified_py:
            return None
        path = str(self.pick(self.modified_py))
        first = self.edit_lines(self.data(path) or b"", 2)
        second = self.edit_lines(first, 2)
        commits: list[tuple[str, Change]] = [
            ("first change", {path: (0o100644, first)}),
            ("second change to the same file", {path: (0o100644, second)}),
        ]
        extra = self.make(str(self.pick(["untouched", "edit-renamed", "add-new", "rename-modified"])))
        return commits + (extra or [])


KINDS = [
    "edit-modified",
    "repetitive",
    "backport-hunk",
    "backport-file",
    "edit-renamed",
    "edit-deleted",
    "delete-renamed",
    "rename-renamed",
    "rename-deleted",
    "rename-modified",
    "add-in-moved-dir",
    "add-new",
    "delete",
    "mode",
    "symlink",
    "binary",
    "crlf",
    "whitespace",
    "add-add",
    "file-dir",
    "empty",
    "untouched",
    "multi",
]
# where git and a naive replay part ways most often: weighted up
WEIGHTS = {"edit-modified": 4, "repetitive": 3, "backport-hunk": 3, "edit-renamed": 2, "multi": 2}


def build_specs(builder: Builder, count: int) -> list[Spec]:
    kinds = [k for k in KINDS for _ in range(WEIGHTS.get(k, 1))]
    specs: list[Spec] = []
    attempts = 0
    while len(specs) < count and attempts < count * 20:
        attempts += 1
        kind = kinds[len(specs) % len(kinds)] if attempts <= count else str(builder.pick(kinds))
        commits = builder.make(kind)
        if commits:
            specs.append(Spec(f"d{len(specs):04d}-{kind}", kind, commits))
    return specs


def write_topics(repo: pygit2.Repository, base: str, specs: list[Spec]) -> None:
    base_commit = repo.revparse_single(base).peel(pygit2.Commit)
    for n, spec in enumerate(specs):
        head = base_commit
        for i, (message, changes) in enumerate(spec.commits):
            index = pygit2.Index()
            index.read_tree(head.tree)
            for path, value in changes.items():
                if value is None:
                    if path in index:
                        index.remove(path)
                    continue
                for existing in [e.path for e in index if e.path.startswith(path + "/")]:
                    index.remove(existing)  # a directory becomes a file
                for parent in _prefixes(path):
                    if parent in index:
                        index.remove(parent)  # a file becomes a directory
                index.add(pygit2.IndexEntry(path, repo.create_blob(value[1]), value[0]))
            tree = index.write_tree(repo)
            when = 1767000000 + n * 60 + i
            author = pygit2.Signature("Fork Dev", "dev@fork.example", when, 60)
            committer = pygit2.Signature("Fork Dev", "dev@fork.example", when, 60)
            oid = repo.create_commit(
                None, author, committer, f"[fork] {spec.kind}: {message}\n\nTopic {spec.name}.\n", tree, [head.id]
            )
            head = repo[oid].peel(pygit2.Commit)
        repo.references.create(f"refs/heads/topic/{spec.name}", head.id, force=True)
        repo.references.create(f"refs/heads/gitcopy/{spec.name}", head.id, force=True)


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


# -- the two rebases --------------------------------------------------------------------


@dataclass
class Result:
    outcome: str  # clean / conflict / empty
    head: str | None = None
    stopped: str | None = None  # the commit it stopped at
    paths: tuple[str, ...] = ()


def git_rebase(fork: Path, worktree: Path, name: str, a: str, b: str) -> Result:
    proc = _git(worktree, "rebase", "--onto", b, a, f"gitcopy/{name}", check=False)
    if proc.returncode != 0:
        stopped = _git(worktree, "rev-parse", "-q", "--verify", "REBASE_HEAD", check=False).stdout.decode().strip()
        unmerged = _git(worktree, "diff", "--name-only", "--diff-filter=U", "-z").stdout.decode(
            "utf-8", "surrogateescape"
        )
        _git(worktree, "rebase", "--abort", check=False)
        if not stopped:
            raise SystemExit(f"git rebase of {name} failed without stopping:\n{proc.stderr.decode()}")
        return Result("conflict", stopped=stopped, paths=tuple(sorted(p for p in unmerged.split("\0") if p)))
    head = _git(worktree, "rev-parse", f"gitcopy/{name}").stdout.decode().strip()
    b_sha = _git(worktree, "rev-parse", f"{b}^{{commit}}").stdout.decode().strip()
    return Result("empty" if head == b_sha else "clean", head=head)


def series_rebase(fork: Path, specs: list[Spec], b: str) -> tuple[dict[str, Result], float]:
    env = {"PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    dry = _git_free_series(fork, ["rebase", "--onto", b, "--dry-run", "--json"], env)
    report = json.loads(dry.stdout)
    results: dict[str, Result] = {}
    skip: list[str] = []
    for topic in report["topics"]:
        name = topic["name"]
        if topic["outcome"] == "conflict":
            c = topic["conflict"]
            results[name] = Result("conflict", stopped=c["commit"], paths=tuple(sorted(c["files"])))
            skip += ["--skip-topic", name]
    real = _git_free_series(fork, ["rebase", "--onto", b, "--json", *skip], env)
    elapsed = time.perf_counter() - t0
    for topic in json.loads(real.stdout)["topics"]:
        name = topic["name"]
        if name in results:
            continue
        if topic["outcome"] == "merged":
            results[name] = Result("empty")
        elif topic["outcome"] == "clean":
            results[name] = Result("clean", head=topic["new_head"])
        else:
            results[name] = Result(topic["outcome"])
    return results, elapsed


def _git_free_series(fork: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **IDENTITY, **env)
    proc = subprocess.run([sys.executable, "-m", "series", *args], cwd=fork, env=full, capture_output=True, text=True)
    if proc.returncode not in (0, 3):
        raise SystemExit(f"series {' '.join(args)}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def _commits(repo: pygit2.Repository, head: str, b: str) -> list[tuple[str, bytes, bytes, bytes]]:
    walker = repo.walk(pygit2.Oid(hex=head), pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    walker.hide(repo.revparse_single(b).peel(pygit2.Commit).id)
    out = []
    for c in walker:
        _, raw = repo.odb.read(c.id)
        header, _, message = raw.partition(b"\n\n")
        lines = {ln.split(b" ", 1)[0]: ln for ln in header.split(b"\n")}
        out.append((str(c.tree_id), lines.get(b"author", b""), lines.get(b"committer", b""), message))
    return out


_ABBREV = re.compile(r"~([0-9a-f]{7})[0-9a-f]* \(")


def _paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    """A file moved aside is named `path~<abbrev> (<subject>)`; git's abbreviation grows with
    the object count, which the git loop itself raises after series ran: compare 7 digits."""
    return tuple(_ABBREV.sub(r"~\1 (", p) for p in paths)


def compare(repo: pygit2.Repository, name: str, ours: Result, theirs: Result, b: str) -> tuple[str, str] | None:
    """(class, detail) of a difference, or None when series gave git's answer."""
    if ours.outcome == "conflict" or theirs.outcome == "conflict":
        if ours.outcome != "conflict":
            return "silent", f"series {ours.outcome}, git conflicts at {theirs.stopped} in {list(theirs.paths)}"
        if theirs.outcome != "conflict":
            return "boundary", f"series conflicts in {list(ours.paths)}, git is {theirs.outcome}"
        if (ours.stopped, _paths(ours.paths)) != (theirs.stopped, _paths(theirs.paths)):
            return (
                "boundary",
                f"series stops at {ours.stopped} {list(ours.paths)}, git at {theirs.stopped} {list(theirs.paths)}",
            )
        return None
    if ours.outcome == "empty" or theirs.outcome == "empty":
        if ours.outcome == theirs.outcome:
            return None
        head = ours.head or theirs.head
        assert head is not None
        b_tree = str(repo.revparse_single(b).peel(pygit2.Tree).id)
        tree = str(repo[pygit2.Oid(hex=head)].peel(pygit2.Tree).id)
        return ("history" if tree == b_tree else "silent"), f"series {ours.outcome}, git {theirs.outcome}"
    assert ours.head and theirs.head
    if ours.head == theirs.head:
        return None
    ours_c, theirs_c = _commits(repo, ours.head, b), _commits(repo, theirs.head, b)
    if ours_c and theirs_c and ours_c[-1][0] != theirs_c[-1][0]:
        return "silent", f"final trees differ: series {ours.head}, git {theirs.head}"
    for i, (x, y) in enumerate(zip(ours_c, theirs_c)):
        if x != y:
            what = ["tree", "author", "committer", "message"][next(j for j in range(4) if x[j] != y[j])]
            return "history", f"commit {i + 1}: {what} differs"
    return "history", f"{len(ours_c)} commits from series, {len(theirs_c)} from git"


# -- one release pair ---------------------------------------------------------------------


def run_pair(
    upstream: Path, a: str, b: str, count: int, seed: int, work: Path, log: bool = True
) -> tuple[list[dict[str, str]], int, float, float]:
    fork = work / f"fork-{a}"
    if fork.exists():
        shutil.rmtree(fork)
    subprocess.run(["git", "clone", "-q", "--no-checkout", "-o", "upstream", str(upstream), str(fork)], check=True)
    _git(fork, "config", "user.name", IDENTITY["GIT_COMMITTER_NAME"])
    _git(fork, "config", "user.email", IDENTITY["GIT_COMMITTER_EMAIL"])
    _git(fork, "checkout", "-q", "--detach", a)
    repo = pygit2.Repository(str(fork))
    builder = Builder(repo, upstream_change(repo, fork, a, b), a, b, seed)
    specs = build_specs(builder, count)
    write_topics(repo, a, specs)
    lines = ["upstream:", "  remote: upstream", f"  base: {a}", "topics:"]
    for spec in specs:
        lines += [f"  - name: {spec.name}", f"    branch: topic/{spec.name}"]
    (fork / "series.yaml").write_text("\n".join(lines) + "\n")
    ours, series_seconds = series_rebase(fork, specs, b)
    worktree = work / f"git-{a}"
    _git(fork, "worktree", "add", "-q", "--detach", str(worktree), a)
    t0 = time.perf_counter()
    theirs = {spec.name: git_rebase(fork, worktree, spec.name, a, b) for spec in specs}
    git_seconds = time.perf_counter() - t0
    differences = []
    for spec in specs:
        found = compare(repo, spec.name, ours[spec.name], theirs[spec.name], b)
        if found is not None:
            differences.append(
                {"pair": f"{a}..{b}", "topic": spec.name, "kind": spec.kind, "class": found[0], "detail": found[1]}
            )
            if log:
                print(f"  {found[0]:<8} {spec.name}: {found[1]}", file=sys.stderr)
    return differences, len(specs), series_seconds, git_seconds


def summary_line(total: int, differences: list[dict[str, str]]) -> str:
    counts = {k: sum(1 for d in differences if d["class"] == k) for k in ("silent", "boundary", "history")}
    return (
        f"differential: {total} topics, {counts['silent']} silent, {counts['boundary']} boundary, "
        f"{counts['history']} history differences"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", type=Path, default=Path("/tmp/bench/upstream4"))
    ap.add_argument("--pairs", default="v0.30.0:v0.31.0,v0.31.0:v0.32.0")
    ap.add_argument("--topics", type=int, default=160, help="topics per release pair")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not (args.upstream / ".git").exists() and not (args.upstream / "HEAD").exists():
        sys.exit(
            f"{args.upstream}: no upstream repository; build it with "
            "'python ../shared/bench/vllm_upstream.py /tmp/bench/upstream4 0.30.0 0.31.0 0.32.0'"
        )
    work = args.work or Path(tempfile.mkdtemp(prefix="series-differential-"))
    work.mkdir(parents=True, exist_ok=True)
    differences: list[dict[str, str]] = []
    total = 0
    for pair in args.pairs.split(","):
        a, b = pair.split(":")
        found, n, s_sec, g_sec = run_pair(args.upstream, a, b, args.topics, args.seed, work)
        differences += found
        total += n
        print(
            f"{a}..{b}: {n} topics, series rebase {s_sec:.1f} s (dry run + real run), git rebase loop {g_sec:.1f} s",
            file=sys.stderr,
        )
    if args.json:
        args.json.write_text(json.dumps({"topics": total, "differences": differences}, indent=2) + "\n")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    print(summary_line(total, differences))


if __name__ == "__main__":
    main()
