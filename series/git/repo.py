"""pygit2 object work: open the repository, resolve refs, and diff trees by path.

`changed_paths` compares two trees by walking only the subtrees whose ids differ, so
its cost follows the size of the change, not of the vLLM tree (about 8,500 files).
"""

from __future__ import annotations

import codecs
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, cast

import pygit2

from series import validate
from series.errors import SeriesError
from series.git import releases
from series.git.command import git
from series.model import Sha

TREE_MODE = pygit2.enums.FileMode.TREE

# libgit2 keeps in its object cache only trees under 4 KiB, so a walk over upstream's
# history inflated vLLM's big directories (vllm/model_executor/models: ~300 entries)
# again at every commit, though they are the same object from one commit to the next.
# Trees up to 1 MiB are kept (within libgit2's 256 MiB cache): the walk over v0.30.0..main
# for six paths, 96-140 ms -> 40 ms.
pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, 1 << 20)


# -- a commit's text, decoded as git shows it ------------------------------------------------


def _codec(commit: pygit2.Commit) -> str:
    """The codec of a commit's `encoding` header (UTF-8 without one). One Python does not
    know ('bogus-charset', which anyone can write with git hash-object) reads as UTF-8:
    git, failing to reencode, shows the bytes as they are; pygit2's .message raises."""
    try:
        return codecs.lookup(commit.message_encoding or "utf-8").name
    except LookupError:
        return "utf-8"


def message(commit: pygit2.Commit) -> str:
    """The commit message as text (CONTRIBUTING.md rule 3: every reader of a message asks here);
    bytes the encoding cannot read become U+FFFD, as pygit2 decodes a known encoding."""
    return commit.raw_message.decode(_codec(commit), "replace")


def encode_message(text: str, encoding: str) -> bytes:
    """A rewritten message as bytes for a commit whose `encoding` header says `encoding`:
    the codec `message` read it with, so an unknown one writes UTF-8, as it was read."""
    try:
        codec = codecs.lookup(encoding or "utf-8").name
    except LookupError:
        codec = "utf-8"
    return text.encode(codec, "replace")


def subject(commit: pygit2.Commit) -> str:
    """The first line of the message, stripped."""
    return message(commit).split("\n", 1)[0].strip()


def person(commit: pygit2.Commit, who: pygit2.Signature) -> tuple[str, str]:
    """(name, email) of the commit's author or committer, decoded as `message` is."""
    codec = _codec(commit)
    return who.raw_name.decode(codec, "replace"), who.raw_email.decode(codec, "replace")


def open_repo(path: Path) -> pygit2.Repository:
    found = pygit2.discover_repository(str(path))
    if found is None:
        raise SeriesError(f"{path} is not inside a git repository")
    return pygit2.Repository(found)


def workdir(repo: pygit2.Repository) -> Path:
    return Path(repo.workdir) if repo.workdir else Path(repo.path)


def repo_path(repo: pygit2.Repository, path: str, cwd: Path) -> str:
    """A path the user typed, as a '/'-separated path from the repository root, read the
    way git reads a pathspec (the one answer for every verb that takes a PATH).

    Relative to `cwd` when that is inside the work tree (from vllm/v1, kv_offload is
    vllm/v1/kv_offload); from the root when it is not (the .git directory, a bare
    repository, a directory outside the repository with --config), as git does there.
    `cwd` is where the command runs: -C DIR's, else the process's (git -C changes the
    directory first). An absolute path must lie in the work tree; '..' is normalised and
    may not climb out of the root; a trailing '/' is kept. A path outside is an error,
    never a path that nothing touches.
    """
    if not path:
        raise SeriesError("an empty PATH", "give a path, or '.' for the whole repository")
    gitdir = Path(repo.path).resolve()
    here = os.path.abspath(cwd)
    # in a bare repository or inside .git, git reads no work tree: paths are from the root
    # and no absolute path is inside (git: "is outside repository at '.git/.'")
    tree = Path(repo.workdir).resolve() if repo.workdir and _under(gitdir, here) is None else None
    if os.path.isabs(path):
        rel = _under(tree, path) if tree is not None else None
    else:
        prefix = _under(tree, here) if tree is not None else None
        joined = posixpath.normpath(posixpath.join(prefix or ".", path))
        rel = None if joined == ".." or joined.startswith("../") else joined
    if rel is None:
        where = tree or Path(repo.workdir or gitdir).resolve()
        hint = (
            ""
            if tree is not None or not os.path.isabs(path)
            else ": a bare repository takes paths from its root"
            if not repo.workdir
            else ": in the git directory paths are from the root (or run from the work tree)"
        )
        raise SeriesError(f"path {path} is outside the repository at {where}{hint}")
    return rel + "/" if path.endswith("/") and rel != "." else rel


def _under(root: Path, path: str) -> str | None:
    """`path` (absolute) relative to `root`, or None outside it; a symlink on the way
    (the repository reached through a link) is followed when the plain path is outside."""
    for candidate in (os.path.normpath(path), os.path.realpath(path)):
        rel = os.path.relpath(candidate, root)
        if rel != ".." and not rel.startswith("../"):
            return Path(rel).as_posix()
    return None


_IDENT = re.compile(r"^(.*) <(.*)> (\d+) ([+-])(\d\d)(\d\d)$")


def signature_from_ident(ident: str) -> pygit2.Signature:
    """'Name <email> 1700000000 +0100' (git var GIT_COMMITTER_IDENT) as a signature."""
    m = _IDENT.match(ident.strip())
    if m is None:
        raise SeriesError(f"cannot read committer identity {ident!r}")
    offset = int(m.group(5)) * 60 + int(m.group(6))
    return pygit2.Signature(m.group(1), m.group(2), int(m.group(3)), -offset if m.group(4) == "-" else offset)


def committer(repo: pygit2.Repository) -> pygit2.Signature:
    """The committer git itself would record (the one answer, CONTRIBUTING.md rule 3): `git var
    GIT_COMMITTER_IDENT` honours GIT_COMMITTER_NAME/EMAIL/DATE in every date form git
    reads, user.* from every config file git reads (includes too), and git's fallbacks."""
    proc = git(workdir(repo), "var", "GIT_COMMITTER_IDENT", check=False)
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SeriesError(
            f"no committer identity ({detail})",
            "set user.name and user.email (git config --global user.name 'You'), or GIT_COMMITTER_NAME/EMAIL",
        )
    return signature_from_ident(proc.stdout)


class Abbreviations:
    """git's own abbreviations of commits (what `git rev-parse --short` and git rebase's
    labels give: core.abbrev, or a length that grows with the repository, longer where a
    prefix is ambiguous), asked for `commits` all at once the first time one is needed:
    a rebase that stops in five topics starts git once for their labels, not five times.
    (rev-parse --short takes one revision; rev-list's %h is the same abbreviation.)"""

    _BATCH = 2000  # ids per call: far below any command-line limit

    def __init__(self, repo: pygit2.Repository, commits: Iterable[pygit2.Oid] = ()):
        self.repo = repo
        self._wanted = list(dict.fromkeys(commits))
        self._known: dict[pygit2.Oid, str] = {}

    def __call__(self, oid: pygit2.Oid) -> str:
        if oid not in self._known:
            batch = [oid, *(c for c in self._wanted if c != oid and c not in self._known)][: self._BATCH]
            proc = git(
                workdir(self.repo), "rev-list", "--no-walk=unsorted", "--format=%H%x09%h", *map(str, batch), check=False
            )
            found = dict(line.split("\t") for line in proc.stdout.splitlines() if "\t" in line)
            if proc.returncode == 0 and all(str(c) in found for c in batch):
                self._known.update((c, found[str(c)]) for c in batch)
            else:  # one id git cannot read spoils the batch: ask for this one alone
                alone = git(workdir(self.repo), "rev-parse", "--short", str(oid), check=False).stdout.strip()
                self._known[oid] = alone or str(oid)[:7]
        return self._known[oid]


def resolve_commit(repo: pygit2.Repository, ref: str, what: str = "ref") -> pygit2.Commit:
    """A branch, tag, remote-tracking ref or commit, peeled to a commit. Every revision a
    user gives (--onto, --base, --between, series.yaml's base) comes through here, so the
    one rule against revisions that move by themselves (validate.stable_revision) is here."""
    validate.stable_revision(ref, what)
    try:
        obj = repo.revparse_single(ref)
        return obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        near = releases.nearest(repo, ref)
        raise SeriesError(
            f"unknown {what} '{ref}': not a branch, tag or commit here",
            f"nearest tags: {', '.join(near)}" if near else None,
        ) from None


def branch_commit(repo: pygit2.Repository, branch: str) -> pygit2.Commit | None:
    ref = repo.references.get(f"refs/heads/{branch}")
    if ref is None:
        return None
    return repo[ref.target].peel(pygit2.Commit)


def resolve_release(repo: pygit2.Repository, spec: str, remote: str = releases.UPSTREAM) -> tuple[str, pygit2.Commit]:
    """A release name (`latest`, `v0.31`: series.git.releases says which tag, among the
    upstream `remote`'s tags, never the fork's own) or any ref.

    Returns the resolved name (what series.yaml records: the tag or branch, else the full
    commit id) and its commit. An existing tag is always itself, so v0.11.0rc1 is an rc
    because it was asked for by name (and a fork's own tag is used when named exactly).
    """
    prefix = releases.shorthand(spec)
    if prefix is not None and repo.references.get(f"refs/tags/{spec}") is None:
        found = releases.newest(repo, prefix, remote=remote)
        if found is None:
            near = releases.nearest(repo, spec, remote=remote)
            listing = ", ".join(near) if near else "no release tags here; try --fetch"
            pre = releases.newest(repo, prefix, pre_releases=True, remote=remote)
            only = f"; {pre.tag} is a pre-release: name it exactly to use it" if pre else ""
            raise SeriesError(f"no release tag matches '{spec}' (nearest: {listing}{only})")
        return found.tag, resolve_commit(repo, found.tag)
    commit = resolve_commit(repo, spec)
    names = (f"refs/tags/{spec}", f"refs/heads/{spec}", f"refs/remotes/{spec}", spec)
    if any(n.startswith("refs/") and repo.references.get(n) is not None for n in names):
        return spec, commit
    # HEAD, v0.31.0~2, a sha prefix: their meaning changes over time (or is only a prefix),
    # so series.yaml gets the commit itself (the @{...} forms were refused: resolve_commit)
    return str(commit.id), commit


@dataclass(frozen=True)
class PathChange:
    """One blob-level change between two trees (a rename shows as delete + add)."""

    path: str
    old_id: pygit2.Oid | None
    new_id: pygit2.Oid | None
    old_mode: int | None
    new_mode: int | None


def named_entries(tree: pygit2.Tree | None) -> dict[str, pygit2.Object]:
    """A tree's entries by name (none for no tree)."""
    # an entry read from a tree always has a name; pygit2 types Object.name as optional
    # because an object looked up by id has none
    return {cast(str, e.name): e for e in tree} if tree is not None else {}


def changed_paths(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree | None, prefix: str = ""
) -> Iterator[PathChange]:
    """Blob paths that differ between two trees, descending only into changed subtrees."""
    old_entries, new_entries = named_entries(old), named_entries(new)
    for name in sorted(old_entries.keys() | new_entries.keys()):
        a, b = old_entries.get(name), new_entries.get(name)
        if a is not None and b is not None and a.id == b.id and a.filemode == b.filemode:
            continue
        path = f"{prefix}{name}"
        a_tree = a is not None and a.filemode == TREE_MODE
        b_tree = b is not None and b.filemode == TREE_MODE
        if a_tree or b_tree:
            yield from changed_paths(
                repo,
                repo[a.id].peel(pygit2.Tree) if a is not None and a_tree else None,
                repo[b.id].peel(pygit2.Tree) if b is not None and b_tree else None,
                f"{path}/",
            )
        if (a is not None and not a_tree) or (b is not None and not b_tree):
            yield PathChange(
                path,
                a.id if a is not None and not a_tree else None,
                b.id if b is not None and not b_tree else None,
                a.filemode if a is not None and not a_tree else None,
                b.filemode if b is not None and not b_tree else None,
            )


@dataclass(frozen=True)
class FileStat:
    path: str
    added: int
    deleted: int
    status: str  # A, M, D, T (mode change)


def _lines(repo: pygit2.Repository, oid: pygit2.Oid | None) -> bytes:
    return repo[oid].peel(pygit2.Blob).data if oid is not None else b""


def line_counts(repo: pygit2.Repository, change: PathChange) -> tuple[int, int]:
    """(+added, -deleted) lines for one changed blob; binary blobs count 0/0."""
    old, new = _lines(repo, change.old_id), _lines(repo, change.new_id)
    if b"\0" in old[:8000] or b"\0" in new[:8000]:
        return 0, 0
    patch = pygit2.Patch.create_from(old, new)
    _, added, deleted = patch.line_stats
    return added, deleted


def file_stat(repo: pygit2.Repository, change: PathChange) -> FileStat:
    status = (
        "A"
        if change.old_id is None
        else "D"
        if change.new_id is None
        else ("T" if change.old_id == change.new_id else "M")
    )
    added, deleted = line_counts(repo, change)
    return FileStat(change.path, added, deleted, status)


def file_stats(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> list[FileStat]:
    return [file_stat(repo, change) for change in changed_paths(repo, old, new)]


def commits_between(repo: pygit2.Repository, base: pygit2.Oid, head: pygit2.Oid) -> list[pygit2.Commit]:
    """base..head, oldest first (parents before children)."""
    walker = repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    walker.hide(base)
    return list(walker)


def sha(oid: pygit2.Oid | str) -> Sha:
    return Sha(str(oid))


def upstream_tips(repo: pygit2.Repository, remote: str) -> list[pygit2.Oid]:
    """Commits of upstream's history as this clone knows it: upstream's line (its main and
    release branches) and its version tags (series.git.releases says which are upstream's).

    Not the remote's other branches: a fork cloned as the upstream remote carries its own
    integration branch (HabanaAI's habana_main), whose history holds the topics' commits,
    and hiding it would leave every topic empty (`touches` exit 1, "not touched"). Nor the
    pull request heads fetched into refs/remotes/<remote>/pr/N: a PR is a proposal, not
    upstream history (and may be our own topic, posted upstream). Nor a fork's own tags
    (v0.31.0+fork.2, or v0.6.6.post2 on a branch of its own): they would hide its commits.
    """
    tips = releases.upstream_line(repo, remote)
    for found in releases.version_tags(repo, remote):
        try:
            tips.append(repo.references[f"refs/tags/{found.tag}"].peel(pygit2.Commit).id)
        except (KeyError, pygit2.GitError, pygit2.InvalidSpecError, ValueError):
            continue
    return tips


def edit_tree(
    repo: pygit2.Repository, tree: pygit2.Tree | None, changes: dict[str, tuple[pygit2.Oid, int] | None], where: str
) -> pygit2.Oid:
    """`tree` with blobs set (None deletes), rebuilding only the touched subtrees.

    For building a few commits (import, the demo); the rebase engine has its own
    in-memory object store (series.engine.odb) for the hot path. `where` names the
    input in errors (a patch file, say).
    """
    here: dict[str, tuple[pygit2.Oid, int] | None] = {}
    below: dict[str, dict[str, tuple[pygit2.Oid, int] | None]] = {}
    for path, value in changes.items():
        head, _, rest = path.partition("/")
        if rest:
            below.setdefault(head, {})[rest] = value
        else:
            here[head] = value
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    present = {e.name: e for e in tree} if tree is not None else {}
    for name, value in here.items():
        if value is None:
            if name in present and name not in below:
                builder.remove(name)
                present.pop(name)
        else:
            if name in below:
                raise SeriesError(f"{where}: '{name}' is written both as a file and a directory")
            builder.insert(name, value[0], value[1])
    for name, sub in below.items():
        existing = present.get(name)
        if existing is not None and existing.filemode != TREE_MODE and here.get(name, ...) is not None:
            raise SeriesError(f"{where}: '{name}' is a file, not a directory")
        subtree = (
            repo[existing.id].peel(pygit2.Tree) if existing is not None and existing.filemode == TREE_MODE else None
        )
        oid = edit_tree(repo, subtree, sub, where)
        if len(repo[oid].peel(pygit2.Tree)) == 0:
            if name in present:
                builder.remove(name)
        else:
            builder.insert(name, oid, TREE_MODE)
    return builder.write()
