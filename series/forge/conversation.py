"""A pull request's review conversation as the forge told it: the data `series upstream`
reads to say whose turn it is, what gates stand and how quiet the PR is.

Values only (frozen, typed), checked where they enter (forge/github_conversation.py); the
same value is stored for offline use (series.upstream.store) and read back here, every
field checked (`from_json`).
"""

from __future__ import annotations

from dataclasses import dataclass

from series.forge.base import PullRequest, PullState
from series.model import PRNumber, Sha
from series.persisted import (
    Json,
    JsonObject,
    read_bool,
    read_int,
    read_list,
    read_object,
    read_opt_int,
    read_opt_str,
    read_str,
    read_strs,
)

# GitHub's review states (REST: "APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")


@dataclass(frozen=True)
class Said:
    """One thing a person said or did on the PR, at a time (ISO 8601, UTC)."""

    author: str
    at: str
    bot: bool = False
    text: str = ""  # the first line of a conversation comment (a ping is recognized by it)

    def to_json(self) -> dict[str, Json]:
        return {"author": self.author, "at": self.at, "bot": self.bot, "text": self.text}

    @classmethod
    def from_json(cls, d: JsonObject) -> "Said":
        return cls(read_str(d, "author"), read_str(d, "at"), read_bool(d, "bot"), read_str(d, "text"))


@dataclass(frozen=True)
class Review:
    said: Said
    state: str  # one of REVIEW_STATES

    def to_json(self) -> dict[str, Json]:
        return {**self.said.to_json(), "state": self.state}

    @classmethod
    def from_json(cls, d: JsonObject) -> "Review":
        state = read_str(d, "state")
        if state not in REVIEW_STATES:
            raise ValueError(f"state {state!r}")
        return cls(Said.from_json(d), state)


@dataclass(frozen=True)
class ReviewComment:
    """A comment on a line of the diff; `reply_to` the thread's first comment (REST's
    in_reply_to_id), `outdated` when its line is gone from the diff (REST: position null)."""

    id: int
    reply_to: int | None
    said: Said
    outdated: bool = False

    def to_json(self) -> dict[str, Json]:
        return {"id": self.id, "reply_to": self.reply_to, **self.said.to_json(), "outdated": self.outdated}

    @classmethod
    def from_json(cls, d: JsonObject) -> "ReviewComment":
        return cls(read_int(d, "id"), read_opt_int(d, "reply_to"), Said.from_json(d), read_bool(d, "outdated"))


@dataclass(frozen=True)
class CheckRun:
    name: str
    status: str  # queued, in_progress, completed (and GitHub's newer waiting/pending)
    conclusion: str | None  # success, failure, neutral, cancelled, skipped, timed_out, action_required, stale

    def to_json(self) -> dict[str, Json]:
        return {"name": self.name, "status": self.status, "conclusion": self.conclusion}

    @classmethod
    def from_json(cls, d: JsonObject) -> "CheckRun":
        return cls(read_str(d, "name"), read_str(d, "status"), read_opt_str(d, "conclusion"))


# a commit status's states (REST: GET /repos/O/R/commits/SHA/status)
STATUS_STATES = ("error", "failure", "pending", "success")


@dataclass(frozen=True)
class CommitStatus:
    """One context of the head commit's combined status: CI that reports as a commit status
    rather than a check run (vLLM's Buildkite: "buildkite/ci/pr", "buildkite/ci/pr/<step>")."""

    context: str
    state: str  # one of STATUS_STATES

    def to_json(self) -> dict[str, Json]:
        return {"context": self.context, "state": self.state}

    @classmethod
    def from_json(cls, d: JsonObject) -> "CommitStatus":
        state = read_str(d, "state")
        if state not in STATUS_STATES:
            raise ValueError(f"a commit status state {state!r}")
        return cls(read_str(d, "context"), state)


@dataclass(frozen=True)
class Conversation:
    """Everything fetched about one PR for `series upstream`."""

    pull: PullRequest
    draft: bool
    labels: tuple[str, ...]
    requested: tuple[str, ...]  # logins whose review is requested now
    reviews: tuple[Review, ...]
    review_comments: tuple[ReviewComment, ...]
    comments: tuple[Said, ...]  # the conversation (issue comments)
    pushes: tuple[Said, ...]  # the PR's commits: author login, committer date
    requests: tuple[Said, ...]  # review_requested events: the requested login, when
    checks: tuple[CheckRun, ...]  # check runs of the head commit
    viewer: str | None = None  # the login of the token, when there is one
    statuses: tuple[CommitStatus, ...] = ()  # the head commit's combined status, by context
    # the first comment ids of the resolved review threads (GraphQL); None: not known (no token)
    resolved: tuple[int, ...] | None = None

    def to_json(self) -> dict[str, Json]:
        p = self.pull
        return {
            "number": int(p.number),
            "title": p.title,
            "author": p.author,
            "state": p.state.value,
            "head_sha": p.head_sha,
            "merge_commit": p.merge_commit,
            "url": p.url,
            "updated_at": p.updated_at,
            "closed_at": p.closed_at,
            "draft": self.draft,
            "labels": list(self.labels),
            "requested": list(self.requested),
            "reviews": [r.to_json() for r in self.reviews],
            "review_comments": [c.to_json() for c in self.review_comments],
            "comments": [c.to_json() for c in self.comments],
            "pushes": [c.to_json() for c in self.pushes],
            "requests": [c.to_json() for c in self.requests],
            "checks": [c.to_json() for c in self.checks],
            "viewer": self.viewer,
            "statuses": [s.to_json() for s in self.statuses],
            "resolved": None if self.resolved is None else list(self.resolved),
        }

    @classmethod
    def from_json(cls, d: JsonObject) -> "Conversation":
        def objects(key: str) -> list[JsonObject]:
            return [read_object(item, key) for item in read_list(d, key)]

        head, merge = read_opt_str(d, "head_sha"), read_opt_str(d, "merge_commit")
        pull = PullRequest(
            number=PRNumber(read_int(d, "number")),
            title=read_str(d, "title"),
            author=read_str(d, "author"),
            state=PullState(read_str(d, "state")),
            head_sha=Sha(head) if head else None,
            merge_commit=Sha(merge) if merge else None,
            url=read_opt_str(d, "url"),
            updated_at=read_opt_str(d, "updated_at"),
            closed_at=read_opt_str(d, "closed_at"),
        )
        return cls(
            pull,
            read_bool(d, "draft"),
            tuple(read_strs(d, "labels")),
            tuple(read_strs(d, "requested")),
            tuple(Review.from_json(o) for o in objects("reviews")),
            tuple(ReviewComment.from_json(o) for o in objects("review_comments")),
            tuple(Said.from_json(o) for o in objects("comments")),
            tuple(Said.from_json(o) for o in objects("pushes")),
            tuple(Said.from_json(o) for o in objects("requests")),
            tuple(CheckRun.from_json(o) for o in objects("checks")),
            read_opt_str(d, "viewer"),
            # a fetch stored before statuses were read has none
            tuple(CommitStatus.from_json(o) for o in objects("statuses")) if "statuses" in d else (),
            # a fetch stored before threads' resolution was read does not know it
            None if d.get("resolved") is None else tuple(_ints(read_list(d, "resolved"), "resolved")),
        )


def _ints(items: list[Json], key: str) -> list[int]:
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in items):
        raise ValueError(f"'{key}' holds something that is not a number")
    return [i for i in items if isinstance(i, int)]
