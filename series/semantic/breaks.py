"""What a clean replay broke: upstream names a topic's code uses that the new base removed or
changed, and names the merge left undefined, each with the upstream commit (and PR) that
did it. Git cannot see these; nothing here imports the code it reads.

    check(repo, old_base, new_base, topics, read)  -> {topic: [Break]}
    TopicBreaks(repo, old_base, new_base, read)    the same, a topic at a time (.topic, .check)

Per topic only its own changed Python files are read, at three points: the old base's
version (`start`), the topic's (`old_head`) and the rebased one (`new_head`). A use counts
as the topic's when the topic's version has it and the base's does not (keyed by what is
used, not by line), and it is checked in the rebased file against the two upstream
trees (series.semantic.upstream_api): a name that resolved in the old base and does not
in the new one, a keyword the old signature took and the new one does not, a method
override whose base signature changed under it, a module-level helper of the same file
that upstream deleted, a member of an upstream class (`self.x` in a subclass too) that no
class of its new chain of bases has (series.semantic.members), a `torch.ops._C.x` the new
csrc no longer registers (series.semantic.custom_ops), an entry point of the topic's
pyproject.toml / setup.py / setup.cfg naming what is gone (series.semantic.entry_points).
A name gone from its module that the culprit defined elsewhere is "moved to" that module
(series.semantic.moved). Only names that existed upstream before are judged, so code that
only adds new names reports nothing. The culprit is the newest upstream commit old..new
touching the defining file after which the name (or parameter) is gone
(series.history.attribution: its "(#N)", author, date).
"""

from __future__ import annotations

import difflib
import enum
import posixpath
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import pygit2

from series import persisted
from series.semantic import entry_points, file_reading, hunk_uses
from series.history.attribution import PathHistory
from series.git.upstream_commit import UpstreamCommit
from series.semantic.custom_ops import OpRegistry, registers
from series.semantic.members import owner
from series.semantic.moved import moved_to
from series.semantic.module_api import Function, module_name
from series.semantic.upstream_api import Found, UpstreamTree
from series.git.repo import changed_paths
from series.semantic.uses import BUILTINS, REGISTRY_ENTRY, Use, UseKind

ENTRY_POINT = "entry-point"  # a NAME's `extra` when a pyproject/setup entry point names it
Read = Callable[[str, str], "bytes | None"]  # (commit sha, path) -> the file there, None: absent


class BreakKind(str, enum.Enum):
    REMOVED = "removed"
    RENAMED = "renamed"
    MOVED = "moved"
    SIGNATURE = "signature-changed"
    UNDEFINED = "undefined"


@dataclass(frozen=True)
class Break:
    file: str
    line: int
    name: str
    kind: BreakKind
    detail: str
    upstream: UpstreamCommit | None
    fix: str

    def to_json(self) -> dict[str, persisted.Json]:
        up = self.upstream
        return {
            "file": self.file,
            "line": self.line,
            "name": self.name,
            "kind": self.kind.value,
            "detail": self.detail,
            "fix": self.fix,
            "upstream": None
            if up is None
            else {"commit": up.sha, "subject": up.subject, "pr": up.pr, "author": up.author, "date": up.date},
        }

    @classmethod
    def from_json(cls, value: persisted.Json) -> "Break":
        """A break read back from a rebase report (a ValueError names the field that is wrong)."""
        d = persisted.read_object(value, "break")
        up = d.get("upstream")
        commit = None
        if up is not None:
            u = persisted.read_object(up, "upstream")
            pr = u.get("pr")
            if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool)):
                raise ValueError("'pr' is not a number")
            commit = UpstreamCommit(
                persisted.read_str(u, "commit"),
                persisted.read_str(u, "subject"),
                pr,
                persisted.read_str(u, "author"),
                persisted.read_str(u, "date"),
            )
        return cls(
            persisted.read_str(d, "file"),
            persisted.read_int(d, "line"),
            persisted.read_str(d, "name"),
            persisted.read_enum(BreakKind, d, "kind"),
            persisted.read_str(d, "detail"),
            commit,
            persisted.read_str(d, "fix"),
        )

    def sentence(self) -> str:
        """The one line every report gives a break (rebase text, status, check)."""
        return f"break {self.file}:{self.line} {self.name}: {self.why()}"

    def why(self) -> str:
        """What happened, by which upstream commit, and the fix (report.md's wording too)."""
        up, by = self.upstream, ""
        if up is not None:
            by = f" by {up.label} {up.sha[:12]} {up.subject} ({up.author}, {up.date})"
        return f"{self.detail}{by}; fix: {self.fix}"


@dataclass(frozen=True)
class TopicSpan:
    name: str
    start: str  # the old commit its own commits sit on
    old_head: str
    new_head: str  # rebased
    new_start: str | None = None  # what it was rebased onto (read for `resolved` files)
    resolved: frozenset[str] = frozenset()  # paths whose conflict a resolution decided


class BreakChecker:
    """Judges a topic's uses against an old and a new upstream tree (the module docstring)."""

    fast_path = True  # _file may read only the uses near the topic's hunks (see there)

    def __init__(self, repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid, history: PathHistory):
        self.repo, self.old_id, self.new_id = repo, old, new
        self.old, self.new = UpstreamTree(repo, old), UpstreamTree(repo, new)
        self.old_ops, self.new_ops = OpRegistry(repo, self.old.tree), OpRegistry(repo, self.new.tree)
        self._history = history

    def culprit(self, path: str, present: Callable[[UpstreamTree], bool]) -> pygit2.Commit | None:
        """The newest commit old..new touching `path` after which `present` stops holding."""
        commits = self._history.of([path])[path]
        for commit in reversed(commits):
            if (
                commit.parents
                and present(UpstreamTree(self.repo, commit.parents[0].id))
                and not present(UpstreamTree(self.repo, commit.id))
            ):
                return commit
        return commits[-1] if commits else None

    def label(self, commit: pygit2.Commit | None) -> str:
        return UpstreamCommit.of(commit).label if commit is not None else "the new base"

    # -- one use ----------------------------------------------------------------------
    def judge(self, use: Use, file: str) -> Break | None:
        """The break of an upstream use (a name, a keyword, an override), None if it holds."""
        if use.kind == UseKind.NAME and use.target.startswith("torch.ops._"):
            return self.custom_op(use, file)
        if use.kind in (UseKind.NAME, UseKind.QUALNAME):
            return self.name(use, file)
        if use.kind == UseKind.KEYWORD:
            return self.keyword(use, file)
        return self.override(use, file) if use.kind == UseKind.OVERRIDE else None

    def name(self, use: Use, file: str) -> Break | None:
        was = self.old.find(use.target)
        if was is None or (use.kind == UseKind.QUALNAME and was.module):
            return None  # a string naming only a module may be a logger's name, not an import
        now = self.new.find(use.target)
        if now is not None:
            return self.member(use, file, was, now)
        commit = self.culprit(was.path, lambda t: t.find(use.target) is not None)
        moved = moved_to(self.repo, commit, was, self.new)
        if moved is not None:
            return self._break(
                use,
                file,
                BreakKind.MOVED,
                f"moved to {moved}",
                commit,
                f"{_move_fix(use, was, moved)} (moved in {self.label(commit)})",
            )
        if was.module:
            return self._break(
                use,
                file,
                BreakKind.REMOVED,
                f"module {was.path} removed",
                commit,
                f"import it from where {self.label(commit)} moved it",
            )
        renamed = self._renamed(was, commit)
        if renamed:
            return self._break(
                use,
                file,
                BreakKind.RENAMED,
                f"renamed to {renamed} in {was.path}",
                commit,
                f"renamed to {renamed} in {self.label(commit)}",
            )
        return self._break(
            use,
            file,
            BreakKind.REMOVED,
            f"removed from {was.path}",
            commit,
            f"removed in {self.label(commit)}: use what it put in its place",
        )

    def custom_op(self, use: Use, file: str) -> Break | None:
        """`torch.ops._C.foo`: an op the old base's csrc registered and the new one's does not
        (series.semantic.custom_ops)."""
        parts = use.target.split(".")
        if len(parts) < 4:
            return None
        op = parts[3]
        was = self.old_ops.where(op)
        if was is None or self.new_ops.where(op) is not None:
            return None
        commit = self.culprit(was, lambda t: registers(self.repo, t.tree, was, op))
        return self._break(
            use,
            file,
            BreakKind.REMOVED,
            f"custom op {op} no longer registered (was in {was})",
            commit,
            f"removed in {self.label(commit)}: call what replaced it",
            name=".".join(parts[:4]),
        )

    def member(self, use: Use, file: str, was: Found, now: Found) -> Break | None:
        """A field or method of an upstream class (a config's) that its class no longer has:
        the old class or a base of it defined it, and neither the new class nor any of its
        bases does, each of them read whole (series.semantic.members)."""
        member = was.asked
        if was.cls is None or member is None or now.cls is None or now.member is not None or member.startswith("__"):
            return None
        had = owner(self.old, was, member)
        if not had or owner(self.new, now, member) is not False or had.cls is None:
            return None
        # the commit that took it out of the class that had it (that file, not the topic's base's)
        target = f"{module_name(had.path)[0]}.{had.name}.{member}"
        commit = self.culprit(had.path, lambda t: (f := t.find(target)) is not None and f.member is not None)
        same = (had.path, had.name) == (now.path, now.name)  # else a subclass's names are no rename
        added = (
            sorted((now.cls.fields | set(now.cls.methods)) - (had.cls.fields | set(had.cls.methods))) if same else []
        )
        close = difflib.get_close_matches(member, added, n=1, cutoff=0.8)
        where = f"{had.cls.name} in {had.path}"
        if close:
            return self._break(
                use,
                file,
                BreakKind.RENAMED,
                f"{member} renamed to {close[0]} in {where}",
                commit,
                f"renamed to {close[0]} in {self.label(commit)}",
            )
        return self._break(
            use,
            file,
            BreakKind.REMOVED,
            f"{member} removed from {where}",
            commit,
            f"removed in {self.label(commit)}: use what it put in its place",
        )

    def _renamed(self, was: Found, commit: pygit2.Commit | None) -> str | None:
        """A name the culprit added to the same module, close to the removed one."""
        if commit is None or not commit.parents:
            return None
        before = UpstreamTree(self.repo, commit.parents[0].id).api_at(was.path)
        after = UpstreamTree(self.repo, commit.id).api_at(was.path)
        if before is None or after is None:
            return None
        added = sorted(after.names - before.names)
        if was.function is not None:
            same = [n for n in added if (f := after.functions.get(n)) and f.params == was.function.params]
            if len(same) == 1:
                return same[0]
        close = difflib.get_close_matches(was.name, added, n=1, cutoff=0.8)
        return close[0] if close else None

    def keyword(self, use: Use, file: str) -> Break | None:
        was, now = callable_of(self.old.find(use.target)), callable_of(self.new.find(use.target))
        if (
            was is None
            or now is None
            or use.extra not in was[1].params
            or now[1].flexible
            or use.extra in now[1].params
        ):
            return None
        path = now[0]
        commit = self.culprit(path, lambda t: _accepts(t.find(use.target), use.extra))
        added = [p for p in now[1].params if p not in was[1].params]
        close = difflib.get_close_matches(use.extra, added, n=1, cutoff=0.0 if len(added) == 1 else 0.6)
        if close:
            return self._break(
                use,
                file,
                BreakKind.SIGNATURE,
                f"parameter {use.extra} renamed to {close[0]}",
                commit,
                f"pass {close[0]}= instead (renamed in {self.label(commit)})",
                name=f"{use.target}({use.extra}=)",
            )
        return self._break(
            use,
            file,
            BreakKind.SIGNATURE,
            f"parameter {use.extra} removed",
            commit,
            f"drop {use.extra}= (removed in {self.label(commit)})",
            name=f"{use.target}({use.extra}=)",
        )

    def override(self, use: Use, file: str) -> Break | None:
        was, now = self.old.find(use.target), self.new.find(use.target)
        if was is None or was.cls is None or now is None or now.cls is None or use.method is None:
            return None
        old_m, new_m = was.cls.methods.get(use.extra), now.cls.methods.get(use.extra)
        if old_m is None or (new_m is not None and new_m.params == old_m.params):
            return None
        if new_m is not None and use.method.params == new_m.params:
            return None  # the topic already follows the new signature
        name = f"{use.target}.{use.extra}"
        commit = self.culprit(now.path, lambda t: _method(t.find(use.target), use.extra) == old_m.params)
        if new_m is None:
            return self._break(
                use,
                file,
                BreakKind.REMOVED,
                "overrides a method upstream removed",
                commit,
                f"removed in {self.label(commit)}: the override is never called",
                name=name,
            )
        sig = f"({', '.join(old_m.params)}) -> ({', '.join(new_m.params)})"
        return self._break(
            use,
            file,
            BreakKind.SIGNATURE,
            f"signature changed {sig}",
            commit,
            f"override with ({', '.join(new_m.params)}) as in {self.label(commit)}",
            name=name,
        )

    def local(self, use: Use, file: str, rebased_names: set[str], imported: bool = False) -> Break | None:
        """A name of the file itself the topic reads, that the merged file no longer binds:
        upstream deleted the helper, or (`imported`) removed the import the topic relied on."""
        if use.target in rebased_names or use.target in BUILTINS:
            return None
        was = self.old.api_at(file)
        if was is None or use.target not in was.names:
            return None
        commit = self.culprit(file, lambda t: (api := t.api_at(file)) is not None and use.target in api.names)
        if imported:
            return self._break(
                use,
                file,
                BreakKind.UNDEFINED,
                f"undefined: upstream removed its import from {file}",
                commit,
                f"import removed in {self.label(commit)}: import it again, from where it lives now",
            )
        return self._break(
            use,
            file,
            BreakKind.UNDEFINED,
            f"undefined: upstream deleted it from {file}",
            commit,
            f"deleted in {self.label(commit)}: bring it into the topic or use what replaced it",
        )

    def unbound(
        self,
        path: str,
        before: file_reading.FileReading | None,
        ours: file_reading.FileReading,
        after: file_reading.FileReading,
        names: set[str],
    ) -> list[Break]:
        """Names the file reads and no longer binds, beyond its uses (`_imports_gone`)."""
        return _imports_gone(self, path, before, ours, after, names)

    def _break(
        self,
        use: Use,
        file: str,
        kind: BreakKind,
        detail: str,
        commit: pygit2.Commit | None,
        fix: str,
        name: str | None = None,
    ) -> Break:
        return Break(
            file,
            use.line,
            name or use.target,
            kind,
            detail,
            UpstreamCommit.of(commit) if commit is not None else None,
            fix,
        )


def _move_fix(use: Use, was: Found, moved: str) -> str:
    """The likeliest edit: the registry entry, or the import, naming the new module."""
    if use.extra == REGISTRY_ENTRY:
        package = module_name(was.path)[1]
        module = moved[len(package) + 1 :] if moved.startswith(f"{package}.") else moved
        return f'register ("{module}", "{was.name}")'
    if use.extra == ENTRY_POINT:
        return f"point it at {moved}" if was.module else f"point it at {moved}:{was.name}"
    return f"import {moved}" if was.module else f"from {moved} import {was.name}"


def callable_of(found: Found | None) -> tuple[str, Function] | None:
    """The function a call reaches: the def, or a class's __init__ without self."""
    if found is None:
        return None
    if found.function is not None:
        return found.path, found.function
    init = found.cls.methods.get("__init__") if found.cls is not None and found.member is None else None
    if init is None:
        return None
    return found.path, Function(init.name, init.params[1:], init.flexible, init.line)


def _accepts(found: Found | None, keyword: str) -> bool:
    fn = callable_of(found)
    return fn is not None and (keyword in fn[1].params or fn[1].flexible)


def _method(found: Found | None, name: str) -> tuple[str, ...] | None:
    method = found.cls.methods.get(name) if found is not None and found.cls is not None else None
    return method.params if method is not None else None


def _changed(repo: pygit2.Repository, start: str, head: str) -> list[str]:
    # only the changed subtrees are read (a whole-tree diff of vLLM costs ~5 ms a topic)
    return sorted(
        c.path
        for c in changed_paths(repo, repo[start].peel(pygit2.Commit).tree, repo[head].peel(pygit2.Commit).tree)
        if c.new_id is not None
    )


class TopicBreaks:
    """check() a topic at a time, each topic's answer kept: what a rebase runs while git is
    still answering other topics' merges (the upstream lookups are shared, as in check())."""

    def __init__(
        self,
        repo: pygit2.Repository,
        old_base: str,
        new_base: str,
        read: Read,
        history: PathHistory | None = None,
        checker: BreakChecker | None = None,
    ):
        """`history`: upstream's old_base..new_base as the caller keeps it for other uses;
        `checker`: one that judges otherwise (series.semantic.base_breaks, with one base)."""
        self._given = checker
        self.repo, self.read = repo, read
        self.old, self.new = pygit2.Oid(hex=old_base), pygit2.Oid(hex=new_base)
        self.history = PathHistory.over(repo, self.old, self.new, history)
        self._checker: BreakChecker | None = None
        self._found: dict[TopicSpan, list[Break]] = {}

    def topic(self, topic: TopicSpan) -> list[Break]:
        if topic not in self._found:
            if self._checker is None:
                self._checker = self._make_checker()
            self._found[topic] = _topic_breaks(self._checker, self.repo, topic, self.read)
        return self._found[topic]

    def _make_checker(self) -> BreakChecker:
        return self._given or BreakChecker(self.repo, self.old, self.new, self.history)

    def check(self, topics: Sequence[TopicSpan]) -> dict[str, list[Break]]:
        return {topic.name: self.topic(topic) for topic in topics}


def check(
    repo: pygit2.Repository, old_base: str, new_base: str, topics: Sequence[TopicSpan], read: Read
) -> dict[str, list[Break]]:
    """The breaks of each topic's rebased code (module docstring)."""
    return TopicBreaks(repo, old_base, new_base, read).check(topics)


def _topic_breaks(checker: BreakChecker, repo: pygit2.Repository, topic: TopicSpan, read: Read) -> list[Break]:
    found: list[Break] = []
    for path in _changed(repo, topic.start, topic.old_head):
        judged = [
            j
            for j, reads in (
                (_file, path.endswith(".py")),  # setup.py is both
                (_entry_points, posixpath.basename(path) in entry_points.FILES),
            )
            if reads
        ]
        if judged:  # the three versions read only for a file the check reads
            versions = read(topic.start, path), read(topic.old_head, path), read(topic.new_head, path)
            for judge in judged:
                if judge is _file and path in topic.resolved and topic.new_start is not None:
                    found += _file(checker, path, *versions, landed=read(topic.new_start, path))
                else:
                    found += judge(checker, path, *versions)
    return found


def _file(
    checker: BreakChecker,
    path: str,
    base: bytes | None,
    mine: bytes | None,
    rebased: bytes | None,
    landed: bytes | None | bool = False,
) -> list[Break]:
    """`landed`: for a file whose conflict a resolution decided, the new base's version
    (None: it has none): what the resolution brings in that upstream's file does not have
    is the topic's too, as an import of a name upstream removed, kept by the resolution
    (issue 33). False: a clean merge, whose every line is upstream's or the topic's."""
    if not mine or not rebased:
        return []
    if base is not None and landed is False and checker.fast_path:
        # only the uses near the topic's own hunks can be its (series.semantic.hunk_uses);
        # upstream left the file alone: it lost nothing it binds; upstream changed it too:
        # _merged_may_break. The full reading below only when one of those may break
        near = hunk_uses.near_changes(path, base, mine)
        if (
            near is not None
            and not any(checker.judge(use, path) for use in near)
            and (rebased == mine or not _merged_may_break(checker, path, near, rebased))
        ):
            return []
    ours = file_reading.read(path, mine)
    after = ours if rebased == mine or ours is None else file_reading.read(path, rebased, ours.top)
    if ours is None or after is None:
        return []
    before = file_reading.read(path, base) if base else None
    theirs = {u.key for u in before.uses} if before is not None else set()
    introduced = {u.key for u in ours.uses} - theirs
    if landed is not False:
        upstream = file_reading.read(path, landed) if isinstance(landed, bytes) else None
        if upstream is not None or landed is None:  # unreadable upstream: nothing to tell apart
            introduced |= {u.key for u in after.uses} - {u.key for u in (upstream.uses if upstream else ())}
    names = set(after.bound | after.top)
    seen: set[tuple[UseKind, str, str]] = set()
    out: list[Break] = []
    for use in after.uses:
        if use.key not in introduced or use.key in seen:
            continue
        seen.add(use.key)
        found = checker.local(use, path, names) if use.kind == UseKind.LOCAL else checker.judge(use, path)
        if found is not None:
            out.append(found)
    out += checker.unbound(path, before, ours, after, names)
    # a module gone takes its attributes along: one break for the import, not one per use
    gone = tuple(f"{b.name}." for b in out if (f := checker.old.find(b.name)) is not None and f.module)
    return [b for b in out if not b.name.startswith(gone)] if gone else out


_ANY_SIGNATURE = Function("", ("\0",), False, 0)  # a topic's override matching no signature


def _merged_may_break(checker: BreakChecker, path: str, near: Sequence[Use], rebased: bytes) -> bool:
    """Whether the merged file can hold a break the uses near the topic's hunks (none of
    them broken) do not show, so that the full reading must decide (issue 34). A break of
    the full reading is a use of the merged file whose key the topic introduced, and near
    holds every such key (tests/test_hunk_uses.py); judging depends on the key alone, but
    an override's on the topic's def, which upstream's side of the merge may have changed:
    judged here against no signature (the case that breaks most). A LOCAL use, or an
    import upstream removed, breaks only on a name the merged file reads and binds nowhere
    that the old base's file defined (BreakChecker.local)."""
    if any(checker.judge(replace(use, method=_ANY_SIGNATURE), path) for use in near if use.kind == UseKind.OVERRIDE):
        return True
    unbound = file_reading.read_unbound(rebased)
    if unbound is None:
        return True
    was = checker.old.api_at(path) if unbound else None  # the old file's API: a parse, when asked
    return was is not None and bool(unbound & was.names)


def _entry_points(
    checker: BreakChecker, path: str, base: bytes | None, mine: bytes | None, rebased: bytes | None
) -> list[Break]:
    """The `module:attr` entry points the topic declares that the new base no longer has."""
    if not mine or not rebased:
        return []
    introduced = entry_points.targets(path, mine).keys() - entry_points.targets(path, base or b"").keys()
    out = []
    for target, line in sorted(entry_points.targets(path, rebased).items()):
        found = checker.name(Use(UseKind.NAME, target, ENTRY_POINT, line), path) if target in introduced else None
        if found is not None:
            out.append(replace(found, detail=f"entry point target {found.detail}"))
    return out


def _imports_gone(
    checker: BreakChecker,
    path: str,
    before: file_reading.FileReading | None,
    ours: file_reading.FileReading,
    after: file_reading.FileReading,
    names: set[str],
) -> list[Break]:
    """Names the topic's version imports and reads more often than the base's did, that the
    merged file reads but no longer binds: upstream's side of the merge removed the import."""
    was, now, mine = before.loads if before is not None else {}, after.loads, ours.loads
    out = []
    for name in sorted(ours.imported - names):
        if now.get(name) and mine.get(name, 0) > was.get(name, 0):
            found = checker.local(Use(UseKind.LOCAL, name, line=after.first_line[name]), path, names, imported=True)
            if found is not None:
                out.append(found)
    return out
