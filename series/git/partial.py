"""Partial (blobless) and shallow clones: what libgit2 cannot do for itself.

Big repositories like vLLM are often cloned with `git clone --filter=blob:none`: commits
and trees are local, file contents come from the promisor remote when git needs them.
libgit2 reads the local object store only, so a blob it was never given is a crash deep
inside a diff. Before series reads file contents, the blobs a command needs are listed
from the trees (present in a blobless clone) and fetched in one batch through git, the
way git's own lazy fetch does it (promisor-remote.c: a noop-negotiation `fetch --stdin`
of object ids), with the user's credentials and transport. If that fails, or a clone
lacks trees too (tree:0), the command is refused with how to get a full clone.

A shallow clone cannot tell a topic's own commits from upstream's when the history
between them is cut off; the refusal says how deep the clone must be.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import pygit2

from series.errors import SeriesError
from series.git.command import git
from series.validate import remote_name

_MAX_WALK = 20000  # commits per topic: beyond that, a topic is not what series manages


def promisor_remotes(repo: pygit2.Repository) -> list[str]:
    """The remotes git fetches missing objects from (extensions.partialClone, promisor)."""
    found: list[str] = []
    cfg = repo.config
    try:
        main = cfg["extensions.partialClone"]
        if isinstance(main, str) and main:
            found.append(main)
    except KeyError:
        pass
    for entry in cfg:
        name = entry.name
        m = re.fullmatch(r"remote\.(.+)\.promisor", name)
        if m and str(entry.value).lower() in ("true", "yes", "on", "1") and m.group(1) not in found:
            found.append(m.group(1))
    return found


def is_partial(repo: pygit2.Repository) -> bool:
    return bool(promisor_remotes(repo))


def full_clone_hint(remote: str) -> str:
    return (
        f"make it a full clone with 'git config --unset remote.{remote}.partialclonefilter && "
        f"git config --unset remote.{remote}.promisor && git fetch --refetch {remote}' "
        "(or clone again without --filter)"
    )


def _blob_at(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id if entry.type_str == "blob" else None


def _changes(
    repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree
) -> Iterable[tuple[str, pygit2.Oid | None, pygit2.Oid | None]]:
    """(path, old blob, new blob) for each changed file: tree entries only, no contents."""
    for delta in old.diff_to_tree(new).deltas:
        old_id = delta.old_file.id if delta.old_file.id != pygit2.Oid(hex="0" * 40) else None
        new_id = delta.new_file.id if delta.new_file.id != pygit2.Oid(hex="0" * 40) else None
        yield delta.new_file.path or delta.old_file.path, old_id, new_id


def needed_blobs(
    repo: pygit2.Repository, base: pygit2.Commit, heads: Iterable[pygit2.Commit], onto: pygit2.Commit | None = None
) -> set[pygit2.Oid]:
    """Blobs of every file a topic commit changes: both sides of each commit, and the file
    at the base, at the head and at `onto` (a rebase merges against it). If upstream
    removed such a file by `onto`, the files it added too (rename candidates)."""
    oids: set[pygit2.Oid] = set()
    paths: set[str] = set()
    tips = list(heads)
    for head in tips:
        walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL)
        stop = repo.merge_base(base.id, head.id)
        if stop is not None:
            walker.hide(stop)
        for count, commit in enumerate(walker):
            if count >= _MAX_WALK:
                break
            parent = commit.parents[0].tree if commit.parents else None
            if parent is None:
                continue
            for path, old_id, new_id in _changes(repo, parent, commit.tree):
                paths.add(path)
                oids.update(o for o in (old_id, new_id) if o is not None)
    sides = [base.tree, *(h.tree for h in tips)] + ([onto.tree] if onto is not None else [])
    for path in paths:
        for tree in sides:
            found = _blob_at(tree, path)
            if found is not None:
                oids.add(found)
    if onto is not None and any(_blob_at(onto.tree, p) is None for p in paths):
        for _, _, new_id in _changes(repo, base.tree, onto.tree):
            if new_id is not None:
                oids.add(new_id)
    return oids


def missing(repo: pygit2.Repository, oids: Iterable[pygit2.Oid]) -> list[pygit2.Oid]:
    odb = repo.odb
    return [oid for oid in oids if not odb.exists(oid)]


def fetch_objects(repo: pygit2.Repository, oids: list[pygit2.Oid]) -> None:
    """Fetch objects by id from the promisor remote, as git's lazy fetch does."""
    remotes = promisor_remotes(repo)
    if not remotes:
        return
    remote = remote_name(remotes[0], "the partial clone's promisor remote")
    root = Path(repo.workdir or repo.path)
    proc = git(
        root,
        "-c",
        "fetch.negotiationAlgorithm=noop",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--recurse-submodules=no",
        "--filter=blob:none",
        "--stdin",
        "--end-of-options",
        remote,
        input="".join(f"{oid}\n" for oid in oids),
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise SeriesError(
            f"this is a partial clone and fetching the {len(oids)} file version(s) "
            f"series needs from {remote} failed ({last})",
            full_clone_hint(remote),
        )


def ensure_blobs(
    repo: pygit2.Repository, base: pygit2.Commit, heads: Iterable[pygit2.Commit], onto: pygit2.Commit | None = None
) -> int:
    """In a partial clone, fetch the blobs the topics need; return how many were fetched."""
    if not is_partial(repo):
        return 0
    return ensure_objects(repo, needed_blobs(repo, base, heads, onto))


def ensure_objects(repo: pygit2.Repository, oids: Iterable[pygit2.Oid]) -> int:
    """In a partial clone, fetch those of `oids` it lacks in one batch (a command that reads
    more than the active topics' blobs, e.g. touches --all or --between); return how many
    were fetched. Fails with how to get a full clone when the promisor cannot serve them."""
    if not is_partial(repo):
        return 0
    want = missing(repo, oids)
    if not want:
        return 0
    fetch_objects(repo, want)
    fresh = pygit2.Repository(repo.path)  # a new pack: a fresh odb sees it
    still = missing(fresh, want)
    if still:
        remote = promisor_remotes(repo)[0]
        raise SeriesError(
            f"this is a partial clone and {len(still)} file version(s) series needs "
            f"(e.g. {str(still[0])[:12]}) are not served by {remote}",
            full_clone_hint(remote),
        )
    return len(want)


def check_shallow(
    repo: pygit2.Repository, base: pygit2.Commit, heads: Iterable[pygit2.Commit], base_name: str, remote: str
) -> None:
    """In a shallow clone, refuse when a topic's history back to the base is cut off,
    saying how deep it must be."""
    if not repo.is_shallow:
        return
    for head in heads:
        if repo.merge_base(base.id, head.id) is not None:
            continue
        depth = sum(1 for _ in repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL))
        when = base.commit_time
        import datetime

        since = datetime.datetime.fromtimestamp(when, datetime.timezone.utc).strftime("%Y-%m-%d")
        raise SeriesError(
            f"this is a shallow clone: the history of {str(head.id)[:12]} holds {depth} commit(s) and "
            f"never reaches {base_name}; series needs a depth of more than {depth}, back to {base_name}",
            f"run 'git fetch --shallow-since={since} {remote}' (or 'git fetch --unshallow {remote}')",
        )


def explain(exc: BaseException, start: Path) -> str | None:
    """A missing-object crash in a partial or shallow clone, as a message; else None."""
    text = str(exc)
    looks_missing = (isinstance(exc, KeyError) and re.fullmatch(r"'?[0-9a-f]{40}'?", text)) or (
        isinstance(exc, pygit2.GitError)
        and re.search(r"object not found|unable to read (tree|blob)", text, re.IGNORECASE) is not None
    )
    if not looks_missing:
        return None
    try:
        repo = pygit2.Repository(pygit2.discover_repository(str(start)) or "")
    except (pygit2.GitError, KeyError, ValueError, TypeError):
        return None
    if is_partial(repo):
        remote = promisor_remotes(repo)[0]
        return (
            f"this is a partial clone and series needed an object it does not have "
            f"({text.strip(chr(39))[:12]}); libgit2 cannot fetch on demand: {full_clone_hint(remote)}"
        )
    if repo.is_shallow:
        return (
            f"this is a shallow clone and series needed a commit it does not have "
            f"({text.strip(chr(39))[:12]}); deepen it with 'git fetch --unshallow'"
        )
    return None
