"""Trees and commits built in memory, persisted at the end as one pack.

Writing each new tree and commit as a loose object costs about 0.1 ms of filesystem work
per object (six or so per replayed commit), more than the replay itself. Like git-revise,
the engine builds its objects in memory (`MemOdb`): a tree is a dict of entries,
serialized and hashed with hashlib, and readable back through this class together with
the repository's own objects. `persist()` writes everything that is new as a single pack
(plus its .idx) in one go and reads every object back through libgit2 before a ref may
point at it. A dry run never persists: its objects simply vanish with the process.

Blobs are written straight into the repository by resolutions. Merges that git answers
(`git merge-tree`, series.engine.merge) need the in-memory trees on disk and write their
own blobs and trees: both go to a *scratch* object directory (`scratch_dir()`, ours as a
small pack per merge, git's loose), an
alternate of the repository for git and for libgit2 alike. `persist()` takes the scratch
objects into the same single pack, so a dry run still leaves the repository untouched and
the scratch directory is removed when the process ends.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import struct
import tempfile
import zlib
from collections import deque
from pathlib import Path
from typing import Callable, Iterator, Mapping, Optional

import pygit2

from series.errors import SeriesError
from series.git import checkouts
from series.ops.fs import state_dir, write_atomically

TREE = 0o040000
BLOB = 0o100644
EXEC = 0o100755
LINK = 0o120000
GITLINK = 0o160000

_COMMIT, _TREE, _BLOB = 1, 2, 3  # git object type numbers (also pack types)
_NAMES = {_COMMIT: b"commit", _TREE: b"tree", _BLOB: b"blob"}
_KINDS = {name: kind for kind, name in _NAMES.items()}

Entry = tuple[int, pygit2.Oid]  # (file mode, object id)
Updates = Mapping[str, Optional[Entry]]  # path -> new entry, None deletes


class PathConflict(Exception):
    """A path runs through a file where a directory is needed (or the reverse)."""

    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


_ROW = re.compile(rb"(\d+ ([^\0]*)\0.{20})", re.S)
_TREE_ROW = b"40000 "


def _row_name(row: bytes) -> bytes:
    return row[row.index(b" ") + 1 : -21]


def _row_entry(row: bytes) -> Entry:
    return int(row[: row.index(b" ")], 8), pygit2.Oid(raw=row[-20:])


def _row_key(row: bytes) -> bytes:
    """git's tree order: names as bytes, a directory compared as if it ended in '/'."""
    name = _row_name(row)
    return name + b"/" if row.startswith(_TREE_ROW) else name


def _zlib_stored(data: bytes) -> bytes:
    """A zlib stream of stored blocks: valid for git, and free of deflate's setup cost."""
    out = [b"\x78\x01"]
    for start in range(0, max(len(data), 1), 65535):
        chunk = data[start : start + 65535]
        final = 1 if start + 65535 >= len(data) else 0
        out += [struct.pack("<BHH", final, len(chunk), len(chunk) ^ 0xFFFF), chunk]
    out.append(struct.pack(">I", zlib.adler32(data)))
    return b"".join(out)


def _hash(kind: int, data: bytes) -> pygit2.Oid:
    h = hashlib.sha1(_NAMES[kind] + b" %d\0" % len(data))
    h.update(data)
    return pygit2.Oid(raw=h.digest())


class MemOdb:
    """New trees and commits of one operation, over a repository's objects.

    Trees are handled as rows: each entry's serialized bytes (b"100644 name\\0<20-byte id>")
    keyed by name. Diffing two trees is a set difference of rows (in C); editing one
    replaces a few rows and joins them back, re-sorting only when a name is added or
    changes kind. No Python work per unchanged entry beyond building the row map once.
    """

    def __init__(self, repo: pygit2.Repository):
        try:
            object_format = str(repo.config["extensions.objectformat"]).lower()
        except KeyError:
            object_format = "sha1"
        if object_format != "sha1":
            raise SeriesError(
                f"this repository uses {object_format} object ids; series supports SHA-1 repositories only (vLLM's)"
            )
        self.repo = repo
        self.objects: dict[pygit2.Oid, tuple[int, bytes]] = {}
        self._raw: dict[pygit2.Oid, bytes] = {}
        self._rowmaps: dict[pygit2.Oid, dict[bytes, bytes]] = {}
        self._rowsets: dict[pygit2.Oid, frozenset[bytes]] = {}
        self._commit_trees: dict[pygit2.Oid, pygit2.Oid] = {}
        self._edits: dict[tuple[pygit2.Oid | None, frozenset[tuple[str, Entry | None]]], pygit2.Oid | None] = {}
        self._scratch: Path | None = None
        self._flushed: set[pygit2.Oid] = set()
        self._pack_dir_made = False
        self._packs: pygit2.Odb | None = None
        self.merger: object | None = None  # series.engine.merge.Mergers, made on first use
        # work handed in to run while the replay would wait for git (when_waiting)
        self.meanwhile: deque[Callable[[], object]] = deque()

    def when_waiting(self, task: Callable[[], object]) -> None:
        """Run `task` while the replay waits for one of git's merges: only when git has no
        answer ready to read, in the order given, each at most once. For work the caller
        would otherwise do after the replay, whose result it keeps (a check of a topic
        already replayed); the caller still asks for every result at the end, so a task
        that never ran costs nothing and one that raised is done again there, where its
        error then surfaces. No task changes what the replay does."""
        self.meanwhile.append(task)

    # -- where objects live --------------------------------------------------------
    def objects_dir(self) -> Path:
        """The repository's object directory (the common one, from a linked worktree)."""
        return checkouts.common_dir(self.repo) / "objects"

    def scratch_dir(self) -> Path:
        """An object directory for git's own writes and our flushed trees (see the module
        docstring); an alternate of the repository from now on, removed at exit."""
        if self._scratch is None:
            base = state_dir(self.repo) / "tmp"
            base.mkdir(exist_ok=True)
            _sweep(base)
            self._scratch = Path(tempfile.mkdtemp(prefix=f"objects-{os.getpid()}-", dir=base))
            atexit.register(shutil.rmtree, self._scratch, True)
            self.repo.odb.add_disk_alternate(str(self._scratch))
        return self._scratch

    def inputs_dir(self) -> Path:
        """The object directory of our trees that `flush` writes for git: an alternate of
        git's only. libgit2 reads those from memory, and with them in an alternate it
        shares, a lookup of a loose object git had written failed now and then (libgit2
        1.9.7, a couple of hundred small packs there)."""
        return self.scratch_dir() / "inputs"

    def flush(self, roots: list[pygit2.Oid]) -> Path:
        """Write the in-memory objects reachable from `roots` (commits, trees) that git has
        not seen yet, so `git merge-tree` can read the trees we built; returns where (see
        inputs_dir). Only what those roots need: a path-limited edit adds a handful of
        trees. They go as one small pack, not loose: a loose object is a file in a fan-out
        directory that must be made first, several per merge; git finds a pack that
        appeared after it started the way it finds any new pack (it rescans its pack
        directories on a miss)."""
        todo = [oid for oid in roots if oid in self.objects]
        batch: dict[pygit2.Oid, tuple[int, bytes]] = {}
        while todo:
            oid = todo.pop()
            if oid in self._flushed or oid in batch:
                continue
            kind, data = batch[oid] = self.objects[oid]
            if kind == _COMMIT:  # its tree, and its parents (the merge base of the pair)
                header = data.split(b"\n\n", 1)[0].split(b"\n")
                todo += [
                    pygit2.Oid(hex=line.split(b" ")[1].decode())
                    for line in header
                    if line.startswith((b"tree ", b"parent "))
                ]
                todo = [o for o in todo if o in self.objects]
            elif kind == _TREE:
                todo += [
                    pygit2.Oid(raw=row[-20:])
                    for row in self._rowmap(oid).values()
                    if row.startswith(_TREE_ROW) and pygit2.Oid(raw=row[-20:]) in self.objects
                ]
        if batch:
            pack_dir = self.inputs_dir() / "pack"
            if not self._pack_dir_made:  # made once: a mkdir is a system call per merge
                pack_dir.mkdir(parents=True, exist_ok=True)
                self._pack_dir_made = True
            _write_pack(pack_dir, [(oid, *batch[oid]) for oid in sorted(batch)])
            self._flushed.update(batch)
        return self.inputs_dir()

    def _scratch_objects(self) -> list[tuple[pygit2.Oid, int, bytes]]:
        """The objects git wrote into the scratch directory (merge results: blobs, trees)."""
        if self._scratch is None:
            return []
        found = []
        for folder in self._scratch.iterdir():
            if len(folder.name) != 2 or not folder.is_dir():
                continue
            for item in folder.iterdir():
                oid = pygit2.Oid(hex=folder.name + item.name)
                if oid in self.objects:
                    continue
                raw = zlib.decompress(item.read_bytes())
                header, _, data = raw.partition(b"\0")
                found.append((oid, _KINDS[header.split(b" ", 1)[0]], data))
        return found

    # -- reading -----------------------------------------------------------------
    def raw(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        """A repository object's (type, bytes), looked for in its packs first, as git does.

        pygit2's `Odb.read` is a prefix read, which asks every backend so it can rule out an
        ambiguous id: each read also probes the object's loose path, a failed stat that
        costs more than the read (1,300 of them in a 23-topic rebase, 30-120 us each on
        a fresh clone). A pack-only odb asks nothing else; a miss (a loose object, an
        alternate's) falls back to the whole odb. An id names one content wherever it is
        stored, and libgit2 checks the hash of what it reads, so the answer is the same."""
        if self._packs is None:
            self._packs = pygit2.Odb()
            self._packs.add_backend(pygit2.OdbBackendPack(str(self.objects_dir())), 1)
        try:
            return self._packs.read(oid)
        except KeyError:
            return self.repo.odb.read(oid)

    def __contains__(self, oid: pygit2.Oid) -> bool:
        return oid in self.objects

    def _data(self, tree_id: pygit2.Oid) -> bytes:
        """A tree's raw bytes, read from the pack once however many views need it."""
        found = self._raw.get(tree_id)
        if found is None:
            found = self.objects[tree_id][1] if tree_id in self.objects else self.raw(tree_id)[1]
            self._raw[tree_id] = found
        return found

    def _rowmap(self, tree_id: pygit2.Oid) -> dict[bytes, bytes]:
        found = self._rowmaps.get(tree_id)
        if found is None:
            found = {name: row for row, name in _ROW.findall(self._data(tree_id))}
            self._rowmaps[tree_id] = found
        return found

    def _rowset(self, tree_id: pygit2.Oid) -> frozenset[bytes]:
        found = self._rowsets.get(tree_id)
        if found is None:
            found = frozenset(self._rowmap(tree_id).values())
            self._rowsets[tree_id] = found
        return found

    def entries(self, tree_id: pygit2.Oid) -> dict[str, Entry]:
        """name -> (mode, id) of a tree, ours or the repository's."""
        return {n.decode("utf-8", "surrogateescape"): _row_entry(r) for n, r in self._rowmap(tree_id).items()}

    def changed(
        self, old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str = ""
    ) -> Iterator[tuple[str, Entry | None, Entry | None]]:
        """(path, old entry, new entry) for each blob that differs; equal subtrees are skipped
        by id, so the cost follows the change, not the tree."""
        a = self._rowset(old) if old is not None else frozenset()
        b = self._rowset(new) if new is not None else frozenset()
        gone = {_row_name(row): row for row in a - b}
        came = {_row_name(row): row for row in b - a}
        for raw_name in sorted(gone.keys() | came.keys()):
            x = _row_entry(gone[raw_name]) if raw_name in gone else None
            y = _row_entry(came[raw_name]) if raw_name in came else None
            path = prefix + raw_name.decode("utf-8", "surrogateescape")
            x_tree = x is not None and x[0] == TREE
            y_tree = y is not None and y[0] == TREE
            if x_tree or y_tree:
                yield from self.changed(
                    x[1] if x_tree else None,  # type: ignore[index]
                    y[1] if y_tree else None,  # type: ignore[index]
                    path + "/",
                )
            x_blob = x if x is not None and not x_tree else None
            y_blob = y if y is not None and not y_tree else None
            if x_blob is not None or y_blob is not None:
                yield path, x_blob, y_blob

    def lookup(self, tree_id: pygit2.Oid, path: str) -> Entry | None:
        """The entry at `path` under a tree; None when absent (or under a file). Walked
        here, not by libgit2, for every tree: a tree git's merge wrote may hold one of
        ours, which libgit2 cannot read (see inputs_dir)."""
        head, _, rest = path.partition("/")
        row = self._rowmap(tree_id).get(head.encode("utf-8", "surrogateescape"))
        if row is None:
            return None
        found = _row_entry(row)
        if not rest:
            return found
        if found[0] != TREE:
            return None
        return self.lookup(found[1], rest)

    def header(self, commit_id: pygit2.Oid, name: bytes) -> bytes:
        """A commit's raw header value (b"committer" -> b"Name <email> 1700000000 +0000")."""
        data = self.objects[commit_id][1] if commit_id in self.objects else self.raw(commit_id)[1]
        for line in data.split(b"\n\n", 1)[0].split(b"\n"):
            if line.startswith(name + b" "):
                return line[len(name) + 1 :]
        raise KeyError(name)

    def commit_tree(self, commit_id: pygit2.Oid) -> pygit2.Oid:
        found = self._commit_trees.get(commit_id)
        if found is None:
            found = self.repo[commit_id].peel(pygit2.Commit).tree_id
            self._commit_trees[commit_id] = found
        return found

    # -- writing -------------------------------------------------------------------
    def _add_tree(self, rows: dict[bytes, bytes], data: bytes) -> pygit2.Oid:
        oid = _hash(_TREE, data)
        if oid not in self._rowmaps:
            self.objects[oid] = (_TREE, data)
            self._raw[oid] = data
            self._rowmaps[oid] = rows
        return oid

    def tree(self, entries: dict[str, Entry]) -> pygit2.Oid:
        rows = {}
        for name, (mode, oid) in entries.items():
            raw = name.encode("utf-8", "surrogateescape")
            rows[raw] = b"%o %s\0%s" % (mode, raw, oid.raw)
        values = sorted(rows.values(), key=_row_key)
        return self._add_tree({_row_name(v): v for v in values}, b"".join(values))

    def edit(self, tree_id: pygit2.Oid | None, updates: Updates) -> pygit2.Oid | None:
        """`tree_id` with entries set or removed at paths; only the subtrees on those paths
        are rebuilt. None when the result is empty (git drops empty trees)."""
        key = (tree_id, frozenset(updates.items()))
        if key in self._edits:
            return self._edits[key]
        rows = dict(self._rowmap(tree_id)) if tree_id is not None else {}
        reorder = False  # rows keep git's order unless a name is added or changes kind
        nested: dict[bytes, dict[str, Entry | None]] = {}
        for path, entry in updates.items():
            head, sep, rest = path.partition("/")
            name = head.encode("utf-8", "surrogateescape")
            if sep:
                nested.setdefault(name, {})[rest] = entry
            elif entry is None:
                rows.pop(name, None)
            else:
                old = rows.get(name)
                if old is None or old.startswith(_TREE_ROW) != (entry[0] == TREE):
                    reorder = True
                rows[name] = b"%o %s\0%s" % (entry[0], name, entry[1].raw)
        for name, inner in nested.items():
            current = rows.get(name)
            if current is not None and not current.startswith(_TREE_ROW):
                if all(v is None for v in inner.values()):
                    continue  # deleting below a file: nothing is there
                raise PathConflict(name.decode("utf-8", "surrogateescape"))
            new = self.edit(pygit2.Oid(raw=current[-20:]) if current is not None else None, inner)
            if new is None:
                rows.pop(name, None)
            else:
                reorder = reorder or current is None
                rows[name] = b"40000 %s\0%s" % (name, new.raw)
        result = None
        if rows:
            values: list[bytes] = list(rows.values())
            if reorder:  # the row map must keep git's order too: later edits rely on it
                values.sort(key=_row_key)
                rows = {_row_name(v): v for v in values}
            result = self._add_tree(rows, b"".join(values))
        self._edits[key] = result
        return result

    def commit(
        self,
        tree: pygit2.Oid,
        parents: list[pygit2.Oid],
        author: bytes,
        committer: bytes,
        message: bytes,
        extra_headers: bytes = b"",
    ) -> pygit2.Oid:
        """A commit from raw header lines (author kept byte for byte) and raw message."""
        lines = [b"tree " + tree.raw.hex().encode()]
        lines += [b"parent " + p.raw.hex().encode() for p in parents]
        lines += [b"author " + author, b"committer " + committer]
        data = b"\n".join(lines) + b"\n" + extra_headers + b"\n" + message
        oid = _hash(_COMMIT, data)
        self.objects[oid] = (_COMMIT, data)
        self._commit_trees[oid] = tree
        return oid

    # -- persisting ----------------------------------------------------------------
    def persist(self, only: set[pygit2.Oid] | None = None) -> int:
        """Write the new objects (all, or `only`) as one pack; verify; return the count."""
        # No "already in the repository?" filter: a miss makes libgit2 rescan the pack
        # directory (about 40 us each); a duplicate in a pack is harmless.
        for oid, kind, data in self._scratch_objects():
            self.objects[oid] = (kind, data)  # git's merge results join our objects
            self._flushed.add(oid)
        todo = sorted(oid for oid in self.objects if only is None or oid in only)
        if not todo:
            return 0
        pack_dir = self.objects_dir() / "pack"
        pack_dir.mkdir(parents=True, exist_ok=True)
        _write_pack(pack_dir, [(oid, *self.objects[oid]) for oid in todo])
        for oid in todo:  # every object readable through libgit2 (from a pack) before any ref points at it
            kind, data = self.raw(oid)
            if data != self.objects[oid][1]:
                raise SeriesError(f"object {oid} did not read back from the new pack; nothing was moved")
        return len(todo)


def _sweep(base: Path) -> None:
    """Remove scratch directories left by processes that no longer run (killed ones)."""
    for entry in base.glob("objects-*-*"):
        try:
            pid = int(entry.name.split("-")[1])
            os.kill(pid, 0)
        except (ValueError, IndexError):
            continue
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:
            continue


def _pack_header(kind: int, size: int) -> bytes:
    out = bytearray()
    byte = (kind << 4) | (size & 15)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _write_pack(pack_dir: Path, objects: list[tuple[pygit2.Oid, int, bytes]]) -> None:
    """A version-2 pack (no deltas) and its version-2 index; the .idx lands last, as git does."""
    body = bytearray(b"PACK" + struct.pack(">II", 2, len(objects)))
    offsets: list[int] = []
    crcs: list[int] = []
    for _, kind, data in objects:
        offsets.append(len(body))
        chunk = _pack_header(kind, len(data)) + _zlib_stored(data)
        crcs.append(zlib.crc32(chunk))
        body += chunk
    if len(body) >= 2**31:
        raise SeriesError("new objects exceed 2 GiB: cannot write them as one pack")
    pack_sum = hashlib.sha1(body).digest()
    body += pack_sum
    ids = [oid.raw for oid, _, _ in objects]  # already sorted by id
    fanout = [0] * 256
    for raw in ids:
        fanout[raw[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    idx = bytearray(b"\377tOc" + struct.pack(">I", 2))
    idx += struct.pack(">256I", *fanout)
    idx += b"".join(ids)
    idx += struct.pack(f">{len(crcs)}I", *crcs)
    idx += struct.pack(f">{len(offsets)}I", *offsets)
    idx += pack_sum
    idx += hashlib.sha1(idx).digest()
    name = f"pack-{pack_sum.hex()}"
    for suffix, content in ((".pack", body), (".idx", idx)):
        write_atomically(
            pack_dir / f"{name}{suffix}", bytes(content), mode=0o444, tmp=pack_dir / f"tmp_series_{os.getpid()}{suffix}"
        )
