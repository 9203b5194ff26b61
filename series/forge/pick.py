"""Replay a PR's commits onto our base, in memory: the adapter adopt uses.

The rebase engine (series.engine.replay) owns the real replay. Until and unless it is
importable with the expected API, this module carries a small path-limited cherry-pick
of its own: for each commit, only the paths it changes are merged (a three-way merge of
those blobs), and only the subtrees on those paths are rewritten, so the cost follows
the size of the PR, not of the vLLM tree. A conflict raises ConflictError naming the
commit and files; nothing is written but loose objects, and no ref moves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pygit2

from series.errors import ConflictError
from series.git.repo import changed_paths

TREE = pygit2.enums.FileMode.TREE
Entry = tuple[pygit2.Oid, int]  # (blob id, file mode)


@dataclass(frozen=True)
class Replayed:
    commits: list[pygit2.Oid]   # one new commit per input commit, in order
    head: pygit2.Oid


def _entry(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> Entry | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return (obj.id, int(obj.filemode)) if obj.filemode != TREE else None


def _tree_with(repo: pygit2.Repository, tree: pygit2.Tree | None,
               updates: dict[str, Entry | None]) -> pygit2.Oid:
    """`tree` with blobs set (or removed, None) at paths; untouched subtrees are shared."""
    here: dict[str, Entry | None] = {}
    below: dict[str, dict[str, Entry | None]] = {}
    for path, value in updates.items():
        head, _, rest = path.partition("/")
        if rest:
            below.setdefault(head, {})[rest] = value
        else:
            here[head] = value
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, value in here.items():
        if value is None:
            if tree is not None and name in tree:
                builder.remove(name)
        else:
            builder.insert(name, value[0], value[1])
    for name, sub in below.items():
        existing = tree[name] if tree is not None and name in tree else None
        subtree = repo[existing.id] if existing is not None and existing.filemode == TREE else None
        oid = _tree_with(repo, subtree, sub)
        if len(repo[oid]) == 0:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, oid, TREE)
    return builder.write()


def pick_tree(repo: pygit2.Repository, commit: pygit2.Commit,
              onto: pygit2.Tree) -> tuple[pygit2.Oid, list[str]]:
    """The tree of `commit`'s change applied to `onto`, and the paths that conflict."""
    parent = commit.parents[0].tree if commit.parents else None
    updates: dict[str, Entry | None] = {}
    conflicts: list[str] = []
    for change in changed_paths(repo, parent, commit.tree):
        base = (change.old_id, change.old_mode) if change.old_id is not None else None
        theirs = (change.new_id, change.new_mode) if change.new_id is not None else None
        ours = _entry(repo, onto, change.path)
        if ours == base:
            updates[change.path] = theirs
        elif ours == theirs:
            continue  # already there
        elif ours is None or theirs is None or base is None:
            conflicts.append(change.path)  # modify/delete or add/add with different content
        else:
            merged = repo.merge_file_from_index(
                pygit2.IndexEntry(change.path, base[0], base[1]),
                pygit2.IndexEntry(change.path, ours[0], ours[1]),
                pygit2.IndexEntry(change.path, theirs[0], theirs[1]))
            if not merged.automergeable:
                conflicts.append(change.path)
            else:
                updates[change.path] = (repo.create_blob(merged.contents.encode("utf-8")), int(merged.mode))
    return _tree_with(repo, onto, updates), conflicts


def _own_replay(repo: pygit2.Repository, commits: list[pygit2.Commit], onto: pygit2.Commit, *,
                committer: pygit2.Signature, rewrite_message: Callable[[pygit2.Commit], str],
                what: str) -> Replayed:
    parent = onto
    made: list[pygit2.Oid] = []
    for commit in commits:
        tree, conflicts = pick_tree(repo, commit, parent.tree)
        if conflicts:
            raise ConflictError(
                f"{what}: commit {str(commit.id)[:12]} '{commit.message.splitlines()[0]}' conflicts "
                f"with {str(onto.id)[:12]} in {', '.join(conflicts)}; nothing was changed "
                "(rebase the topic that touches these files first, or adopt onto another base)")
        # The author signature is the original object: name, email, time and offset exact.
        oid = repo.create_commit(None, commit.author, committer, rewrite_message(commit), tree, [parent.id])
        made.append(oid)
        parent = repo[oid]
    return Replayed(made, parent.id)


def replay(repo: pygit2.Repository, commits: list[pygit2.Commit], onto: pygit2.Commit, *,
           committer: pygit2.Signature, rewrite_message: Callable[[pygit2.Commit], str],
           what: str) -> Replayed:
    """Replay `commits` (oldest first) onto `onto`; ConflictError and no refs moved on conflict."""
    return _own_replay(repo, commits, onto, committer=committer, rewrite_message=rewrite_message,
                       what=what)
