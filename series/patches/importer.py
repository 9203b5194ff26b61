"""Rebuild commits from patch files, in memory: parse with unidiff, apply hunks to blobs.

No checkout and no `git am`: each patch is applied to the parent commit's blobs, the
changed subtrees are rebuilt, and a commit is written with the patch's author, date and
message exactly. A full `index` line is a checksum: when the preimage is the blob the
patch was made from, the result must be the blob it names, or the import stops.

Every path a patch names is checked before anything is written: a path that climbs out
of the repository (`..`), is absolute, or reaches into `.git` is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import pygit2
from unidiff.patch import Hunk, PatchSet
from unidiff.errors import UnidiffParseError

from series.errors import SeriesError
from series.git.repo import edit_tree
from series.patches.format import Patch, ZERO_ID, decode, encode, unquote_path

TREE = pygit2.enums.FileMode.TREE
BLOB = pygit2.enums.FileMode.BLOB
_MODES = {0o100644, 0o100755, 0o120000}


def check_path(path: str, where: str) -> str:
    """A repository-relative path, or a one-line refusal."""
    if not path:
        raise SeriesError(f"{where}: empty path in patch")
    if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
        raise SeriesError(f"{where}: refusing absolute path '{path}' (patch paths must stay inside the repository)")
    for part in re.split(r"[\\/]", path):
        if part in ("", ".", ".."):
            raise SeriesError(f"{where}: refusing path '{path}' (it escapes the repository or is not normalized)")
        if part.rstrip(". ").lower() == ".git":
            raise SeriesError(f"{where}: refusing path '{path}' (patches may not write into .git)")
        if "\0" in part:
            raise SeriesError(f"{where}: refusing path with a NUL byte")
    return path


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None: created
    new_path: str | None  # None: deleted
    old_mode: int | None
    new_mode: int | None
    old_id: str | None  # from a full index line, else None
    new_id: str | None
    hunks: tuple[Hunk, ...]
    copy: bool = False  # "copy from/to": the old path stays


_INFO = {
    "old_mode": re.compile(r"^old mode (\d+)$"),
    "new_mode": re.compile(r"^new mode (\d+)$"),
    "new_file": re.compile(r"^new file mode (\d+)$"),
    "deleted": re.compile(r"^deleted file mode (\d+)$"),
    "rename_from": re.compile(r"^(?:rename|copy) from (.+)$"),
    "rename_to": re.compile(r"^(?:rename|copy) to (.+)$"),
    "index": re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(?: (\d+))?$"),
}


def _strip_prefix(path: str, prefix: str) -> str:
    path = unquote_path(path)
    if path == "/dev/null":
        return path
    if not path.startswith(prefix):
        raise SeriesError(f"unexpected path '{path}' (expected it to start with '{prefix}')")
    return path[len(prefix) :]


def file_changes(diff: str, where: str) -> list[FileDiff]:
    """Parse a patch's diff part; refuse binary changes and hostile paths."""
    if not diff.strip():
        return []
    try:
        patchset = PatchSet(diff)
    except UnidiffParseError as exc:
        raise SeriesError(f"{where}: malformed diff ({exc})") from None
    changes = []
    for pf in patchset:
        info = [line.rstrip("\n") for line in (pf.patch_info or [])]
        found: dict[str, str] = {}
        for line in info:
            for key, rx in _INFO.items():
                m = rx.match(line)
                if m and key not in found:
                    found[key] = m.group(1) if key != "index" else line
        if pf.is_binary_file or any(line.startswith(("GIT binary patch", "Binary files")) for line in info):
            raise SeriesError(f"{where}: {pf.path}: binary patch refused (patch files carry no binary content)")
        created, deleted = "new_file" in found, "deleted" in found
        if "rename_from" in found:
            old_path, new_path = unquote_path(found["rename_from"]), unquote_path(found["rename_to"])
        else:  # from the 'diff --git' line; '/dev/null' once 'new file' or 'deleted file' was seen
            old_path = _strip_prefix(pf.source_file, "a/")
            new_path = _strip_prefix(pf.target_file, "b/")
        old_mode = int(found["old_mode"], 8) if "old_mode" in found else None
        new_mode = int(found["new_mode"], 8) if "new_mode" in found else None
        if created:
            new_mode = int(found["new_file"], 8)
        if deleted:
            old_mode = int(found["deleted"], 8)
        old_id = new_id = None
        if "index" in found:
            m = _INFO["index"].match(found["index"])
            assert m is not None
            if len(m.group(1)) == 40:
                old_id, new_id = m.group(1), m.group(2)
            if m.group(3) and old_mode is None and new_mode is None:
                old_mode = new_mode = int(m.group(3), 8)
        for mode in (old_mode, new_mode):
            if mode is not None and mode not in _MODES:
                raise SeriesError(f"{where}: {pf.path}: unsupported file mode {mode:o} (submodules are refused)")
        changes.append(
            FileDiff(
                old_path=None if created or old_path == "/dev/null" else check_path(old_path, where),
                new_path=None if deleted or new_path == "/dev/null" else check_path(new_path, where),
                old_mode=old_mode,
                new_mode=new_mode,
                old_id=old_id,
                new_id=new_id,
                hunks=tuple(pf),
                copy=any(line.startswith("copy from ") for line in info),
            )
        )
    return changes


# ---------------------------------------------------------------- hunks on bytes


def split_lines(data: bytes) -> list[bytes]:
    """Lines with their '\\n' kept; only '\\n' ends a line, as in git."""
    return re.findall(rb"[^\n]*\n|[^\n]+$", data)


def _sides(hunk: Hunk) -> tuple[list[bytes], list[bytes]]:
    before: list[bytes] = []
    after: list[bytes] = []
    last: list[bytes] | None = None
    for line in hunk:
        kind = line.line_type
        value = encode(line.value)
        if kind == "\\":
            # "\ No newline at end of file" belongs to the line before it
            for side in [before, after] if last is None else [last]:
                if side and side[-1].endswith(b"\n"):
                    side[-1] = side[-1][:-1]
            continue
        if kind == " ":
            before.append(value)
            after.append(value)
            last = None
        elif kind == "-":
            before.append(value)
            last = before
        elif kind == "+":
            after.append(value)
            last = after
    return before, after


def apply_hunks(data: bytes, hunks: Iterable[Hunk], where: str) -> bytes:
    """Apply unified-diff hunks to `data`: exact context, searching nearby for an offset."""
    lines = split_lines(data)
    out: list[bytes] = []
    cursor = 0  # lines before this index are done
    shift = 0  # offset found for the previous hunk, carried to the next
    for hunk in hunks:
        before, after = _sides(hunk)
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        at = _find(lines, before, start + shift, cursor)
        if at is None:
            raise SeriesError(
                f"{where}: hunk @@ -{hunk.source_start},{hunk.source_length} @@ does not apply "
                "(the file differs from the one the patch was made against)"
            )
        shift = at - start
        out += lines[cursor:at]
        out += after
        cursor = at + len(before)
    out += lines[cursor:]
    return b"".join(out)


def _find(lines: list[bytes], want: list[bytes], guess: int, floor: int) -> int | None:
    n = len(want)
    limit = len(lines) - n
    for delta in range(0, max(limit, 0) + abs(guess) + 2):
        for at in (guess,) if delta == 0 else (guess - delta, guess + delta):
            if floor <= at <= limit and lines[at : at + n] == want:
                return at
        if guess - delta < floor and guess + delta > limit:
            break
    return None


# ---------------------------------------------------------------- trees and commits


def _lookup(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> tuple[pygit2.Oid, int] | None:
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id, entry.filemode


def apply_patch(repo: pygit2.Repository, tree: pygit2.Tree, patch: Patch, where: str) -> pygit2.Oid:
    """The tree `patch` makes from `tree`."""
    edits: dict[str, tuple[pygit2.Oid, int] | None] = {}
    for change in file_changes(patch.diff, where):
        here = f"{where}: {change.new_path or change.old_path}"
        old_data = b""
        old_mode = None

        def current(path: str) -> tuple[pygit2.Oid, int] | None:
            # a patch may delete a path and create it again (file <-> symlink)
            return edits[path] if path in edits else _lookup(repo, tree, path)

        if change.old_path is not None:
            found = current(change.old_path)
            if found is None:
                raise SeriesError(f"{here}: the patch changes a file that does not exist here")
            old_data, old_mode = repo[found[0]].peel(pygit2.Blob).data, found[1]
            if old_mode == TREE:
                raise SeriesError(f"{here}: is a directory here")
            exact = change.old_id is not None and str(found[0]) == change.old_id
        else:
            if current(change.new_path) is not None:  # type: ignore[arg-type]
                raise SeriesError(f"{here}: the patch creates a file that already exists")
            exact = change.old_id in (None, ZERO_ID)
        if change.new_path is None:
            edits[change.old_path] = None  # type: ignore[index]
            continue
        data = apply_hunks(old_data, change.hunks, here) if change.hunks else old_data
        oid = repo.create_blob(data)
        if exact and change.new_id is not None and change.new_id != ZERO_ID and str(oid) != change.new_id:
            raise SeriesError(
                f"{here}: the result does not match the patch's index line "
                f"({str(oid)[:12]} != {change.new_id[:12]}): corrupt patch?"
            )
        mode = change.new_mode or old_mode or BLOB
        if change.old_path is not None and change.old_path != change.new_path and not change.copy:
            edits[change.old_path] = None
        edits[change.new_path] = (oid, mode)
    if not edits:
        return tree.id
    return edit_tree(repo, tree, edits, where)


def make_commit(
    repo: pygit2.Repository, parent: pygit2.Commit, patch: Patch, committer: pygit2.Signature, where: str
) -> pygit2.Commit:
    tree = apply_patch(repo, parent.tree, patch, where)
    try:
        author = pygit2.Signature(patch.author_name, patch.author_email, patch.author_time, patch.author_offset)
    except UnicodeEncodeError:
        raise SeriesError(f"{where}: the author in 'From:' is not UTF-8 text") from None
    except (ValueError, pygit2.GitError) as exc:  # InvalidError: an empty name or email
        raise SeriesError(f"{where}: 'From:' is not an author git can store ({exc})") from None
    message = encode(patch.message)  # bytes: keeps a message that is not valid UTF-8 as it was
    oid = repo.create_commit(None, author, committer, message, tree, [parent.id])
    return repo[oid].peel(pygit2.Commit)


def read_patch_file(path: Path) -> str:
    return decode(path.read_bytes())
