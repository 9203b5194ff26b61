"""Has upstream merged a PR topic? Asked by the rebase for every topic with upstream_pr.

Evidence, strongest first: the API says the merge commit is in the new base; upstream's
history between the old and the new base holds a commit whose subject ends in "(#N)"
(GitHub's squash-merge subject). An empty replay is the rebase's own finding and is passed
in. Then, the final form: GitHub squash-merges often carry review changes the adopted head
lacks, so the PR's files are compared as trees (not patch-ids, which any edit breaks)
between what upstream merged and the adopted head. Equal: "merged". Different: "merged
upstream in modified form", with the difference as a diff, so the maintainer can see
whether anything of the adopted version is lost when the topic retires.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

import pygit2

from series.analysis.attribution import pr_number, subject_of
from series.forge.base import Forge, ForgeUnreachable
from series.git.repo import changed_paths
from series.model import Topic

class RetireKind(str, enum.Enum):
    MERGED = "merged"
    MODIFIED = "merged upstream in modified form"


@dataclass(frozen=True)
class RetireVerdict:
    kind: RetireKind
    reason: str                     # one line: what proved it
    merge_commit: str | None = None
    diff: str = ""                  # MODIFIED: adopted head -> upstream, for the PR's files

    @property
    def modified(self) -> bool:
        return self.kind == RetireKind.MODIFIED


def _subject_commit(repo: pygit2.Repository, number: int, old_base: pygit2.Oid,
                    new_base: pygit2.Oid) -> pygit2.Commit | None:
    walker = repo.walk(new_base, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(old_base)
    for commit in walker:
        if pr_number(subject_of(commit)) == number:
            return commit
    return None


def _contains(repo: pygit2.Repository, tip: pygit2.Oid, commit: pygit2.Oid) -> bool:
    return tip == commit or repo.descendant_of(tip, commit)


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id


def _text(repo: pygit2.Repository, oid: pygit2.Oid | None) -> bytes:
    return repo[oid].peel(pygit2.Blob).data if oid is not None else b""


def difference(repo: pygit2.Repository, adopted: pygit2.Tree, upstream: pygit2.Tree,
               paths: list[str]) -> str:
    """A unified diff adopted -> upstream over `paths` (empty when they agree)."""
    out = []
    for path in paths:
        a, b = _blob(adopted, path), _blob(upstream, path)
        if a == b:
            continue
        patch = pygit2.Patch.create_from(
            _text(repo, a), _text(repo, b),
            old_as_path=f"adopted/{path}", new_as_path=f"upstream/{path}")
        out.append(patch.text or "")
    return "".join(out)


def check(repo: pygit2.Repository, topic: Topic, old_base: pygit2.Commit,
          new_base: pygit2.Commit, forge: Forge | None = None, *,
          replay_empty: bool = False) -> RetireVerdict | None:
    """The verdict for one PR topic being rebased from old_base to new_base, or None.

    `topic` must carry upstream_pr; its branch is the adopted head (on old_base).
    """
    if topic.upstream_pr is None:
        return None
    number = int(topic.upstream_pr)
    merge: pygit2.Commit | None = None
    reason = ""
    if forge is not None:
        try:
            pr = forge.pull(topic.upstream_pr)
        except ForgeUnreachable:
            pr = None  # the git evidence below still holds
        if pr is not None and pr.merged and pr.merge_commit:
            try:
                candidate = repo[pr.merge_commit].peel(pygit2.Commit)
            except (KeyError, ValueError):
                candidate = None
            if candidate is not None and _contains(repo, new_base.id, candidate.id) \
                    and not _contains(repo, old_base.id, candidate.id):
                merge = candidate
                reason = f"GitHub: PR #{number} merged as {str(candidate.id)[:12]}, contained in the new base"
    if merge is None:
        merge = _subject_commit(repo, number, old_base.id, new_base.id)
        if merge is not None:
            subject = subject_of(merge)
            reason = f"upstream commit {str(merge.id)[:12]} '{subject}'"
    if merge is None and not replay_empty:
        return None
    if merge is None:
        return RetireVerdict(RetireKind.MERGED, f"every commit of PR #{number} is already in the new base")

    ref = repo.references.get(f"refs/heads/{topic.branch}")
    if ref is None:
        return RetireVerdict(RetireKind.MERGED, reason, str(merge.id))
    head = ref.peel(pygit2.Commit)
    # The PR's files: what the adopted head changes over the base it sits on. (Not the
    # topic's own work, series.topics: an adopted head may still be the PR's own commits,
    # reachable from an upstream ref, which own work hides as upstream's history.)
    fork_point = repo.merge_base(old_base.id, head.id)
    start = repo[fork_point].peel(pygit2.Commit) if fork_point is not None else old_base
    paths = [c.path for c in changed_paths(repo, start.tree, head.tree)]
    # Upstream's form of the PR's files: at the merge commit (later upstream edits to the
    # same files are not the PR's), or at the new base, whichever agrees with the head.
    for upstream_tree in (merge.tree, new_base.tree):
        if not difference(repo, head.tree, upstream_tree, paths):
            return RetireVerdict(RetireKind.MERGED, reason, str(merge.id))
    return RetireVerdict(RetireKind.MODIFIED, reason, str(merge.id), difference(repo, head.tree, merge.tree, paths))
