"""What the tool needs from a forge, and a forge made of git refs alone.

A `Forge` answers three questions about upstream pull requests: one PR's metadata, the
recent PRs, and the files one PR changes. `GitHubForge` (github.py) asks the REST API;
`OfflineForge` answers from PR heads already fetched into refs/remotes/<remote>/pr/N,
so adopt and preflight work with no API at all (a mirror, no token, no network).
"""

from __future__ import annotations

import abc
import datetime
import enum
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import pygit2

from series.errors import SeriesError
from series.git.releases import trunk_ref
from series.git.repo import PathChange, changed_paths, person, subject
from series.model import PRNumber, Sha

if TYPE_CHECKING:
    from series.forge.conversation import Conversation

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


class PullState(str, enum.Enum):
    """Where a PR is, as the forge knows it. GitHub's API says open or closed (merged is
    closed with a merge); a forge of git refs alone sees merged or, otherwise, unknown."""

    OPEN = "open"
    CLOSED = "closed"
    MERGED = "merged"
    UNKNOWN = "unknown"

    @property
    def maybe_open(self) -> bool:
        return self in (PullState.OPEN, PullState.UNKNOWN)


@dataclass(frozen=True)
class PullRequest:
    number: PRNumber
    title: str
    author: str  # GitHub login; offline: the head commit's author name
    state: PullState
    head_sha: Sha | None = None
    base_sha: Sha | None = None  # where the PR branched off upstream, when the forge knows
    merge_commit: Sha | None = None
    url: str | None = None
    updated_at: str | None = None  # ISO 8601, UTC
    closed_at: str | None = None
    body: str | None = None  # the description, from the API (what vLLM's duplicate bot reads)

    @property
    def merged(self) -> bool:
        return self.state == PullState.MERGED

    @property
    def reference(self) -> str:
        """What a commit trailer names: the URL when known, else #N."""
        return self.url or f"#{self.number}"


@dataclass(frozen=True)
class PullFile:
    path: str
    # Old-side line ranges (start, count) of the hunks, from the patch; empty when the
    # forge sent no patch (binary or huge files): overlap then counts the file only.
    hunks: tuple[tuple[int, int], ...] = ()
    previous_path: str | None = None


def hunks_of_patch(patch: str | None) -> tuple[tuple[int, int], ...]:
    """Old-side (start, count) of every change in a unified diff fragment, context left out.

    The same convention as a zero-context git diff (what OfflineForge computes), so API
    and git sources rank alike: a run of deleted lines is (first, count); a pure
    insertion is (the line it follows, 0). GitHub's patches carry 3 context lines, which
    would otherwise make near-misses look like overlaps.
    """
    if not patch:
        return ()
    out: list[tuple[int, int]] = []
    old = 0
    block: list[int] | None = None  # [start, count] of the change being read
    for line in patch.splitlines():
        m = _HUNK.match(line)
        if m:
            if block is not None:
                out.append((block[0], block[1]))
                block = None
            old = int(m.group(1))
            continue
        kind = line[:1]
        if kind in ("-", "+"):
            if block is None:
                block = [old if kind == "-" else old - 1, 0]
            if kind == "-":
                if block[1] == 0:
                    block[0] = old
                block[1] += 1
                old += 1
            continue
        if kind == "\\":
            continue  # "\ No newline at end of file"
        if block is not None:
            out.append((block[0], block[1]))
            block = None
        old += 1
    if block is not None:
        out.append((block[0], block[1]))
    return tuple(out)


def ranges_overlap(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> int:
    """How many hunks of `a` touch a hunk of `b` (a pure insertion counts as one line)."""
    hits = 0
    for start_a, count_a in a:
        end_a = start_a + max(count_a, 1)
        for start_b, count_b in b:
            end_b = start_b + max(count_b, 1)
            if start_a < end_b and start_b < end_a:
                hits += 1
                break
    return hits


@dataclass(frozen=True)
class PostedComment:
    """A comment the forge says it made on a PR's conversation."""

    id: int
    url: str  # https://HOST/OWNER/REPO/pull/N#issuecomment-ID


@dataclass(frozen=True)
class ReviewActivity:
    """What reviewers have said on a PR so far: submitted reviews and review (line) comments."""

    reviews: int
    comments: int

    @property
    def started(self) -> bool:
        """Review has started once anything exists: from then on the branch only grows."""
        return self.reviews > 0 or self.comments > 0


class ForgeError(SeriesError):
    """The forge answered with an error the user can act on (401, 404, rate limit)."""


class ForgeUnreachable(ForgeError):
    """No answer at all (DNS, refused, timeout): callers may fall back to git alone."""


class Forge(abc.ABC):
    """Upstream pull requests, from the API or from git refs."""

    #: a short word for reports: "github" or "git refs"
    source: str = ""
    #: whether an API answers for people and opens PRs (commit_login, viewer_login,
    #: create_pull); git refs alone do not: callers check this instead of the method
    api: bool = False
    #: requests the API's rate limit leaves, from its last answer (None: no limit known)
    rate_remaining: int | None = None

    @abc.abstractmethod
    def pull(self, number: PRNumber) -> PullRequest:
        """One PR's metadata; ForgeError if there is no such PR."""

    @abc.abstractmethod
    def list_pulls(self, since: datetime.datetime) -> list[PullRequest]:
        """Open PRs, and PRs closed at or after `since`."""

    @abc.abstractmethod
    def pull_files(self, number: PRNumber) -> list[PullFile]:
        """The files a PR changes, with old-side hunk ranges when known."""

    def open_pulls(self) -> list[PullRequest]:
        """Every open PR, whatever its age (offline: every fetched head, state unknown)."""
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return [p for p in self.list_pulls(epoch) if p.state.maybe_open]

    def commit_login(self, sha: str) -> str | None:
        """The forge login of a commit's author, for an @-mention; None when unknown."""
        return None

    def viewer_login(self) -> str:
        """The login the credentials belong to (the owner of the fork a PR's head lives in)."""
        raise ForgeError(f"{self.source or 'this forge'} cannot say whose fork this is", "pass --owner LOGIN")

    def create_pull(self, *, head: str, base: str, title: str, body: str, draft: bool = True) -> PullRequest:
        """Open a pull request; only a forge with an API can."""
        raise ForgeError(f"{self.source or 'this forge'} cannot open a pull request: it needs the GitHub API")

    def pull_description(self, number: PRNumber) -> str | None:
        """A PR's description as its author wrote it (Markdown); None when this forge
        cannot know it (git refs carry commits, not descriptions)."""
        return None

    def pull_conversation(self, number: PRNumber) -> "Conversation":
        """The PR's reviews, comments, labels, requested reviewers, commits and the check
        runs of its head (series upstream). Only an API knows them: git refs refuse."""
        raise ForgeError(
            f"the review state of PR #{number} needs the GitHub API ({self.source} has none)",
            "set upstream.github in series.yaml, or run 'series upstream --offline' to read the last fetch",
        )

    # Not pull_conversation's reviews: that is seven more requests, drops PENDING reviews this
    # counts, and refuses fields (logins, times) propose --update never needed; two readers.
    def review_activity(self, number: PRNumber) -> ReviewActivity | None:
        """The reviews and review comments on PR `number`; None when this forge cannot know
        (git refs carry no reviews): callers then act as if review had started."""
        return None

    def comment(self, number: PRNumber, body: str) -> PostedComment:
        """Post `body` on PR `number`'s conversation, once. Only an API can: git refs refuse."""
        raise ForgeError(
            f"commenting on PR #{number} needs the GitHub API ({self.source} cannot post)",
            "set upstream.github in series.yaml and drop --offline (or SERIES_OFFLINE); --dry-run shows the comment",
        )


def pr_ref(remote: str, number: int) -> str:
    return f"refs/remotes/{remote}/pr/{number}"


def mainline_commit(repo: pygit2.Repository, remote: str) -> pygit2.Commit | None:
    """Upstream's main line as this clone knows it: its trunk (releases.trunk_ref: main, else
    master), else, unlike the trunk, <remote>/HEAD (a clone whose default branch is neither)."""
    for name in (trunk_ref(repo, remote), f"refs/remotes/{remote}/HEAD"):
        ref = repo.references.get(name) if name is not None else None
        if ref is not None:
            try:
                return ref.resolve().peel(pygit2.Commit)
            except (pygit2.GitError, ValueError):
                continue
    return None


def pr_fork_point(repo: pygit2.Repository, remote: str, head: pygit2.Oid, base_sha: str | None = None) -> pygit2.Commit:
    """Where a PR leaves upstream's main line: GitHub's base sha if we have it, else the
    merge-base with <remote>/main."""
    if base_sha:
        try:
            found = repo[base_sha].peel(pygit2.Commit)
            # GitHub's base.sha is the base branch tip when the PR was last updated; the
            # PR's own commits start at its merge-base with that tip.
            mb = repo.merge_base(found.id, head)
            if mb is not None:
                return repo[mb].peel(pygit2.Commit)
        except (KeyError, ValueError):
            pass  # not fetched here: fall back to our view of main
    main = mainline_commit(repo, remote)
    if main is None:
        raise SeriesError(f"cannot tell the PR's own commits: no {remote}/main here", f"run 'git fetch {remote}' first")
    mb = repo.merge_base(main.id, head)
    if mb is None:
        raise SeriesError(f"the PR head {str(head)[:12]} shares no history with {remote}/main")
    return repo[mb].peel(pygit2.Commit)


def tree_files(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> list[PullFile]:
    """Changed files between two trees, with old-side hunk ranges (3 lines of context off)."""
    return change_files(repo, changed_paths(repo, old, new))


def change_files(repo: pygit2.Repository, changes: Iterable[PathChange]) -> list[PullFile]:
    """`tree_files` of changes already found (a topic's own: series.topics)."""
    files = []
    for change in changes:
        old_data = repo[change.old_id].peel(pygit2.Blob).data if change.old_id is not None else b""
        new_data = repo[change.new_id].peel(pygit2.Blob).data if change.new_id is not None else b""
        hunks: tuple[tuple[int, int], ...] = ()
        if b"\0" not in old_data[:8000] and b"\0" not in new_data[:8000]:
            patch = pygit2.Patch.create_from(old_data, new_data, context_lines=0)
            hunks = tuple((h.old_start, h.old_lines) for h in patch.hunks)
        files.append(PullFile(change.path, hunks))
    return files


class OfflineForge(Forge):
    """PRs as refs/remotes/<remote>/pr/N: heads only, so metadata comes from commits."""

    source = "git refs"

    def __init__(self, repo: pygit2.Repository, remote: str):
        self.repo = repo
        self.remote = remote
        self._files: dict[int, list[PullFile]] = {}

    def _head(self, number: int) -> pygit2.Commit | None:
        ref = self.repo.references.get(pr_ref(self.remote, number))
        return ref.peel(pygit2.Commit) if ref is not None else None

    def numbers(self) -> list[PRNumber]:
        prefix = f"refs/remotes/{self.remote}/pr/"
        found = []
        for name in self.repo.references:
            if name.startswith(prefix) and name[len(prefix) :].isdigit():
                found.append(PRNumber(int(name[len(prefix) :])))
        return sorted(found, reverse=True)

    def pull(self, number: PRNumber) -> PullRequest:
        head = self._head(number)
        if head is None:
            raise ForgeError(
                f"PR #{number} is not fetched here ({pr_ref(self.remote, number)})",
                f"fetch it with 'git fetch {self.remote} +refs/pull/{number}/head:{pr_ref(self.remote, number)}'",
            )
        when = datetime.datetime.fromtimestamp(head.commit_time, datetime.timezone.utc)
        return PullRequest(
            number=number,
            title=subject(head),
            author=person(head, head.author)[0],
            state=PullState.UNKNOWN,
            head_sha=Sha(str(head.id)),
            updated_at=when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        )

    def list_pulls(self, since: datetime.datetime) -> list[PullRequest]:
        # Without the API, open/closed is unknown: every fetched head is a candidate.
        return [self.pull(n) for n in self.numbers()]

    def pull_files(self, number: PRNumber) -> list[PullFile]:
        if number not in self._files:
            head = self._head(number)
            if head is None:
                return []
            start = pr_fork_point(self.repo, self.remote, head.id)
            self._files[number] = tree_files(self.repo, start.tree, head.tree)
        return self._files[number]
