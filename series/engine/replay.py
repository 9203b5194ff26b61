"""The core: replay commits onto a new base in memory, with git's merge-ort answers.

Public API (stable; the adoption of upstream PRs, the integration build and bisection use it):

    replay_commits(repo, commits, onto, *, committer=None, rewrite_message=None,
                   resolver=None, topic="", odb=None, abbreviate=None) -> ReplayResult

Each commit is one three-way merge (base: its parent's tree, ours: the new head's tree,
theirs: its own tree) through series.engine.merge.merge_trees: in memory where that is
provably git's answer, `git merge-tree` (merge-ort) everywhere else, so renames,
directory renames, rename/delete and the histogram content merge are git's own. What
`git rebase` keeps or drops is kept: a commit that becomes empty is dropped (its change is
already upstream); a commit that was empty in the topic stays; a commit whose parent
already is the head (and whose message is not rewritten) is kept as it is.

Kept: the author line byte for byte (name, email, time, offset), the raw message and its
encoding header. The committer is `committer` or the one git itself would record
(series.git.repo.committer).

On a conflict the resolver (the shared conflict memory) is asked for each textual
conflict; when it answers every conflicted path the commit goes on with those answers.
Otherwise the result carries `conflict` (a ReplayStop: the commit, the head it was being
applied to, git's conflicted paths as resolve.ReplayConflict values, and the resolver's answers
for the paths it knew), which the conflict worktree lays out with git itself. When `odb`
is None the new objects are written to the repository before returning (one pack);
callers that pass their own MemOdb persist when they decide to (the rebase does it once,
at the end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import pygit2

from series.engine.merge import PathStages, merge_trees
from series.engine.odb import GITLINK, TREE, Entry, MemOdb
from series.engine.resolve import ADD_ADD, CONTENT, ReplayConflict, Resolver
from series.errors import SeriesError
from series.git.repo import Abbreviations, committer as git_committer, encode_message, message as commit_message


@dataclass(frozen=True)
class ReplayStop:
    commit: pygit2.Oid  # the commit that did not apply
    head: pygit2.Oid  # what it was being applied onto
    index: int  # its position in the input list
    conflicts: tuple[ReplayConflict, ...]
    resolved: Mapping[str, bytes] = field(default_factory=dict)  # paths the resolver answered


@dataclass(frozen=True)
class ReplayResult:
    head: pygit2.Oid  # new head (onto's id if all dropped)
    mapping: Mapping[pygit2.Oid, pygit2.Oid]  # old commit -> new commit
    dropped: tuple[pygit2.Oid, ...]  # old commits that became empty
    changed: frozenset[pygit2.Oid] = frozenset()  # old commits whose patch changed
    resolved: tuple[tuple[pygit2.Oid, str], ...] = ()  # (old commit, path) resolved by the resolver
    conflict: ReplayStop | None = None
    done: int = 0  # input commits fully handled
    new_commits: tuple[pygit2.Oid, ...] = field(default=())  # new ids, in order
    in_memory: int = 0  # merges answered without git (provably equal)
    by_git: int = 0  # merges git merge-tree answered

    @property
    def ok(self) -> bool:
        return self.conflict is None


# -- identities ------------------------------------------------------------------------


def _offset_text(minutes: int) -> str:
    sign = "-" if minutes < 0 else "+"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}{minutes % 60:02d}"


def signature_line(sig: pygit2.Signature) -> bytes:
    return b"%s <%s> %d %s" % (sig.raw_name, sig.raw_email, sig.time, _offset_text(sig.offset).encode())


@dataclass(frozen=True)
class _Raw:
    author: bytes
    extra: bytes  # header lines kept verbatim (encoding); signatures are dropped
    message: bytes
    encoding: str


def _raw_commit(store: MemOdb, commit: pygit2.Commit) -> _Raw:
    _, data = store.raw(commit.id)
    head, _, message = data.partition(b"\n\n")
    author = b""
    extra: list[bytes] = []
    encoding = "utf-8"
    for line in head.split(b"\n"):
        if line.startswith(b"author "):
            author = line[len(b"author ") :]
        elif line.startswith(b"encoding "):
            extra.append(line + b"\n")
            encoding = line[len(b"encoding ") :].decode("ascii", "replace")
    return _Raw(author, b"".join(extra), message, encoding)


# -- what a conflict looks like to the resolver and the report ----------------------------

# git's conflict types (merge-ort's short descriptions) in the words of the report; the
# rest (rename/delete, rename/rename, file location, ...) keep git's own.
_KINDS = {"contents": CONTENT, "distinct modes": "mode", "directory rename suggested": "file location"}


def _blob(repo: pygit2.Repository, entry: Entry | None) -> bytes | None:
    if entry is None or entry[0] in (TREE, GITLINK):
        return None
    return repo[entry[1]].data  # type: ignore[attr-defined,no-any-return]


def _labels(
    commit: pygit2.Commit, synthetic: tuple[str, str, str] | tuple[()], abbreviate: Callable[[pygit2.Oid], str]
) -> dict[bytes, bytes]:
    """git merge-tree labels its markers (and the `path~label` of a file moved aside) with
    the synthetic commits it was given; the conflict memory, the report and the user see
    the labels `git rebase` writes instead: HEAD, and "<abbrev> (<subject>)" with git's
    own abbreviation."""
    if not synthetic:
        return {}
    subject = commit_message(commit).split("\n", 1)[0]
    label = f"{abbreviate(commit.id)} ({subject})"
    base, ours, theirs = synthetic
    return {
        base.encode(): f"parent of {label}".encode(),
        ours.encode(): b"HEAD",
        theirs.encode(): label.encode("utf-8", "surrogateescape"),
    }


def _relabel_path(path: str, labels: dict[bytes, bytes]) -> str:
    stem, sep, label = path.rpartition("~")
    found = labels.get(label.encode()) if sep else None
    if found is None:
        return path
    return f"{stem}~" + found.decode("utf-8", "surrogateescape").replace("/", "_")


def _relabel(data: bytes, labels: dict[bytes, bytes]) -> bytes:
    if not labels or b"\n" not in data:
        return data
    base = next(iter(labels))  # merge-ort abbreviates the merge base's id in diff3 markers
    out = []
    for line in data.split(b"\n"):
        label = line[8:]
        if line[:7] in (b"<<<<<<<", b">>>>>>>") and label in labels:
            line = line[:8] + labels[label]
        elif line[:7] == b"|||||||" and len(label) >= 4 and base.startswith(label):
            line = line[:8] + labels[base]
        out.append(line)
    return b"\n".join(out)


def _conflict(
    repo: pygit2.Repository, store: MemOdb, tree: pygit2.Oid, found: PathStages, labels: dict[bytes, bytes]
) -> ReplayConflict:
    base, ours, theirs = (found.stages.get(stage) for stage in (1, 2, 3))
    kind = _KINDS.get(found.kind, found.kind)
    if kind == CONTENT and base is None:
        kind = ADD_ADD
    merged = _blob(repo, store.lookup(tree, found.path))
    merged = _relabel(merged, labels) if merged is not None else None
    path = _relabel_path(found.path, labels)
    hexed = [(e[0], str(e[1])) if e is not None else None for e in (base, ours, theirs)]
    return ReplayConflict(
        path,
        kind,
        _blob(repo, base),
        _blob(repo, ours),
        _blob(repo, theirs),
        merged if merged is not None else b"",
        *hexed,
    )


def _hunks(old: bytes, new: bytes) -> list[tuple[str, ...]]:
    """A patch's hunks without line numbers: what git's patch-id and range-diff compare."""
    patch = pygit2.Patch.create_from(old, new)
    return [tuple(f"{line.origin}{line.content}" for line in hunk.lines) for hunk in patch.hunks]


def _mode_change(old: Entry | None, new: Entry | None) -> tuple[int, int] | None:
    """A patch's mode change, as git range-diff compares it ("mode change 100644 => 100755"):
    a patch onto a file made executable upstream is the same patch, one that no longer makes
    it executable is not. (An added or deleted file: the caller compared those already.)"""
    if old is None or new is None:
        return None
    return (old[0], new[0]) if old[0] != new[0] else None


def _same_patch(
    repo: pygit2.Repository, store: MemOdb, base: pygit2.Oid, theirs: pygit2.Oid, ours: pygit2.Oid, result: pygit2.Oid
) -> bool:
    """Does the replayed commit change what the original did, hunk for hunk?"""
    before = {path: (old, new) for path, old, new in store.changed(base, theirs)}
    after = {path: (old, new) for path, old, new in store.changed(ours, result)}
    if before.keys() != after.keys():
        return False
    for path, (old, new) in before.items():
        old2, new2 = after[path]
        if (old, new) == (old2, new2):
            continue
        if (old is None) != (old2 is None) or (new is None) != (new2 is None):
            return False
        if _mode_change(old, new) != _mode_change(old2, new2):
            return False
        if _hunks(_blob(repo, old) or b"", _blob(repo, new) or b"") != _hunks(
            _blob(repo, old2) or b"", _blob(repo, new2) or b""
        ):
            return False
    return True


# -- replaying a list of commits -------------------------------------------------------------


def replay_commits(
    repo: pygit2.Repository,
    commits: Sequence[pygit2.Commit],
    onto: pygit2.Commit | pygit2.Oid,
    *,
    committer: pygit2.Signature | None = None,
    rewrite_message: Callable[[pygit2.Commit], str] | None = None,
    resolver: Resolver | None = None,
    topic: str = "",
    odb: MemOdb | None = None,
    abbreviate: Callable[[pygit2.Oid], str] | None = None,
) -> ReplayResult:
    """Replay `commits` (oldest first) onto `onto`; see the module docstring. `abbreviate`:
    git's abbreviation of a commit for conflict labels (a run's shared Abbreviations)."""
    own_odb = odb is None
    store = odb if odb is not None else MemOdb(repo)
    head = onto.id if isinstance(onto, pygit2.Commit) else onto
    head_tree = store.commit_tree(head)
    committer_line = signature_line(committer or git_committer(repo))
    mapping: dict[pygit2.Oid, pygit2.Oid] = {}
    dropped: list[pygit2.Oid] = []
    changed: set[pygit2.Oid] = set()
    resolved: list[tuple[pygit2.Oid, str]] = []
    new_commits: list[pygit2.Oid] = []
    stop: ReplayStop | None = None
    done = in_memory = by_git = 0
    for index, commit in enumerate(commits):
        if len(commit.parents) != 1:
            what = "a merge commit" if commit.parents else "a root commit"
            raise SeriesError(
                f"{topic or 'replay'}: {str(commit.id)[:12]} is {what}; series replays linear topics only",
                "linearize it with 'git rebase' first",
            )
        parent = commit.parents[0]
        if parent.id == head and rewrite_message is None:  # git rebase fast-forwards these too
            mapping[commit.id] = commit.id  # already on the new head: keep it as it is
            head, head_tree = commit.id, commit.tree_id
            new_commits.append(head)
            done = index + 1
            continue
        base_tree, theirs_tree = parent.tree_id, commit.tree_id
        merged = merge_trees(store, base_tree, head_tree, theirs_tree)
        in_memory, by_git = in_memory + merged.fast, by_git + (not merged.fast)
        new_tree = merged.tree
        if not merged.clean:
            labels = _labels(commit, merged.labels, abbreviate or Abbreviations(repo))
            conflicts = [_conflict(repo, store, merged.tree, c, labels) for c in merged.conflicts]
            answers: dict[str, bytes] = {}
            for c in conflicts:
                answer = resolver(topic, c.path, c) if resolver and c.textual else None
                if answer is not None:
                    answers[c.path] = answer
            if len(answers) < len(conflicts):
                resolved += [(commit.id, path) for path in answers]
                left = tuple(c for c in conflicts if c.path not in answers)
                stop = ReplayStop(commit.id, head, index, left, answers)
                break
            edits: dict[str, Entry | None] = {}
            for c in conflicts:
                side = c.ours_entry or c.theirs_entry
                edits[c.path] = (side[0] if side else 0o100644, repo.create_blob(answers[c.path]))
                resolved.append((commit.id, c.path))
            new_tree = store.edit(merged.tree, edits) or store.tree({})
        if new_tree == head_tree and base_tree != theirs_tree:
            dropped.append(commit.id)  # it became empty: upstream has its change (git drops it)
        else:  # a commit that was empty in the topic stays, as git rebase keeps it
            raw = _raw_commit(store, commit)
            message = raw.message
            if rewrite_message is not None:
                message = encode_message(rewrite_message(commit), raw.encoding)
            new_head = store.commit(new_tree, [head], raw.author, committer_line, message, raw.extra)
            if not merged.fast and (
                merged.conflicts or not _same_patch(repo, store, base_tree, theirs_tree, head_tree, new_tree)
            ):
                changed.add(commit.id)
            head, head_tree = new_head, new_tree
            mapping[commit.id] = head
            new_commits.append(head)
        done = index + 1
    if own_odb:
        store.persist()
    return ReplayResult(
        head=head,
        mapping=mapping,
        dropped=tuple(dropped),
        changed=frozenset(changed),
        resolved=tuple(resolved),
        conflict=stop,
        done=done,
        new_commits=tuple(new_commits),
        in_memory=in_memory,
        by_git=by_git,
    )
