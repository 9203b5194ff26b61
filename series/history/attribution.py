"""Upstream's history as a maintainer reads it: which upstream commit (and PR) did what.

    attribute(repo, old, new, ours, path)  the upstream commits between old and new that
                                           changed `path`, the ones that changed the lines
                                           our version edits first ("culprits")
    path_commits(repo, old, new, paths)    every upstream commit old..new per path
    PathHistory(repo, old, new)            the same, kept: .of(paths), .commits()
    containing(repo, old, new, tree, paths) the upstream commits whose result is our
                                           version of those paths (merged, with evidence)
    pr_commit(repo, old, new, number)      upstream's squash commit "(#N)" in old..new
    behind(repo, base, tip)                how far `base` trails `tip` (commits, days)

vLLM squash-merges every PR as one commit "[Tag] title (#N)", so an upstream commit
names its PR. The region a topic edits is tracked forward through each upstream commit
that touches the file (a zero-context diff per commit, lines shifted past each hunk), so
"changed the lines we edit" means the lines as they were at that commit, not at the old
base: an upstream commit that only moved our lines down is not a culprit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import pygit2

from series.git.releases import trunk_commit
from series.git.upstream_commit import UpstreamCommit, pr_number, subject_of
from series import persisted
from series.persisted import Json

_SYMBOL = re.compile(rb"^\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")

Span = tuple[int, int]  # half-open line range [start, end), 1-based; empty = an insertion point


@dataclass(frozen=True)
class Culprit:
    """An upstream commit that changed a file our topic edits."""

    commit: UpstreamCommit
    path: str
    overlaps: bool  # it changed the lines our version edits (or deleted the file)
    symbol: str | None  # the def/class those lines sit in, when the file is Python
    deleted: bool = False  # it deleted (or moved) the file

    def sentence(self) -> str:
        """'upstream #61234 rewrote touch() in lru.py (a1b2c3d4e5f6, Ada, 2026-01-13): [KV] ...'"""
        c = self.commit
        verb = "deleted or moved" if self.deleted else "rewrote" if self.overlaps else "also changed"
        where = f"{self.symbol}() in " if self.symbol and self.overlaps else ""
        name = self.path.rsplit("/", 1)[-1]
        return f"upstream {c.label} {verb} {where}{name} ({c.sha[:12]}, {c.author}, {c.date}): {c.subject}"

    def to_json(self) -> dict[str, Json]:
        return {
            **self.commit.to_json(),
            "path": self.path,
            "overlaps": self.overlaps,
            "symbol": self.symbol,
            "deleted": self.deleted,
        }

    @classmethod
    def from_json(cls, data: Json) -> "Culprit":
        d = persisted.read_object(data, "culprit")
        return cls(
            UpstreamCommit.from_json(d, "culprit"),
            persisted.read_str(d, "path"),
            persisted.read_bool(d, "overlaps"),
            persisted.read_opt_str(d, "symbol"),
            persisted.read_bool(d, "deleted"),
        )


# -- walking upstream ---------------------------------------------------------------------


def upstream_commits(repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid) -> list[pygit2.Commit]:
    """old..new, oldest first (parents before children)."""
    walker = repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    walker.hide(old)
    return list(walker)


def _entry(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        return tree[path].id
    except KeyError:
        return None


def path_commits(
    repo: pygit2.Repository,
    old: pygit2.Oid,
    new: pygit2.Oid,
    paths: Iterable[str],
    commits: Sequence[pygit2.Commit] | None = None,
) -> dict[str, list[pygit2.Commit]]:
    """Per path, the commits of old..new (oldest first) that `git log old..new -- PATH` lists.

    git's default history simplification, per path: a commit that reads the path as one
    of its parents inside the range does is left out, and only that parent is followed
    (so a merge that took one side's version hides the other side's changes, as in git);
    a merge is listed when it differs from every parent in the range. Tree lookups are
    cached: each commit costs one per path.
    """
    wanted = list(dict.fromkeys(paths))
    span = list(commits) if commits is not None else upstream_commits(repo, old, new)
    if _linear(span, new):
        return _linear_path_commits(span, wanted)
    inside = {c.id for c in span}
    seen: dict[pygit2.Oid, dict[str, pygit2.Oid | None]] = {}

    def entry(commit: pygit2.Commit, path: str) -> pygit2.Oid | None:
        cached = seen.setdefault(commit.id, {})
        if path not in cached:
            cached[path] = _entry(commit.tree, path)
        return cached[path]

    found: dict[str, list[pygit2.Commit]] = {}
    for path in wanted:
        shown: set[pygit2.Oid] = set()
        visited: set[pygit2.Oid] = set()
        todo = [repo[new].peel(pygit2.Commit)] if new in inside else []
        while todo:
            commit = todo.pop()
            if commit.id in visited:
                continue
            visited.add(commit.id)
            mine = entry(commit, path)
            parents = commit.parents
            relevant = [p for p in parents if p.id in inside]
            same = next((p for p in relevant if entry(p, path) == mine), None)
            if same is not None:
                todo.append(same)  # TREESAME: follow that parent only, do not list
                continue
            if relevant or (mine is not None if not parents else any(entry(p, path) != mine for p in parents)):
                shown.add(commit.id)
            todo.extend(relevant)
        found[path] = [c for c in span if c.id in shown]
    return found


class PathHistory:
    """path_commits over one range, asked a few paths at a time (a rebase asks as its
    conflicts show up, its semantic check a file at a time): old..new is walked once, and
    each path's commits are found once, in one pass for the paths not asked before. A
    path's commits do not depend on which paths are asked with it."""

    def __init__(self, repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid):
        self.repo, self.old, self.new = repo, old, new
        self._span: list[pygit2.Commit] | None = None
        self._found: dict[str, list[pygit2.Commit]] = {}

    @classmethod
    def over(
        cls, repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid, kept: "PathHistory | None" = None
    ) -> "PathHistory":
        """`kept` when it is this range's, else a new one."""
        if kept is not None and (kept.old, kept.new) == (old, new):
            return kept
        return cls(repo, old, new)

    @property
    def walked(self) -> bool:
        return self._span is not None

    def commits(self) -> list[pygit2.Commit]:
        """old..new, oldest first (upstream_commits)."""
        if self._span is None:
            self._span = upstream_commits(self.repo, self.old, self.new)
        return self._span

    def of(self, paths: Iterable[str]) -> dict[str, list[pygit2.Commit]]:
        wanted = list(dict.fromkeys(paths))
        missing = [path for path in wanted if path not in self._found]
        if missing:
            self._found.update(path_commits(self.repo, self.old, self.new, missing, self.commits()))
        return {path: self._found[path] for path in wanted}


def _linear(span: Sequence[pygit2.Commit], new: pygit2.Oid) -> bool:
    """Is old..new one chain of single-parent commits, oldest first, ending at new (vLLM's
    squash-merged main)?"""
    if not span or span[-1].id != new or len(span[0].parent_ids) > 1:
        return False
    return all(c.parent_ids == [p.id] for p, c in zip(span, span[1:]))


def _linear_path_commits(span: Sequence[pygit2.Commit], wanted: list[str]) -> dict[str, list[pygit2.Commit]]:
    """path_commits on a chain: a commit is listed when it reads the path otherwise than
    its parent (a root commit: when it has the path), which is all git's simplification
    does without merges; one pass, one tree lookup per commit and path."""
    first = span[0]
    parent = first.parents[0].tree if first.parent_ids else None
    previous = {path: _entry(parent, path) if parent is not None else None for path in wanted}
    found: dict[str, list[pygit2.Commit]] = {path: [] for path in wanted}
    for commit in span:
        tree = commit.tree
        for path in wanted:
            mine = _entry(tree, path)
            if mine != previous[path]:
                found[path].append(commit)
                previous[path] = mine
    return found


# -- attribution ----------------------------------------------------------------------------


def _text(repo: pygit2.Repository, oid: pygit2.Oid | None) -> bytes:
    return repo[oid].peel(pygit2.Blob).data if oid is not None else b""


def _hunks(old: bytes, new: bytes) -> list[tuple[Span, Span]]:
    """(old span, new span) of each change, no context; an insertion is an empty span."""
    patch = pygit2.Patch.create_from(old, new, context_lines=0)
    out = []
    for h in patch.hunks:
        o = (h.old_start, h.old_start + h.old_lines) if h.old_lines else (h.old_start + 1, h.old_start + 1)
        n = (h.new_start, h.new_start + h.new_lines) if h.new_lines else (h.new_start + 1, h.new_start + 1)
        out.append((o, n))
    return out


def _touches(a: Span, b: Span) -> bool:
    """Overlapping or adjacent: git's merge conflicts on adjacent changes too."""
    return a[0] <= b[1] and b[0] <= a[1]


def _shift(x: int, hunks: list[tuple[Span, Span]], start: bool) -> int:
    """Where line boundary x of the old side lands on the new side."""
    delta = 0
    for (os, oe), (ns, ne) in hunks:
        if x < os or (x == os and start):
            break
        if x < oe:
            return ns if start else ne
        delta = ne - oe
    return x + delta


def _forward(region: list[Span], hunks: list[tuple[Span, Span]]) -> tuple[list[Span], list[Span]]:
    """The region on the new side, and the old-side spans of the hunks that touched it."""
    out, hit = [], []
    for span in region:
        a, b = _shift(span[0], hunks, True), _shift(span[1], hunks, False)
        for old, new in hunks:
            if _touches(span, old):
                hit.append(old)
                a, b = min(a, new[0]), max(b, new[1])
        out.append((a, max(a, b)))
    return out, hit


def _symbol(text: bytes, line: int) -> str | None:
    """The nearest def/class at or above `line` (1-based): what a Python reader calls the place."""
    lines = text.splitlines()
    for i in range(min(line, len(lines)) - 1, -1, -1):
        m = _SYMBOL.match(lines[i])
        if m:
            return m.group(1).decode("utf-8", "replace")
    return None


def region(repo: pygit2.Repository, base: pygit2.Tree, ours: pygit2.Tree, path: str) -> list[Span] | None:
    """The old-side spans our version of `path` changes against `base`; None when the file
    is new on our side (then every upstream change to it meets ours)."""
    before = _entry(base, path)
    if before is None:
        return None
    return [old for old, _ in _hunks(_text(repo, before), _text(repo, _entry(ours, path)))]


def attribute(
    repo: pygit2.Repository,
    old: pygit2.Oid,
    new: pygit2.Oid,
    ours: pygit2.Tree,
    path: str,
    history: Sequence[pygit2.Commit] | None = None,
    commits: Sequence[pygit2.Commit] | None = None,
) -> list[Culprit]:
    """The upstream commits old..new that changed `path`, most likely culprit first: those
    that changed the lines our version (`ours`) edits, oldest first (the first one is where
    the topic stopped applying), then the ones that changed the file elsewhere, newest first.
    `commits`: path_commits(...)[path] when the caller asked for several paths at once."""
    if commits is None:
        commits = path_commits(repo, old, new, [path], history)[path]
    spans = region(repo, repo[old].peel(pygit2.Commit).tree, ours, path)
    python = path.endswith(".py")
    hits: list[Culprit] = []
    others: list[Culprit] = []
    for commit in commits:
        parent = commit.parents[0].tree if commit.parents else None
        before = _entry(parent, path) if parent is not None else None
        after = _entry(commit.tree, path)
        info = UpstreamCommit.of(commit)
        if after is None:
            hits.append(Culprit(info, path, True, None, deleted=True))
            spans = None
            continue
        old_text, new_text = _text(repo, before), _text(repo, after)
        hunks = _hunks(old_text, new_text)
        if spans is None:  # ours is new: every change meets it
            line = hunks[0][0][0] if hunks else 1
            hits.append(Culprit(info, path, True, _symbol(old_text, line) if python else None))
            continue
        spans, touched = _forward(spans, hunks)
        if touched:
            symbol = _symbol(old_text, max(touched[0][0], 1)) if python else None
            hits.append(Culprit(info, path, True, symbol))
        else:
            others.append(Culprit(info, path, False, None))
    return hits + others[::-1]


# -- merged, with evidence ------------------------------------------------------------------


def containing(
    repo: pygit2.Repository,
    old: pygit2.Oid,
    new: pygit2.Oid,
    ours: pygit2.Tree,
    paths: Sequence[str],
    history: Sequence[pygit2.Commit] | None = None,
) -> list[UpstreamCommit]:
    """The upstream commits old..new after which a path reads as our version does, in
    order: the commits that landed what the topic carries. Empty when none matches exactly.
    `history`: upstream_commits(old, new) when the caller has it already."""
    by_path = path_commits(repo, old, new, paths, history)
    found: dict[str, UpstreamCommit] = {}
    for path in paths:
        want = _entry(ours, path)
        for commit in by_path[path]:
            if _entry(commit.tree, path) == want:
                found.setdefault(str(commit.id), UpstreamCommit.of(commit))
                break
    return list(found.values())


def pr_commit(repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid, number: int) -> UpstreamCommit | None:
    """Upstream's squash-merge of PR #number in old..new (its subject ends in '(#N)')."""
    walker = repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(old)
    for commit in walker:
        if pr_number(subject_of(commit)) == number:
            return UpstreamCommit.of(commit)
    return None


# -- how far behind -------------------------------------------------------------------------


@dataclass(frozen=True)
class Behind:
    commits: int  # commits in base..tip
    days: int  # tip's commit date minus base's, in whole days
    tip: str  # the sha of tip
    tip_name: str

    def sentence(self) -> str:
        if not self.commits:
            return f"up to date with {self.tip_name}"
        return f"{self.commits} commit{'s' if self.commits != 1 else ''} ({self.days} days) behind {self.tip_name}"

    def to_json(self) -> dict[str, Json]:
        return {"commits": self.commits, "days": self.days, "tip": self.tip, "tip_name": self.tip_name}

    @classmethod
    def from_json(cls, data: Json) -> "Behind":
        d = persisted.read_object(data, "behind")
        return cls(
            persisted.read_int(d, "commits"),
            persisted.read_int(d, "days"),
            persisted.read_str(d, "tip"),
            persisted.read_str(d, "tip_name"),
        )


def behind(
    repo: pygit2.Repository,
    base: pygit2.Commit,
    tip: pygit2.Commit,
    tip_name: str,
    commits: Sequence[pygit2.Commit] | None = None,
) -> Behind:
    """`commits`: base..tip when the caller walked it already (counted, not walked again)."""
    if commits is None:
        walker = repo.walk(tip.id, pygit2.enums.SortMode.NONE)
        walker.hide(base.id)
        count = sum(1 for _ in walker)
    else:
        count = len(commits)
    days = max(0, (tip.commit_time - base.commit_time) // 86400) if count else 0
    return Behind(count, days, str(tip.id), tip_name)


def behind_main(
    repo: pygit2.Repository,
    remote: str,
    base: pygit2.Commit,
    walked: tuple[pygit2.Oid, pygit2.Oid, Sequence[pygit2.Commit]] | None = None,
) -> Behind | None:
    """How far `base` trails <remote>/main (or master); None when neither is fetched.
    `walked`: (old, new, upstream_commits(old, new)) the caller has, used when it is base..main."""
    found = trunk_commit(repo, remote)
    if found is None:
        return None
    tip, name = found
    known = walked[2] if walked is not None and (walked[0], walked[1]) == (base.id, tip.id) else None
    return behind(repo, base, tip, name, known)
