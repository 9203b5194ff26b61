"""The core: replay commits onto a new base in memory, merging only the paths they touch.

Public API (stable; adopt-upstream and the integration build use it):

    replay_commits(repo, commits, onto, *, committer=None, rewrite_message=None,
                   resolver=None, topic="", odb=None) -> ReplayResult

For each commit, the paths it changes (parent tree -> commit tree, walking only the
subtrees whose ids differ) are merged against the current head, blob by blob, with the
cheap answers first: ours == base takes theirs; ours == theirs keeps ours; only a path
both sides changed goes to libgit2's three-way file merge. The new tree is the head's
tree with those paths rewritten (only the subtrees on them are rebuilt, in memory:
series.engine.odb). So a commit's cost follows the paths it touches, not the tree size.

Kept: the author line byte for byte (name, email, time, offset), the raw message and its
encoding header. The committer is `committer` or `default_committer(repo)` (which
honours GIT_COMMITTER_NAME/EMAIL/DATE). A commit whose replay leaves the tree unchanged
is dropped (already upstream). A commit whose parent already is the head (and whose
message is not rewritten) is kept as it is, so replaying an up-to-date topic is free.

Renames are followed as git's merge does (upstream moved a file the commit edits, or the
commit moves a file upstream edited); upstream's moves come from `renames(path) -> new
path | None` (the rebase passes git's rename detection between the old and new base,
computed once and only if needed).

On a conflict the result carries `conflict` (a ReplayStop: the commit, the head it was
being applied to, the conflicting paths as resolve.Conflict values, and the clean part of
its changes): everything needed to materialize it in a worktree. When `odb` is None the
new objects are written to the repository before returning (one pack); callers that pass
their own MemOdb persist when they decide to (the rebase does it once, at the end).
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import pygit2

from series.engine.odb import GITLINK, LINK, TREE, Entry, MemOdb, PathConflict
from series.engine.resolve import Conflict, Resolver
from series.errors import SeriesError


@dataclass(frozen=True)
class ReplayStop:
    commit: pygit2.Oid                      # the commit that did not apply
    head: pygit2.Oid                        # what it was being applied onto
    index: int                              # its position in the input list
    conflicts: tuple[Conflict, ...]
    clean: Mapping[str, Entry | None]       # its other paths, merged cleanly


@dataclass(frozen=True)
class ReplayResult:
    head: pygit2.Oid                                  # new head (onto's id if all dropped)
    mapping: Mapping[pygit2.Oid, pygit2.Oid]          # old commit -> new commit
    dropped: tuple[pygit2.Oid, ...]                   # old commits that became empty
    changed: frozenset[pygit2.Oid] = frozenset()      # old commits whose patch changed
    resolved: tuple[tuple[pygit2.Oid, str], ...] = ()  # (old commit, path) resolved by the resolver
    conflict: ReplayStop | None = None
    done: int = 0                                     # input commits fully handled
    new_commits: tuple[pygit2.Oid, ...] = field(default=())  # new ids, in order

    @property
    def ok(self) -> bool:
        return self.conflict is None


# -- identities ------------------------------------------------------------------------

def _offset_text(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}{minutes % 60:02d}"


def _parse_date(text: str) -> tuple[int, int] | None:
    """git's common date forms: '@1700000000 +0100', '1700000000 +0100', ISO 8601, RFC 2822."""
    text = text.strip()
    m = re.match(r"^@?(\d+)(?:\s+([+-])(\d\d)(\d\d))?$", text)
    if m:
        offset = 0
        if m.group(2):
            offset = (int(m.group(3)) * 60 + int(m.group(4))) * (-1 if m.group(2) == "-" else 1)
        return int(m.group(1)), offset
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        import email.utils

        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
    if when.tzinfo is None:
        when = when.astimezone()
    delta = when.utcoffset() or _dt.timedelta(0)
    return int(when.timestamp()), int(delta.total_seconds() // 60)


def default_committer(repo: pygit2.Repository) -> pygit2.Signature:
    """The committer git would use: GIT_COMMITTER_* from the environment, else user.* config."""
    config = repo.config

    def conf(key: str) -> str | None:
        try:
            return str(config[key])
        except KeyError:
            return None

    name = os.environ.get("GIT_COMMITTER_NAME") or conf("user.name")
    email = os.environ.get("GIT_COMMITTER_EMAIL") or conf("user.email")
    if not name or not email:
        raise SeriesError("no committer identity: set user.name and user.email "
                          "(git config --global user.name 'You'), or GIT_COMMITTER_NAME/EMAIL")
    date = os.environ.get("GIT_COMMITTER_DATE")
    parsed = _parse_date(date) if date else None
    if parsed is None:
        now = _dt.datetime.now().astimezone()
        offset = int((now.utcoffset() or _dt.timedelta(0)).total_seconds() // 60)
        parsed = int(now.timestamp()), offset
    return pygit2.Signature(name, email, parsed[0], parsed[1])


def signature_line(sig: pygit2.Signature) -> bytes:
    return b"%s <%s> %d %s" % (sig.raw_name, sig.raw_email, sig.time, _offset_text(sig.offset).encode())


@dataclass(frozen=True)
class _Raw:
    author: bytes
    extra: bytes        # header lines kept verbatim (encoding); signatures are dropped
    message: bytes
    encoding: str


def _raw_commit(repo: pygit2.Repository, commit: pygit2.Commit) -> _Raw:
    _, data = repo.odb.read(commit.id)
    head, _, message = data.partition(b"\n\n")
    author = b""
    extra: list[bytes] = []
    encoding = "utf-8"
    for line in head.split(b"\n"):
        if line.startswith(b"author "):
            author = line[len(b"author "):]
        elif line.startswith(b"encoding "):
            extra.append(line + b"\n")
            encoding = line[len(b"encoding "):].decode("ascii", "replace")
    return _Raw(author, b"".join(extra), message, encoding)


# -- merging one path --------------------------------------------------------------------

def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8000]


def _blob(repo: pygit2.Repository, entry: Entry | None) -> bytes | None:
    if entry is None or entry[0] in (TREE, GITLINK):
        return None
    return repo[entry[1]].data  # type: ignore[attr-defined,no-any-return]


def merge_file(repo: pygit2.Repository, path: str, base: Entry | None, ours: Entry, theirs: Entry,
               labels: tuple[str, str, str]) -> tuple[bool, bytes]:
    """libgit2's three-way file merge with git's marker labels; (clean, merged bytes)."""
    from pygit2.errors import check_error
    from pygit2.ffi import C, ffi  # the labelled, binary-safe variant is not wrapped by pygit2

    keep = []

    def entry(e: Entry | None) -> object:
        if e is None:
            return ffi.NULL
        c = ffi.new("git_index_entry *")
        ffi.buffer(ffi.addressof(c, "id"))[:] = e[1].raw
        c.mode = e[0]
        name = ffi.new("char[]", path.encode("utf-8", "surrogateescape"))
        keep.append(name)
        c.path = name
        keep.append(c)
        return c

    opts = ffi.new("git_merge_file_options *")
    opts.version = 1
    texts = [ffi.new("char[]", label.encode("utf-8", "replace")) for label in labels]
    opts.ancestor_label, opts.our_label, opts.their_label = texts
    out = ffi.new("git_merge_file_result *")
    err = C.git_merge_file_from_index(out, repo._repo, entry(base), entry(ours), entry(theirs), opts)
    check_error(err)
    try:
        return bool(out.automergeable), bytes(ffi.buffer(out.ptr, out.len))
    finally:
        C.git_merge_file_result_free(out)


def _short(repo: pygit2.Repository, commit: pygit2.Commit) -> str:
    return f"{str(commit.id)[:7]} ({commit.message.split(chr(10), 1)[0][:60]})"


def _hunks(old: bytes, new: bytes) -> list[tuple[str, ...]]:
    """A patch's hunks without line numbers: what git's patch-id and range-diff compare."""
    patch = pygit2.Patch.create_from(old, new)
    return [tuple(f"{line.origin}{line.content}" for line in hunk.lines) for hunk in patch.hunks]


@dataclass
class _PathResult:
    entry: Entry | None = None
    conflict: Conflict | None = None
    same_patch: bool = True


def _merge_path(repo: pygit2.Repository, path: str, base: Entry | None, theirs: Entry | None,
                ours: Entry | None, labels: tuple[str, str, str]) -> _PathResult:
    if ours == base:
        return _PathResult(theirs)
    if ours == theirs:
        return _PathResult(ours, same_patch=False)  # upstream made the same change

    def conflict(kind: str, merged: bytes | None = None) -> _PathResult:
        o, t = _blob(repo, ours), _blob(repo, theirs)
        hexed = [(e[0], str(e[1])) if e is not None else None for e in (base, ours, theirs)]
        # no textual merge: the worktree shows the side that still has the file (ours first)
        fallback = o if o is not None else (t or b"")
        return _PathResult(conflict=Conflict(
            path, kind, _blob(repo, base), o, t, merged if merged is not None else fallback, *hexed))

    if any(e is not None and e[0] in (TREE, GITLINK) for e in (ours, theirs)):
        return conflict("file/directory")
    if ours is None:
        return conflict("delete/modify")
    if theirs is None:
        return conflict("modify/delete")
    if base is not None and base[0] != ours[0] and base[0] != theirs[0] and ours[0] != theirs[0]:
        return conflict("mode")
    mode = theirs[0] if base is None or ours[0] == base[0] else ours[0]
    if base is not None and ours[1] == base[1]:
        return _PathResult((mode, theirs[1]), same_patch=False)
    if base is not None and theirs[1] == base[1]:
        return _PathResult((mode, ours[1]), same_patch=False)
    if ours[1] == theirs[1]:
        return _PathResult((mode, ours[1]), same_patch=False)
    sides = [_blob(repo, e) or b"" for e in (base, ours, theirs)]
    if LINK in (ours[0], theirs[0]) or any(_is_binary(s) for s in sides):
        return conflict("binary")
    clean, merged = merge_file(repo, path, base, ours, theirs, labels)
    if not clean:
        return conflict("content" if base is not None else "add/add", merged)
    blob = repo.create_blob(merged)
    same = _hunks(sides[0], sides[2]) == _hunks(sides[1], merged)
    return _PathResult((mode, blob), same_patch=same)


# -- renames ----------------------------------------------------------------------------------

Change = tuple[str, Optional[Entry], Optional[Entry], Optional[Entry]]  # path, base, theirs, ours


def renamed_paths(repo: pygit2.Repository, old: pygit2.Oid, new: pygit2.Oid) -> dict[str, str]:
    """old path -> new path for the files git's rename detection pairs between two trees."""
    diff = repo[old].peel(pygit2.Tree).diff_to_tree(repo[new].peel(pygit2.Tree))
    diff.find_similar(flags=pygit2.enums.DiffFind.FIND_RENAMES)
    return {d.old_file.path: d.new_file.path for d in diff.deltas
            if d.status == pygit2.enums.DeltaStatus.RENAMED}


def _follow_renames(repo: pygit2.Repository, store: MemOdb, parent: pygit2.Commit, commit: pygit2.Commit,
                    head_tree: pygit2.Oid, upstream: Callable[[str], str | None] | None,
                    changes: list[tuple[str, Entry | None, Entry | None]]) -> list[Change]:
    """Pair each change with our side, following renames as git's merge does:
    - upstream moved a file the commit edits: the edit goes to the new path;
    - the commit moves a file upstream edited: upstream's edit goes along.
    Both are looked for only when a path would otherwise conflict (cheap in the common case)."""
    out: list[Change] = [(path, base, theirs, store.lookup(head_tree, path)) for path, base, theirs in changes]
    own: dict[str, str] | None = None
    for i, (path, base, theirs, ours) in enumerate(out):
        if base is None or ours == base or ours == theirs:
            continue
        if ours is None and theirs is not None and upstream is not None:
            moved = upstream(path)
            target = store.lookup(head_tree, moved) if moved else None
            if moved and target is not None:
                out[i] = (moved, base, theirs, target)
        elif theirs is None and ours is not None:
            if own is None:
                own = renamed_paths(repo, parent.tree_id, commit.tree_id)
            moved = own.get(path)
            if moved is None:
                continue
            for j, (other, _, their_new, _) in enumerate(out):
                if other == moved:
                    out[j] = (moved, base, their_new, ours)  # upstream's edit follows the move
            out[i] = (path, ours, None, ours)  # and the old path simply goes
    return out


# -- replaying a list of commits -------------------------------------------------------------

def replay_commits(repo: pygit2.Repository, commits: Sequence[pygit2.Commit],
                   onto: pygit2.Commit | pygit2.Oid, *,
                   committer: pygit2.Signature | None = None,
                   rewrite_message: Callable[[pygit2.Commit], str] | None = None,
                   resolver: Resolver | None = None, topic: str = "",
                   odb: MemOdb | None = None,
                   renames: Callable[[str], str | None] | None = None) -> ReplayResult:
    """Replay `commits` (oldest first) onto `onto`; see the module docstring."""
    own_odb = odb is None
    store = odb if odb is not None else MemOdb(repo)
    head = onto.id if isinstance(onto, pygit2.Commit) else onto
    head_tree = store.commit_tree(head)
    committer_line = signature_line(committer or default_committer(repo))
    mapping: dict[pygit2.Oid, pygit2.Oid] = {}
    dropped: list[pygit2.Oid] = []
    changed: set[pygit2.Oid] = set()
    resolved: list[tuple[pygit2.Oid, str]] = []
    new_commits: list[pygit2.Oid] = []
    stop: ReplayStop | None = None
    done = 0
    for index, commit in enumerate(commits):
        if len(commit.parents) != 1:
            what = "a merge commit" if commit.parents else "a root commit"
            raise SeriesError(f"{topic or 'replay'}: {str(commit.id)[:12]} is {what}; series replays "
                              "linear topics only (linearize it with 'git rebase' first)")
        parent = commit.parents[0]
        if parent.id == head and rewrite_message is None:
            mapping[commit.id] = commit.id  # already on the new head: keep it as it is
            head, head_tree = commit.id, commit.tree_id
            new_commits.append(head)
            done = index + 1
            continue
        labels = (f"parent of {_short(repo, commit)}", "HEAD", _short(repo, commit))
        updates: dict[str, Entry | None] = {}
        conflicts: list[Conflict] = []
        same_patch = True
        changes = _follow_renames(repo, store, parent, commit, head_tree, renames,
                                  list(store.changed(parent.tree_id, commit.tree_id)))
        for path, base, theirs, ours in changes:
            result = _merge_path(repo, path, base, theirs, ours, labels)
            same_patch = same_patch and result.same_patch
            if result.conflict is not None:
                answer = resolver(topic, path, result.conflict) if resolver else None
                if answer is None:
                    conflicts.append(result.conflict)
                    continue
                mode = (theirs or ours or (0o100644, None))[0]  # type: ignore[index]
                result = _PathResult((int(mode), repo.create_blob(answer)), same_patch=False)
                resolved.append((commit.id, path))
                same_patch = False
            updates[path] = result.entry
        new_tree = None
        if not conflicts:
            try:
                new_tree = store.edit(head_tree, updates)
            except PathConflict as exc:
                conflicts.append(Conflict(exc.path, "file/directory", None, None, None, b""))
        if conflicts:
            stop = ReplayStop(commit.id, head, index, tuple(conflicts), dict(updates))
            break
        if new_tree is None:
            new_tree = store.tree({})
        if new_tree == head_tree:
            dropped.append(commit.id)  # its change is already there: upstream has it
        else:
            raw = _raw_commit(repo, commit)
            message = raw.message
            if rewrite_message is not None:
                message = rewrite_message(commit).encode(raw.encoding, "replace")
            head = store.commit(new_tree, [head], raw.author, committer_line, message, raw.extra)
            head_tree = new_tree
            mapping[commit.id] = head
            new_commits.append(head)
            if not same_patch:
                changed.add(commit.id)
        done = index + 1
    if own_odb:
        store.persist()
    return ReplayResult(head=head, mapping=mapping, dropped=tuple(dropped), changed=frozenset(changed),
                        resolved=tuple(resolved), conflict=stop, done=done, new_commits=tuple(new_commits))
