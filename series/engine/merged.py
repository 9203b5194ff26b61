"""Rules that declare a topic merged upstream before it is replayed.

The rebase asks every rule, in order, for each active topic; the first verdict wins and
the topic is retired (status merged, merged_in: the new base's name) without a replay, its
branch kept. The engine's own rule, "every commit's replay came out empty", needs the
replay and is applied after it (series.engine.rebase).

A rule is a callable `rule(ctx: MergedContext) -> MergedVerdict | None`. To add one (the
upstream-PR rules: "(#N)" in upstream's subjects, squash-merged in modified form), append
it to `RULES` below, or pass `merged_rules=` to series.engine.rebase.start().

The upstream-PR rule's evidence is git's alone (pr_verdict: the squash commit, then the
PR's files compared); series.forge.retire adds the GitHub API's merge commit on top of it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

import pygit2

from series.git.repo import changed_paths
from series.git.upstream_commit import pr_number, subject_of
from series.model import Topic


@dataclass(frozen=True)
class MergedContext:
    repo: pygit2.Repository
    topic: Topic
    old_base: pygit2.Commit  # upstream.base before the rebase
    new_base: pygit2.Commit  # the REF being rebased onto
    new_base_name: str  # its resolved name (v0.31.0)
    commits: tuple[pygit2.Commit, ...]  # the topic's own commits, oldest first


@dataclass(frozen=True)
class MergedVerdict:
    reason: str  # one line for the report: what proved it
    modified: bool = False  # merged upstream in a modified form
    detail: str = ""  # e.g. the difference, for the report


MergedRule = Callable[[MergedContext], "MergedVerdict | None"]


def _pr_rules(ctx: MergedContext) -> MergedVerdict | None:
    """Upstream-PR topics: a '(#N)' subject upstream, or the PR's files squash-merged
    (pr_verdict below). Git evidence only: a rebase without --fetch uses no network."""
    if ctx.topic.upstream_pr is None:
        return None
    verdict = pr_verdict(ctx.repo, ctx.topic, ctx.old_base, ctx.new_base)
    if verdict is None:
        return None
    return MergedVerdict(verdict.reason, modified=verdict.modified, detail=verdict.diff)


RULES: list[MergedRule] = [_pr_rules]


def first_verdict(ctx: MergedContext, rules: list[MergedRule] | None = None) -> MergedVerdict | None:
    for rule in RULES if rules is None else rules:
        verdict = rule(ctx)
        if verdict is not None:
            return verdict
    return None


# -- the PR topic's evidence in git (moved here from series.forge.retire, issue 35: the engine
#    needs it, and the forge's API evidence sits above the engine and adds to it there) ------


class RetireKind(str, enum.Enum):
    MERGED = "merged"
    MODIFIED = "merged upstream in modified form"


@dataclass(frozen=True)
class RetireVerdict:
    kind: RetireKind
    reason: str  # one line: what proved it
    merge_commit: str | None = None
    diff: str = ""  # MODIFIED: adopted head -> upstream, for the PR's files

    @property
    def modified(self) -> bool:
        return self.kind == RetireKind.MODIFIED


def _subject_commit(
    repo: pygit2.Repository, number: int, old_base: pygit2.Oid, new_base: pygit2.Oid
) -> pygit2.Commit | None:
    walker = repo.walk(new_base, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(old_base)
    for commit in walker:
        if pr_number(subject_of(commit)) == number:
            return commit
    return None


def contains(repo: pygit2.Repository, tip: pygit2.Oid, commit: pygit2.Oid) -> bool:
    return tip == commit or repo.descendant_of(tip, commit)


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        entry = tree[path]
    except KeyError:
        return None
    return entry.id


def _text(repo: pygit2.Repository, oid: pygit2.Oid | None) -> bytes:
    return repo[oid].peel(pygit2.Blob).data if oid is not None else b""


def difference(repo: pygit2.Repository, adopted: pygit2.Tree, upstream: pygit2.Tree, paths: list[str]) -> str:
    """A unified diff adopted -> upstream over `paths` (empty when they agree)."""
    out = []
    for path in paths:
        a, b = _blob(adopted, path), _blob(upstream, path)
        if a == b:
            continue
        patch = pygit2.Patch.create_from(
            _text(repo, a), _text(repo, b), old_as_path=f"adopted/{path}", new_as_path=f"upstream/{path}"
        )
        out.append(patch.text or "")
    return "".join(out)


def pr_verdict(
    repo: pygit2.Repository,
    topic: Topic,
    old_base: pygit2.Commit,
    new_base: pygit2.Commit,
    *,
    replay_empty: bool = False,
) -> RetireVerdict | None:
    """The git evidence for one PR topic being rebased from old_base to new_base: upstream's
    squash commit "(#N)" in old_base..new_base (or, with `replay_empty`, every commit of the
    PR already in the new base), then the PR's files compared (compare_files). None: no
    evidence, or not a PR topic. `topic` carries upstream_pr; its branch is the adopted head
    (on old_base)."""
    if topic.upstream_pr is None:
        return None
    number = int(topic.upstream_pr)
    merge = _subject_commit(repo, number, old_base.id, new_base.id)
    if merge is None and not replay_empty:
        return None
    if merge is None:
        return RetireVerdict(RetireKind.MERGED, f"every commit of PR #{number} is already in the new base")
    reason = f"upstream commit {str(merge.id)[:12]} '{subject_of(merge)}'"
    return compare_files(repo, topic, old_base, new_base, merge, reason)


def compare_files(
    repo: pygit2.Repository,
    topic: Topic,
    old_base: pygit2.Commit,
    new_base: pygit2.Commit,
    merge: pygit2.Commit,
    reason: str,
) -> RetireVerdict:
    """Upstream merged the PR as `merge` (`reason`: what proved it): merged, or merged in
    modified form with the difference, by the PR's files."""
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
