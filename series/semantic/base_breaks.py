"""Breaks as a property of the branches against their base: what `series status`, `series
check` and a rebase onto the base it is already on (series.verbs.rebase.semantic) report,
in any clone, whatever rebase ran last.

A break needs an upstream version in which the topic's use held (series.semantic.breaks
judges only names that existed upstream): with one base there is none to compare with, so
upstream's history says. Each use the topic's own diff introduces is first judged against
the base tree alone (cheap, and what most uses pass); only one that does not hold there is
looked for back in the base's history: the parent of each upstream commit touching the
files it names, newest first, is the old base the two-tree check (BreakChecker) is asked
with. The first that holds the use gives the break and its culprit; none within
HISTORY_DEPTH commits means the topic's own name, a compiled module (vllm._C), or a
name from outside: no break. So a break stays until the branch is fixed, and a clone made
with `series import` sees the same ones. Which commits touch those files is kept on disk
per (base, files) (series.semantic.blob_cache), so a warm `status` runs no git at all.

    BaseChecker(repo, base)        a BreakChecker whose old base is found per use
    topic_breaks(repo, old, new, read)   breaks.TopicBreaks, with a BaseChecker when old == new
    of_branches(ws)                {topic: [Break]} of each active topic's branch as it is now
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import pygit2

from series.semantic import blob_cache, breaks, file_reading
from series.history.attribution import PathHistory
from series.semantic.members import owner
from series.semantic.uses import BUILTINS, Use, UseKind
from series.git.command import git
from series.git.repo import workdir

if TYPE_CHECKING:
    from series.workspace import Workspace

HISTORY_DEPTH = 200  # upstream commits per use's files searched back from the base


class BaseChecker(breaks.BreakChecker):
    """A BreakChecker with the base as its new tree and, per use that does not hold there,
    the old base found in upstream's history (module docstring)."""

    fast_path = False  # the near-hunk shortcut assumes an old base whose file upstream left alone

    def __init__(self, repo: pygit2.Repository, base: pygit2.Oid):
        super().__init__(repo, base, base, PathHistory(repo, base, base))
        self._before: dict[pygit2.Oid, breaks.BreakChecker] = {}

    def judge(self, use: Use, file: str) -> breaks.Break | None:
        paths = self._unheld(use)
        if not paths:
            return None
        return self._first(paths, lambda c: c.judge(use, file))

    def local(self, use: Use, file: str, rebased_names: set[str], imported: bool = False) -> breaks.Break | None:
        if use.target in rebased_names or use.target in BUILTINS:
            return None
        return self._first([file], lambda c: c.local(use, file, rebased_names, _imported(c, file, use.target)))

    def unbound(
        self,
        path: str,
        before: file_reading.FileReading | None,
        ours: file_reading.FileReading,
        after: file_reading.FileReading,
        names: set[str],
    ) -> list[breaks.Break]:
        """Bare names the topic's version reads more often than the base's and binds nowhere:
        a helper upstream deleted from the file, or its import (found in the file's history)."""
        was, now = before.loads if before is not None else {}, after.loads
        out = []
        for name in sorted(set(now) - names - BUILTINS):
            if now[name] > was.get(name, 0):
                found = self.local(Use(UseKind.LOCAL, name, line=after.first_line[name]), path, names)
                if found is not None:
                    out.append(found)
        return out

    def _unheld(self, use: Use) -> list[str]:
        """The upstream files to search back in when `use` does not hold on the base; [] when it
        holds (or is of a kind one base cannot judge: a custom op's registration)."""
        if use.kind == UseKind.NAME and use.target.startswith("torch.ops._"):
            return []
        now = self.new.find(use.target)
        if use.kind in (UseKind.NAME, UseKind.QUALNAME):
            if now is None:
                return _module_files(use.target) if self.new.module(use.target.split(".")[0]) else []
            asked = now.asked
            if (
                now.cls is not None
                and asked
                and now.member is None
                and not asked.startswith("__")
                and owner(self.new, now, asked) is False
            ):
                return [now.path]
            return []
        if use.kind == UseKind.KEYWORD:
            fn = breaks.callable_of(now)
            return [fn[0]] if fn is not None and not fn[1].flexible and use.extra not in fn[1].params else []
        if use.kind == UseKind.OVERRIDE and now is not None and now.cls is not None and use.method is not None:
            method = now.cls.methods.get(use.extra)
            return [now.path] if method is None or method.params != use.method.params else []
        return []

    def _first(
        self, paths: list[str], ask: Callable[[breaks.BreakChecker], breaks.Break | None]
    ) -> breaks.Break | None:
        for old in self._olds(paths):
            found = ask(self._checker(old))
            if found is not None:
                return found
        return None

    def _checker(self, old: pygit2.Oid) -> breaks.BreakChecker:
        if old not in self._before:
            self._before[old] = breaks.BreakChecker(
                self.repo, old, self.new_id, PathHistory(self.repo, old, self.new_id)
            )
        return self._before[old]

    def _olds(self, paths: list[str]) -> list[pygit2.Oid]:
        """The first parent of each base-history commit touching `paths`, newest first."""
        base = str(self.new_id)
        key = ("touching", base, str(HISTORY_DEPTH), *sorted(paths))
        return [pygit2.Oid(hex=p) for p in blob_cache.cached(key, lambda: _parents(self.repo, base, paths), _shas)]


def _parents(repo: pygit2.Repository, base: str, paths: list[str]) -> list[str]:
    out = git(workdir(repo), "log", f"-n{HISTORY_DEPTH}", "--format=%P", base, "--", *paths).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _shas(raw: object) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(s, str) and len(s) == 40 for s in raw):
        raise ValueError("not a list of commits")
    return raw


def _module_files(dotted: str) -> list[str]:
    """The files any module prefix of `dotted` was defined in (a name, or a module, gone)."""
    parts = dotted.split(".")
    return [
        f for i in range(1, len(parts) + 1) for f in ("/".join(parts[:i]) + ".py", "/".join(parts[:i]) + "/__init__.py")
    ]


def _imported(checker: breaks.BreakChecker, file: str, name: str) -> bool:
    """Did the file bind `name` by an import in that old version (its import went, not a def)?"""
    api = checker.old.api_at(file)
    return api is not None and name in api.reexports


def of_branches(ws: "Workspace") -> dict[str, list[breaks.Break]]:
    """Each active topic's breaks, its branch as it is now against upstream.base (only the
    topics with some): its own diff over what it sits on, judged on the base tree."""
    base = str(ws.base_commit().id)
    spans = []
    for topic in ws.series.active():
        own = ws.own(topic)
        if own is None or not own.commits:
            continue
        head = str(own.head.id)
        spans.append(breaks.TopicSpan(topic.name, str(own.start.id), head, head))
    found = topic_breaks(ws.repo, base, base, repo_reader(ws.repo)).check(spans)
    return {k: v for k, v in found.items() if v}


def topic_breaks(
    repo: pygit2.Repository, old_base: str, new_base: str, read: breaks.Read, history: PathHistory | None = None
) -> breaks.TopicBreaks:
    """breaks.TopicBreaks, with a BaseChecker when the two bases are one (a rebase onto the
    base it is on, status, check): else that check would find nothing by construction."""
    one = BaseChecker(repo, pygit2.Oid(hex=new_base)) if old_base == new_base else None
    return breaks.TopicBreaks(repo, old_base, new_base, read, history, one)


def repo_reader(repo: pygit2.Repository) -> breaks.Read:
    def read(commit: str, path: str) -> bytes | None:
        try:
            entry = repo[commit].peel(pygit2.Commit).tree[path]
        except KeyError:
            return None
        return entry.data if isinstance(entry, pygit2.Blob) else None

    return read
