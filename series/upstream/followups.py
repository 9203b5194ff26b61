"""What upstream did after a PR the series carries: follow-up fixes and reverts.

A PR a topic records (Topic.upstream_pr: adopted, or proposed by us), and every topic
superseded by that topic, keeps living upstream after it merges: "[Bugfix] Fix for #N ...
(#M)", "follow-up to #N", `Revert "... (#N)" (#M)`, "This reverts #N", or git's "This
reverts commit <sha>" naming its squash commit. A fork carrying the PR must take those too.

Git alone (no network): one revwalk of upstream's trunk (series.git.releases.trunk_ref:
<remote>/main, else master), from its tip back to the oldest point a tracked PR can have
merged after (the series base, or where the adopted head or the topic's branch left trunk,
whichever is older: a topic retired as merged keeps its branch where it was).
A bytes regex naming only the tracked numbers runs over each raw message; the few commits
it matches are decoded and classified. A PR's follow-ups are trunk's commits after its
squash ("(#N)" at the end of a subject, series.git.upstream_commit), other than the squash
itself; when trunk has no squash of it in that range (not merged yet, or merged before the
base) they are the commits the base does not contain.

Carried: the base contains the commit, or an active topic has a commit with the same
patch-id (libgit2's, which is git's `patch-id --stable`), or an active topic's commit
message names it (its sha, as `cherry-pick -x` writes, or its own PR "#M").

The revert warning (`series status`, the nightly), for a revert R of PR #N that topic T
records: no topic carries R, and
  - T is active: T replays #N, which upstream reverted (in the base already or not), or
  - T is not active (merged, dropped, superseded) and the base has #N's squash but not R.
Otherwise the fork does not ship #N, or ships its revert too. Topics superseded by T are
named with it (they were replaced by what upstream took back).
"""

from __future__ import annotations

import enum
import re
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import pygit2

from series.git.releases import trunk_ref
from series.git.repo import branch_commit, message, subject
from series.git.upstream_commit import (
    RevertReader,
    UpstreamCommit,
    pr_number,
    pr_reference,
    pr_title,
    revert_chain,
    reverted_subject,
)
from series.model import PRNumber, Series, Status, Topic
from series.persisted import Json
from series.topics import OwnWork
from series.workspace import Workspace

OwnOf = Callable[[Topic], "OwnWork | None"]


class FollowUpKind(str, enum.Enum):
    REVERT = "revert"  # Revert "... (#N)", This reverts #N, This reverts commit <squash>
    FIX = "fix"  # Fix for #N, fixes #N, regression from #N, broken by #N
    FOLLOW_UP = "follow-up"  # follow-up to #N


class Carried(str, enum.Enum):
    BASE = "base"  # upstream.base contains it
    PATCH_ID = "patch-id"  # an active topic has a commit with its patch-id
    NAMED = "named"  # an active topic's commit message names its sha or its PR


@dataclass(frozen=True)
class FollowUp:
    pr: PRNumber  # the PR it follows up (its own PR is commit.pr)
    kind: FollowUpKind
    commit: UpstreamCommit
    carried: Carried | None  # None: the series does not carry it
    carried_by: str | None = None  # the topic, for PATCH_ID and NAMED
    relanded_by: UpstreamCommit | None = None  # a revert that trunk reverted in turn

    @property
    def moot(self) -> bool:
        """A revert trunk reverted in turn (a reland): upstream has the PR again, there is
        nothing to carry and nothing to warn about."""
        return self.kind is FollowUpKind.REVERT and self.relanded_by is not None

    def sentence(self) -> str:
        where = {
            None: "not carried",
            Carried.BASE: "in the base",
            Carried.PATCH_ID: f"carried by {self.carried_by} (same patch-id)",
            Carried.NAMED: f"carried by {self.carried_by} (its message names it)",
        }[self.carried]
        said = f"{self.kind.value} of #{self.pr}: {self.commit.sha[:12]} '{self.commit.subject}': {where}"
        if self.relanded_by is not None:
            said += f"; relanded by {self.relanded_by.label} ({self.relanded_by.sha[:12]})"
        return said

    def to_json(self) -> dict[str, Json]:
        return {
            "pr": int(self.pr),
            "kind": self.kind.value,
            "commit": self.commit.to_json(),
            "carried": self.carried.value if self.carried is not None else None,
            "carried_by": self.carried_by,
            "relanded_by": self.relanded_by.to_json() if self.relanded_by is not None else None,
        }


@dataclass(frozen=True)
class TrackedPR:
    """A PR a topic records, and what upstream's trunk did with it and after it."""

    pr: PRNumber
    topic: str  # the topic whose upstream_pr it is
    status: Status  # that topic's
    superseded: tuple[str, ...]  # topics superseded by that topic
    merge: UpstreamCommit | None  # its squash on trunk, in the range walked
    merge_in_base: bool  # the base has its squash (a topic retired as merged: yes)
    followups: tuple[FollowUp, ...]  # newest first

    def warnings(self) -> list[str]:
        """The revert warnings (the module docstring's rule), one sentence each."""
        out = []
        for fu in self.followups:
            if fu.kind is not FollowUpKind.REVERT or fu.carried in (Carried.PATCH_ID, Carried.NAMED) or fu.moot:
                continue
            replaced = f" (it superseded {', '.join(self.superseded)})" if self.superseded else ""
            revert = f"{fu.commit.label} ({fu.commit.sha[:12]})" if fu.commit.pr is not None else fu.commit.label
            if self.status is Status.ACTIVE and fu.carried is Carried.BASE:
                out.append(
                    f"#{self.pr} reverted by {revert}, which the base has; topic {self.topic} "
                    f"still replays #{self.pr}{replaced}: drop it, or keep it knowingly"
                )
            elif self.status is Status.ACTIVE:
                out.append(
                    f"#{self.pr} reverted upstream by {revert}, not in the base yet; topic "
                    f"{self.topic} still carries it{replaced}: drop it, or keep it knowingly"
                )
            elif self.merge_in_base and fu.carried is None:
                out.append(
                    f"#{self.pr} reverted upstream by {revert}; the base has #{self.pr} (topic "
                    f"{self.topic}, {self.status.value}{replaced}) but not the revert: rebase past "
                    f"it, or carry it as a topic"
                )
        return out

    def to_json(self) -> dict[str, Json]:
        return {
            "pr": int(self.pr),
            "topic": self.topic,
            "status": self.status.value,
            "superseded": list(self.superseded),
            "merge": self.merge.to_json() if self.merge is not None else None,
            "merge_in_base": self.merge_in_base,
            "followups": [f.to_json() for f in self.followups],
            "warnings": list(self.warnings()),
        }


@dataclass(frozen=True)
class FollowUps:
    trunk: str | None  # "upstream/main"; None: neither main nor master fetched, nothing read
    walked: int  # trunk commits read
    seconds: float  # the walk's time (reading trunk's messages)
    prs: tuple[TrackedPR, ...]

    def uncarried(self) -> list[tuple[TrackedPR, FollowUp]]:
        return [(p, f) for p in self.prs for f in p.followups if f.carried is None and not f.moot]

    def warnings(self) -> dict[str, list[str]]:
        """Topic name -> its revert warnings (a superseded topic gets its replacement's)."""
        out: dict[str, list[str]] = {}
        for p in self.prs:
            for text in p.warnings():
                for name in (p.topic, *p.superseded):
                    out.setdefault(name, []).append(text)
        return out

    def to_json(self) -> dict[str, Json]:
        return {"trunk": self.trunk, "walked": self.walked, "prs": [p.to_json() for p in self.prs]}


# -- reading a message ----------------------------------------------------------------------


@dataclass(frozen=True)
class _Readers:
    reverts: RevertReader
    fixes: re.Pattern[str]
    follows: re.Pattern[str]
    names: re.Pattern[str]

    @classmethod
    def of(cls, github: str | None) -> "_Readers":
        ref = pr_reference(github)
        flags = re.IGNORECASE
        return cls(
            RevertReader.of(github),
            re.compile(
                rf"(?:\b(?:fix(?:es|ed|ing)?|hotfix(?:es)?|fixup)\s+(?:(?:for|to|of|on|after)\s+)?"
                rf"(?:PR\s+)?|\bregression\s+(?:from|in|of|introduced\s+(?:by|in))\s+|"
                rf"\bbroken\s+(?:by|in)\s+){ref}",
                flags,
            ),
            re.compile(rf"\bfollow[- ]?ups?\s+(?:(?:to|of|for|on)\s+)?(?:PR\s+)?{ref}", flags),
            re.compile(ref),
        )


_TAGS = re.compile(r"^(?:\s*\[[^\]]*\])+")
# a fix word in a subject ('[Model] Fix regressions from #8346', 'Fix incompatibility between
# #7902 and #7230', 'Fix incorrect docs from #7615': vLLM's own): every PR it names is fixed
_FIX_WORD = re.compile(r"\b(?:fix(?:es|ed|ing)?|hotfix(?:es)?|fixup|regressions?)\b", re.IGNORECASE)
_REVERTS_COMMIT_RAW = re.compile(rb"reverts\s+commit\s", re.IGNORECASE)
_HEX_WORD = re.compile(r"\b[0-9a-f]{7,40}\b")


def _numbers(pattern: re.Pattern[str], text: str) -> set[int]:
    return {int(m.group(1)) for m in pattern.finditer(text)}


def classify(
    readers: _Readers, text: str, number: int, merge_sha: str | None, merge_subject: str | None = None
) -> FollowUpKind | None:
    """What a commit message is to PR `number` (whose squash is `merge_sha` with subject
    `merge_subject`, when known): a revert, a fix, a follow-up, or nothing. A revert
    outranks a fix, a fix a follow-up."""
    # GitHub's Revert button quotes the PR's title, without its number ('Revert "[Misc]
    # Disable guided decoding for mistral tokenizer" (#8593)' reverted #8521): the one reading
    if readers.reverts.reverts(text, number, merge_sha, merge_subject):
        return FollowUpKind.REVERT
    first = text.split("\n", 1)[0].strip()
    quoted = reverted_subject(first)
    if quoted is not None and pr_number(quoted) is not None:
        # the revert of another PR (a fix of this one, say) follows this one up
        named = _numbers(readers.fixes, text) | _numbers(readers.follows, text)
        return FollowUpKind.FOLLOW_UP if number in named else None
    if number in _numbers(readers.fixes, text):
        return FollowUpKind.FIX
    untagged = pr_title(_TAGS.sub("", first))
    if _FIX_WORD.search(untagged) and number in _numbers(readers.names, untagged):
        return FollowUpKind.FIX
    if number in _numbers(readers.follows, text):
        return FollowUpKind.FOLLOW_UP
    return None


# -- the walk -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Tracked:
    pr: PRNumber
    topic: Topic
    superseded: tuple[str, ...]


def tracked(series: Series) -> list[_Tracked]:
    """Every topic that records an upstream PR, with the topics it superseded."""
    return [
        _Tracked(
            t.upstream_pr,
            t,
            tuple(s.name for s in series.topics if s.status is Status.SUPERSEDED and s.superseded_by == t.name),
        )
        for t in series.topics
        if t.upstream_pr is not None
    ]


def _commit(repo: pygit2.Repository, sha: str | None) -> pygit2.Commit | None:
    if not sha:
        return None
    try:
        return repo[sha].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def _patch_id(repo: pygit2.Repository, commit: pygit2.Commit) -> pygit2.Oid | None:
    if len(commit.parents) != 1:
        return None
    return repo.diff(commit.parents[0], commit).patchid


class _Carriers:
    """What the active topics carry: their own commits' patch-ids and what their messages
    name, read when first asked (most nights nothing needs it)."""

    def __init__(self, repo: pygit2.Repository, series: Series, own: OwnOf, readers: _Readers) -> None:
        self.repo, self.series, self.own, self.readers = repo, series, own, readers
        self._read: tuple[dict[pygit2.Oid, str], list[tuple[str, set[int], set[str]]]] | None = None

    def _topics(self) -> tuple[dict[pygit2.Oid, str], list[tuple[str, set[int], set[str]]]]:
        if self._read is None:
            patch_ids: dict[pygit2.Oid, str] = {}
            named: list[tuple[str, set[int], set[str]]] = []
            for topic in self.series.active():
                own = self.own(topic)
                for commit in own.commits if own is not None else ():
                    pid = _patch_id(self.repo, commit)
                    if pid is not None:
                        patch_ids.setdefault(pid, topic.name)
                    text = message(commit)
                    named.append(
                        (topic.name, _numbers(self.readers.names, text), {m.group(0) for m in _HEX_WORD.finditer(text)})
                    )
            self._read = patch_ids, named
        return self._read

    def carrier(self, commit: pygit2.Commit, own_pr: int | None) -> tuple[Carried, str] | None:
        patch_ids, named = self._topics()
        pid = _patch_id(self.repo, commit)
        if pid is not None and pid in patch_ids:
            return Carried.PATCH_ID, patch_ids[pid]
        sha = str(commit.id)
        for name, numbers, words in named:
            if (own_pr is not None and own_pr in numbers) or any(sha.startswith(w) for w in words):
                return Carried.NAMED, name
        return None


def find(repo: pygit2.Repository, series: Series, base: pygit2.Commit, own: OwnOf) -> FollowUps:
    """The follow-ups and reverts upstream's trunk holds for every PR the series records
    (see the module docstring). `own`: a topic's own work (Workspace.own), for the carriers."""
    prs = tracked(series)
    name = trunk_ref(repo, series.upstream.remote)
    if not prs or name is None:
        return FollowUps(name[len("refs/remotes/") :] if name else None, 0, 0.0, ())
    tip = repo.references[name].peel(pygit2.Commit)
    start = time.perf_counter()
    # the oldest trunk commit a tracked PR can have merged after: the base's, or where its
    # head left trunk
    points = {p for p in (repo.merge_base(tip.id, base.id),) if p is not None}
    for t in prs:
        # the adopted head, and the topic's branch (a retired topic's is kept where it was)
        for head in (_commit(repo, t.topic.upstream_head), branch_commit(repo, t.topic.branch)):
            if head is not None and (point := repo.merge_base(tip.id, head.id)) is not None:
                points.add(point)
    # the common ancestor of them all (`git merge-base --octopus`; merge_base_many is git's
    # merge-base of the first and a merge of the rest, not older than the second oldest)
    lowest = repo.merge_base_octopus(sorted(points, key=str)) if len(points) > 1 else next(iter(points), None)
    numbers = sorted({int(t.pr) for t in prs})
    alternation = b"|".join(str(n).encode() for n in numbers)
    cheap = re.compile(rb"(?:#|/pull/)(?:" + alternation + rb")\b")
    walker = repo.walk(tip.id, pygit2.enums.SortMode.NONE)
    if lowest is not None:
        walker.hide(lowest)
    walked, candidates = 0, []
    for commit in walker:
        walked += 1
        raw = commit.raw_message
        # a revert may name its PR by title only: read every revert (a few per thousand)
        if cheap.search(raw) or _REVERTS_COMMIT_RAW.search(raw) or raw[:7].lower() == b"revert ":
            candidates.append(commit)
    seconds = time.perf_counter() - start
    readers = _Readers.of(series.upstream.github)
    carriers = _Carriers(repo, series, own, readers)
    found = tuple(_one(repo, t, base, tip, candidates, readers, carriers) for t in prs)
    return FollowUps(name[len("refs/remotes/") :], walked, seconds, found)


def of_workspace(ws: Workspace) -> FollowUps | None:
    """`find` for a workspace's series; None when no topic records an upstream PR (status and
    the nightly then print what they printed before there were any)."""
    if not tracked(ws.series):
        return None
    return find(ws.repo, ws.series, ws.base_commit(), ws.own)


def _contains(repo: pygit2.Repository, tip: pygit2.Oid, commit: pygit2.Oid) -> bool:
    return tip == commit or repo.descendant_of(tip, commit)


def _one(
    repo: pygit2.Repository,
    t: _Tracked,
    base: pygit2.Commit,
    tip: pygit2.Commit,  # trunk's
    candidates: Sequence[pygit2.Commit],
    readers: _Readers,
    carriers: _Carriers,
) -> TrackedPR:
    number = int(t.pr)
    merge: pygit2.Commit | None = None
    for commit in candidates:  # its squash: the oldest "(#N)" subject, should there be two
        if pr_number(subject(commit)) == number and (merge is None or repo.descendant_of(merge.id, commit.id)):
            merge = commit
    merge_sha = str(merge.id) if merge is not None else None
    found: list[tuple[pygit2.Commit, FollowUpKind]] = []
    for commit in candidates:
        if pr_number(subject(commit)) == number:
            continue
        kind = classify(readers, message(commit), number, merge_sha, subject(merge) if merge is not None else None)
        if kind is None:
            continue
        after = (
            repo.descendant_of(commit.id, merge.id) if merge is not None else not _contains(repo, base.id, commit.id)
        )
        if after:
            found.append((commit, kind))
    found.sort(key=lambda ck: (-ck[0].commit_time, str(ck[0].id)))
    followups = []
    for commit, kind in found:
        shown = UpstreamCommit.of(commit)
        carried: tuple[Carried, str | None] | None = (
            (Carried.BASE, None) if _contains(repo, base.id, commit.id) else carriers.carrier(commit, shown.pr)
        )
        # a revert that trunk reverted in turn: the chain from it has a reland at its end
        chain = revert_chain(repo, readers.reverts, commit, shown.pr, tip) if kind is FollowUpKind.REVERT else []
        relanded = chain[-1] if len(chain) % 2 == 0 and chain else None
        followups.append(
            FollowUp(
                t.pr,
                kind,
                shown,
                carried[0] if carried else None,
                carried[1] if carried else None,
                UpstreamCommit.of(relanded) if relanded is not None else None,
            )
        )
    in_base = _contains(repo, base.id, merge.id) if merge is not None else t.topic.status is Status.MERGED
    return TrackedPR(
        t.pr,
        t.topic.name,
        t.topic.status,
        t.superseded,
        UpstreamCommit.of(merge) if merge is not None else None,
        in_base,
        tuple(followups),
    )
