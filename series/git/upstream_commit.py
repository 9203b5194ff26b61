"""An upstream commit as a report names it, and the PR its squash-merge subject names.

vLLM squash-merges every PR as one commit "[Tag] title (#N)", so an upstream commit names
its PR. Read here, below everything that asks (moved out of series.history.attribution,
issue 35): the rebase's merged-upstream rule and its bisection (series.engine), the forge's
offline scan, attribution and `series touches --between` all read "(#N)" the one way.

A revert of a squash is read here too (`RevertReader`, moved down from
series.upstream.followups): the follow-ups report and the rebase's merged-upstream rule
(a PR merged and then reverted is not merged) read a revert the one way.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

import pygit2

from series import persisted
from series.git.repo import message, person, subject as commit_subject
from series.persisted import Json
from series.validate import PR_DIGITS

# "(#N)" at the end of a subject; a longer run of digits than a PR number has is no PR
_PR = re.compile(rf"\(#([1-9][0-9]{{0,{PR_DIGITS - 1}}})\)\s*$")
_REVERT_SUBJECT = re.compile(r'^Revert\s+"(.*)"', re.IGNORECASE)
# a revert's subject missing its closing quote, as typed by hand (vLLM's #8810:
# 'Revert "rename PromptInputs ... (#8760) (#8810)'); a second "(#M)" is the revert's own
_REVERT_UNCLOSED = re.compile(r'^Revert\s+"([^"]*?)(?:\s*\(#[0-9]+\))?\s*$', re.IGNORECASE)
_OWN_PR = re.compile(r"\s*\(#[0-9]+\)\s*$")
_REVERTS_COMMIT = re.compile(r"\breverts\s+commit\s+([0-9a-f]{7,40})\b", re.IGNORECASE)


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


# -- reverts ---------------------------------------------------------------------------------


def pr_reference(github: str | None) -> str:
    """A PR reference in a message, its number the group: '#N', or the PR's URL on upstream's
    repository (any repository's when series.yaml names none)."""
    repo = re.escape(github) if github else r"[\w.-]+/[\w.-]+"
    return rf"(?:#|https?://github\.com/{repo}/pull/)([1-9][0-9]{{0,8}})\b"


def pr_title(subject_line: str) -> str:
    """A subject without its "(#N)" and with its whitespace collapsed: a PR's title."""
    return " ".join(_OWN_PR.sub("", subject_line).split())


def reverted_subject(first_line: str) -> str | None:
    """The subject a 'Revert "..."' subject quotes (its closing quote may be missing)."""
    quoted = _REVERT_SUBJECT.match(first_line) or _REVERT_UNCLOSED.match(first_line)
    return quoted.group(1) if quoted else None


@dataclass(frozen=True)
class RevertReader:
    """Whether a commit message reverts a squash: the one reading, for upstream's follow-ups
    (series.upstream.followups) and the rebase's merged-upstream rule (series.engine.merged).
    Compiled once per upstream repository (`github`, for the PR URLs it accepts)."""

    by_number: re.Pattern[str]  # "reverts #N", "Revert PR #N", "reverted https://.../pull/N"

    @classmethod
    def of(cls, github: str | None) -> "RevertReader":
        ref = pr_reference(github)
        return cls(re.compile(rf"\brevert(?:s|ed|ing)?\s+(?:PR\s+|pull request\s+)?{ref}", re.IGNORECASE))

    def reverts(self, text: str, number: int | None, squash_sha: str | None, squash_subject: str | None) -> bool:
        """Whether the message `text` reverts PR `number`, whose squash is `squash_sha` with
        subject `squash_subject` (each None when unknown: a revert pushed without a PR has no
        number): `Revert "... (#N)" (#M)`; GitHub's Revert button quoting the PR's title
        without its number; "This reverts #N"; git's "This reverts commit <squash>". A
        revert quoting another PR's subject reverts that one, whatever its body says."""
        first = text.split("\n", 1)[0].strip()
        quoted = reverted_subject(first)
        inner = pr_number(quoted) if quoted is not None else None
        if inner is not None:
            return inner == number
        if quoted is not None and squash_subject is not None and pr_title(quoted) == pr_title(squash_subject):
            return True
        if number is not None and number in {int(m.group(1)) for m in self.by_number.finditer(text)}:
            return True
        return bool(squash_sha) and any(
            str(squash_sha).startswith(m.group(1).lower()) for m in _REVERTS_COMMIT.finditer(text)
        )


def revert_chain(
    repo: pygit2.Repository, reader: RevertReader, landed: pygit2.Commit, number: int | None, tip: pygit2.Commit
) -> list[pygit2.Commit]:
    """`landed` (PR `number`'s squash on upstream's trunk), then, while `tip` has one, the
    oldest revert of the last commit of the chain (a revert of a revert relands), each
    found by the PR number its own subject names. Odd length: `tip` has the PR in the end;
    even: `tip` reverts it. The rebase's merged rule (series.engine.merged) and `series
    upstream`'s release reading share it."""
    chain = [landed]
    while (revert := _oldest_revert(repo, reader, chain[-1], number, tip)) is not None:
        chain.append(revert)
        number = pr_number(subject_of(revert))
    return chain


def _oldest_revert(
    repo: pygit2.Repository, reader: RevertReader, landed: pygit2.Commit, number: int | None, tip: pygit2.Commit
) -> pygit2.Commit | None:
    """The oldest commit of landed..tip that reverts `landed` (PR `number`)."""
    walker = repo.walk(tip.id, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(landed.id)
    found = None
    for commit in walker:  # newest first: the last one found is the oldest
        if reader.reverts(message(commit), number, str(landed.id), subject_of(landed)):
            found = commit
    return found


def named(commit: pygit2.Commit) -> str:
    """How reports name an upstream commit: '#8810 (0123456789ab 'subject')', or its short
    sha and subject when it names no PR."""
    subject = subject_of(commit)
    pr = pr_number(subject)
    sha = str(commit.id)[:12]
    return f"#{pr} ({sha} '{subject}')" if pr is not None else f"{sha} '{subject}'"


def history_of(chain: list[pygit2.Commit]) -> str:
    """A revert_chain after its first commit, in words: 'reverted by ..., relanded by ...'."""
    return ", ".join(f"{'reverted' if i % 2 else 'relanded'} by {named(c)}" for i, c in enumerate(chain[1:], start=1))
