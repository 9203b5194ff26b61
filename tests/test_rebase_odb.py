"""series.engine.odb builds the same objects git would, and its pack reads back."""

from __future__ import annotations

import random
from pathlib import Path

import pygit2

from series.engine.odb import EXEC, LINK, TREE, MemOdb
from tests.conftest import sh


def _reference_edit(repo: pygit2.Repository, tree: pygit2.Tree | None, updates: dict) -> pygit2.Oid | None:
    """The same edit with libgit2's TreeBuilder, path by path."""
    nested: dict[str, dict] = {}
    tb = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for path, entry in updates.items():
        head, sep, rest = path.partition("/")
        if sep:
            nested.setdefault(head, {})[rest] = entry
        elif entry is None:
            if tb.get(head) is not None:
                tb.remove(head)
        else:
            tb.insert(head, entry[1], entry[0])
    for name, inner in nested.items():
        current = tb.get(name)
        sub = repo[current.id].peel(pygit2.Tree) if current is not None and current.filemode == TREE else None
        new = _reference_edit(repo, sub, inner)
        if new is None:
            if current is not None:
                tb.remove(name)
        else:
            tb.insert(name, new, TREE)
    return tb.write() if len(tb) else None


def test_random_edits_match_libgit2_and_the_pack_is_valid(tmp_path: Path) -> None:
    sh(
        "git init -q repo && cd repo && mkdir -p a/b c && for f in a/x a/b/y a/b/z c/w top a.txt; do "
        "echo $f > $f; done && git add -A && git commit -qm init",
        tmp_path,
    )
    repo = pygit2.Repository(str(tmp_path / "repo"))
    rng = random.Random(3)
    blobs = [repo.create_blob(f"blob {i}\n".encode()) for i in range(5)]
    names = ["a/x", "a/b/y", "a/b/z", "a/b/new", "c/w", "c/d/e", "top", "a.txt", "a-b", "a/b.c", "new/deep/file"]
    odb = MemOdb(repo)
    tree = repo.head.peel(pygit2.Commit).tree_id
    for round_ in range(150):
        updates = {}
        for path in rng.sample(names, 3):
            choice = rng.random()
            updates[path] = None if choice < 0.3 else (rng.choice([0o100644, EXEC, LINK]), rng.choice(blobs))
        try:
            ours = odb.edit(tree, updates)
        except Exception:
            continue  # a file where a directory is needed: the engine reports a conflict
        odb.persist()
        theirs = _reference_edit(repo, repo[tree].peel(pygit2.Tree), updates)
        assert ours == theirs, (round_, updates)
        if ours is not None:
            tree = ours
    sh("git fsck --no-dangling", tmp_path / "repo")


def test_reads_look_in_packs_first_and_still_find_loose_objects_and_new_packs(tmp_path: Path) -> None:
    """MemOdb.raw reads packs first (no loose probe per read); what is only loose, or in a
    pack that appeared after the first read, must still be found, byte for byte."""
    sh(
        "git init -q repo && cd repo && echo one > a && git add a && git commit -qm packed && git gc -q "
        "&& echo two > b && git add b && git commit -qm loose",
        tmp_path,
    )
    repo = pygit2.Repository(str(tmp_path / "repo"))
    head = repo.head.peel(pygit2.Commit)
    packed, loose = head.parents[0].id, head.id
    assert (tmp_path / "repo/.git/objects" / str(loose)[:2] / str(loose)[2:]).exists()
    odb = MemOdb(repo)
    for oid in (packed, loose, head.tree_id):
        assert odb.raw(oid) == repo.odb.read(oid)
    fresh = odb.edit(head.tree_id, {"c": (0o100644, repo.create_blob(b"three\n"))})
    assert fresh is not None and odb.persist() == 1  # a new pack, after the pack-only odb was opened
    assert odb.raw(fresh)[1] == repo.odb.read(fresh)[1]
    try:
        odb.raw(pygit2.Oid(hex="1" * 40))
    except KeyError:
        pass
    else:
        raise AssertionError("a missing object must raise KeyError, as repo.odb.read does")
