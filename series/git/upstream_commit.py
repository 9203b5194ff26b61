"""An upstream commit as a report names it, and the PR its squash-merge subject names.

vLLM squash-merges every PR as one commit "[Tag] title (#N)", so an upstream commit names
its PR. Read here, below everything that asks (moved out of series.history.attribution,
issue 35): the rebase's merged-upstream rule and its bisection (series.engine), the forge's
offline scan, attribution and `series touches --between` all read "(#N)" the one way.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

import pygit2

from series import persisted
from series.git.repo import person, subject as commit_subject
from series.persisted import Json
from series.validate import PR_DIGITS

# "(#N)" at the end of a subject; a longer run of digits than a PR number has is no PR
_PR = re.compile(rf"\(#([1-9][0-9]{{0,{PR_DIGITS - 1}}})\)\s*$")


def pr_number(subject: str) -> int | None:
    """The PR a squash-merge subject names: '[Core] fix x (#61234)' -> 61234 (the one
    reading of "(#N)": attribution, bisection, touches --between, retire, the forge scan)."""
    m = _PR.search(subject)
    return int(m.group(1)) if m else None


def subject_of(commit: pygit2.Commit) -> str:
    return commit_subject(commit)


@dataclass(frozen=True)
class UpstreamCommit:
    sha: str
    subject: str
    pr: int | None
    author: str
    date: str  # the author date, YYYY-MM-DD (UTC)

    @classmethod
    def of(cls, commit: pygit2.Commit) -> "UpstreamCommit":
        subject = subject_of(commit)
        when = datetime.datetime.fromtimestamp(commit.author.time, datetime.timezone.utc)
        return cls(
            str(commit.id), subject, pr_number(subject), person(commit, commit.author)[0], when.date().isoformat()
        )

    def to_json(self) -> dict[str, Json]:
        return {"sha": self.sha, "subject": self.subject, "pr": self.pr, "author": self.author, "date": self.date}

    @classmethod
    def from_json(cls, data: Json | persisted.JsonObject, what: str = "commit") -> "UpstreamCommit":
        d = persisted.read_object(data, what)
        return cls(
            persisted.read_str(d, "sha"),
            persisted.read_str(d, "subject"),
            persisted.read_opt_int(d, "pr"),
            persisted.read_str(d, "author"),
            persisted.read_str(d, "date"),
        )

    @property
    def label(self) -> str:
        """How a sentence names it: '#61234' when it is a PR's squash, else its short sha."""
        return f"#{self.pr}" if self.pr is not None else self.sha[:12]
