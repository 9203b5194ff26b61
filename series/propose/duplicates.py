"""Upstream PRs that touch a topic's files, ranked: the answer `series preflight` shows
and `series propose` stops on before it posts (shared by both verbs, so it is here).

Ranked by shared files, then overlapping hunks, then recency, then number. PR files come
from the forge, or, for PRs whose head is fetched into git refs at the same commit, from
one path-limited walk over those heads (series.forge.scan).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import pygit2

from series.forge import scan
from series.forge.base import PullFile, PullRequest, PullState, mainline_commit, pr_ref, ranges_overlap
from series.propose import duplicates_score


@dataclass(frozen=True)
class Candidate:
    number: int
    title: str
    author: str
    state: PullState
    url: str | None
    shared_files: list[str]
    overlapping_hunks: int
    own: bool = False  # the PR this topic was adopted from
    updated_at: str | None = None
    merge_commit: str | None = None  # upstream's squash of it, when merged


def rank(
    topic_files: list[PullFile],
    pulls: list[PullRequest],
    files_of: Callable[[PullRequest], list[PullFile]],
    own_pr: int | None = None,
) -> list[Candidate]:
    """PRs sharing a file with the topic: most shared files first, then most overlapping hunks."""
    mine = {f.path: f for f in topic_files}
    found = []
    for pr in pulls:
        shared: list[str] = []
        hunks = 0
        for theirs in files_of(pr):
            for path in (theirs.path, theirs.previous_path):
                if path and path in mine and path not in shared:
                    shared.append(path)
                    hunks += ranges_overlap(mine[path].hunks, theirs.hunks)
        if shared:
            found.append(
                Candidate(
                    int(pr.number),
                    pr.title,
                    pr.author,
                    pr.state,
                    pr.url,
                    sorted(shared),
                    hunks,
                    own=own_pr == pr.number,
                    updated_at=pr.updated_at,
                    merge_commit=pr.merge_commit,
                )
            )
    found.sort(key=lambda c: (-len(c.shared_files), -c.overlapping_hunks, -updated_moment(c.updated_at), -c.number))
    return found


def updated_moment(stamp: str | None) -> float:
    """A PR's updated_at (ISO 8601, 'Z' allowed) as a POSIX time; 0 when it has none."""
    if not stamp:
        return 0.0
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def fetched_files(
    repo: pygit2.Repository, remote: str, pulls: list[PullRequest], paths: list[str]
) -> dict[int, list[PullFile]]:
    """For the API's PRs whose head is fetched here at the same commit: the files among
    `paths` each changes, from one walk over the PR heads (series.forge.scan) instead of
    one API request per PR (vLLM has about a thousand open)."""
    same = set()
    for pr in pulls:
        ref = repo.references.get(pr_ref(remote, int(pr.number))) if pr.head_sha else None
        if ref is not None and str(ref.target) == pr.head_sha:
            same.add(int(pr.number))
    if not same:
        return {}
    found = scan.scan(repo, remote, mainline_commit(repo, remote), paths, len(same))
    return {n: found.files.get(n, []) for n in same}


# the bot's file overlap of a PR compared from git refs: only the topic's paths are read of it
FROM_REFS_NOTE = (
    "the bot's file overlap of a PR compared from git refs counts only the topic's "
    "paths among its files: its score there is an upper bound"
)


def bot_scores(
    mine: duplicates_score.PullText,
    pulls: Sequence[PullRequest],
    files: Mapping[int, Sequence[PullFile]],
    candidates: Sequence[Candidate],
) -> dict[int, duplicates_score.BotScore]:
    """vLLM's duplicate-bot score of each candidate against our PR, among every PR read (the
    bot's stages rank over the whole pool): what preflight and propose both show."""
    pool = [
        duplicates_score.PullText(int(p.number), p.title, p.body, tuple(f.path for f in files.get(int(p.number), ())))
        for p in pulls
    ]
    every = duplicates_score.score_all(mine, pool)
    return {c.number: every[c.number] for c in candidates if c.number in every}
