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

A squash the new base also reverts (`Revert "... (#N)" (#M)`, GitHub's title-only revert,
"This reverts commit <squash>": series.git.upstream_commit.RevertReader, the reading the
follow-ups report uses) is no evidence: upstream no longer has the change. The verdict
is then `reverted`: the topic is not retired but replayed as git replays it, and the
verdict's reason goes to the report. A revert reverted in turn (a reland by GitHub's
button) lands the PR again; after a revert nothing recognised relands, the new base holding
the PR's files as adopted still proves it merged (a reland under a new title).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable

import pygit2

from series.git.repo import changed_paths
from series.git.upstream_commit import RevertReader, history_of, pr_number, revert_chain, reverted_subject, subject_of
from series.model import Topic


@dataclass(frozen=True)
class MergedContext:
    repo: pygit2.Repository
    topic: Topic
    old_base: pygit2.Commit  # upstream.base before the rebase
    new_base: pygit2.Commit  # the REF being rebased onto
    new_base_name: str  # its resolved name (v0.31.0)
    commits: tuple[pygit2.Commit, ...]  # the topic's own commits, oldest first
    github: str | None = None  # upstream's owner/name: the PR URLs a revert may name


@dataclass(frozen=True)
class MergedVerdict:
    reason: str  # one line for the report: what proved it
    modified: bool = False  # merged upstream in a modified form
    detail: str = ""  # e.g. the difference, for the report
    # proven NOT merged: upstream merged it and then reverted it. The topic is replayed, not
    # retired; `reason` says so in the report (no later rule is asked: this one knows)
    reverted: bool = False


MergedRule = Callable[[MergedContext], "MergedVerdict | None"]


def _pr_rules(ctx: MergedContext) -> MergedVerdict | None:
    """Upstream-PR topics: a '(#N)' subject upstream, or the PR's files squash-merged
    (pr_verdict below). Git evidence only: a rebase without --fetch uses no network."""
    if ctx.topic.upstream_pr is None:
        return None
    verdict = pr_verdict(ctx.repo, ctx.topic, ctx.old_base, ctx.new_base, github=ctx.github)
    if verdict is None:
        return None
    if verdict.kind is RetireKind.REVERTED:
        return MergedVerdict(verdict.reason, reverted=True)
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
    REVERTED = "merged upstream, then reverted"  # not merged: the topic is not retired


@dataclass(frozen=True)
class RetireVerdict:
    kind: RetireKind
    reason: str  # one line: what proved it
    merge_commit: str | None = None
    diff: str = ""  # MODIFIED: adopted head -> upstream, for the PR's files

    @property
    def modified(self) -> bool:
        return self.kind == RetireKind.MODIFIED

    @property
    def retires(self) -> bool:
        """Whether the topic is merged upstream (a REVERTED verdict proves it is not)."""
        return self.kind is not RetireKind.REVERTED


def _subject_commit(
    repo: pygit2.Repository, number: int, old_base: pygit2.Oid, new_base: pygit2.Oid
) -> pygit2.Commit | None:
    walker = repo.walk(new_base, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(old_base)
    for commit in walker:
        subject = subject_of(commit)
        # a revert typed without its own number ('Revert "x (#N)', its quote unclosed) ends
        # in "(#N)" too: it is no landing
        if pr_number(subject) == number and reverted_subject(subject) is None:
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
    github: str | None = None,
) -> RetireVerdict | None:
    """The git evidence for one PR topic being rebased from old_base to new_base: upstream's
    squash commit "(#N)" in old_base..new_base (or, with `replay_empty`, every commit of the
    PR already in the new base), then its reverts (landed_verdict). None: no evidence, or not
    a PR topic. `topic` carries upstream_pr; its branch is the adopted head (on old_base).
    `github`: upstream's owner/name, the PR URLs a revert's message may name."""
    if topic.upstream_pr is None:
        return None
    number = int(topic.upstream_pr)
    merge = _subject_commit(repo, number, old_base.id, new_base.id)
    if merge is None and not replay_empty:
        return None
    if merge is None:
        return RetireVerdict(RetireKind.MERGED, f"every commit of PR #{number} is already in the new base")
    reason = f"upstream commit {str(merge.id)[:12]} '{subject_of(merge)}'"
    return landed_verdict(repo, topic, old_base, new_base, merge, reason, RevertReader.of(github))


def landed_verdict(
    repo: pygit2.Repository,
    topic: Topic,
    old_base: pygit2.Commit,
    new_base: pygit2.Commit,
    merge: pygit2.Commit,
    reason: str,
    reader: RevertReader,
) -> RetireVerdict:
    """Upstream merged the PR as `merge` (`reason`: what proved it), in the new base. Unless
    the new base reverts it too: then each revert is followed by its own revert (a reland),
    while there is one. Landed in the end: compare_files, against the last landing. Reverted
    in the end: REVERTED, unless the new base holds the PR's files as the adopted head has
    them (relanded in a form no revert names: merged, as the files say)."""
    # the PR, then each revert by the PR its subject names (a revert pushed without one: None)
    number = int(topic.upstream_pr) if topic.upstream_pr is not None else None
    chain = revert_chain(repo, reader, merge, number, new_base)
    if len(chain) == 1:
        return compare_files(repo, topic, old_base, new_base, merge, reason)
    history = history_of(chain)
    if len(chain) % 2 == 1:  # a revert reverted: the PR landed again
        return compare_files(repo, topic, old_base, new_base, chain[-1], f"{reason}, {history}")
    held = _pr_files(repo, topic, old_base)
    if held is not None and not difference(repo, held[0].tree, new_base.tree, held[1]):
        return RetireVerdict(
            RetireKind.MERGED, f"{reason}, {history}; the new base holds the PR's files as adopted", str(merge.id)
        )
    pr = f"PR #{int(topic.upstream_pr)}" if topic.upstream_pr is not None else "the PR"
    merged = f"{str(merge.id)[:12]} '{subject_of(merge)}'"
    return RetireVerdict(
        RetireKind.REVERTED,
        f"{pr} was merged upstream as {merged}, then {history}: not merged, the new base reverts it",
        str(merge.id),
    )


def _pr_files(repo: pygit2.Repository, topic: Topic, old_base: pygit2.Commit) -> tuple[pygit2.Commit, list[str]] | None:
    """The adopted head and the PR's files: what the head changes over the base it sits on.
    (Not the topic's own work, series.topics: an adopted head may still be the PR's own
    commits, reachable from an upstream ref, which own work hides as upstream's history.)
    None: the topic's branch is gone."""
    ref = repo.references.get(f"refs/heads/{topic.branch}")
    if ref is None:
        return None
    head = ref.peel(pygit2.Commit)
    fork_point = repo.merge_base(old_base.id, head.id)
    start = repo[fork_point].peel(pygit2.Commit) if fork_point is not None else old_base
    return head, [c.path for c in changed_paths(repo, start.tree, head.tree)]


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
    held = _pr_files(repo, topic, old_base)
    if held is None:
        return RetireVerdict(RetireKind.MERGED, reason, str(merge.id))
    head, paths = held
    # Upstream's form of the PR's files: at the merge commit (later upstream edits to the
    # same files are not the PR's), or at the new base, whichever agrees with the head.
    for upstream_tree in (merge.tree, new_base.tree):
        if not difference(repo, head.tree, upstream_tree, paths):
            return RetireVerdict(RetireKind.MERGED, reason, str(merge.id))
    return RetireVerdict(RetireKind.MODIFIED, reason, str(merge.id), difference(repo, head.tree, merge.tree, paths))
