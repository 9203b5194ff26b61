"""Fetch pull request heads with the git CLI (the user's credentials, proxies, mirrors).

GitHub, and any mirror that serves them, publishes every PR head as refs/pull/N/head.
We keep them as remote-tracking refs, refs/remotes/<remote>/pr/N, where OfflineForge
finds them: `git fetch` semantics, so these refs are not part of series' undo journal.
"""

from __future__ import annotations

import pygit2

from series import validate
from series.errors import SeriesError
from series.forge.base import pr_ref
from series.git.command import git
from series.git.repo import workdir
from series.model import Sha


def fetch_pull(repo: pygit2.Repository, remote: str, number: int) -> Sha:
    """Fetch refs/pull/N/head into refs/remotes/<remote>/pr/N; return its sha."""
    remote = validate.existing_remote(repo.remotes.names(), remote, "upstream.remote")
    number = validate.pr_number(number, "pull request number")
    local = pr_ref(remote, number)
    proc = git(
        workdir(repo),
        "fetch",
        "--quiet",
        "--no-tags",
        "--end-of-options",
        remote,
        f"+refs/pull/{number}/head:{local}",
        check=False,
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        if "couldn't find remote ref" in proc.stderr:
            raise SeriesError(
                f"{remote} has no pull request #{number} (refs/pull/{number}/head not served); "
                "check the number, or that the remote is GitHub or a mirror with PR refs"
            )
        raise SeriesError(f"git fetch {remote} refs/pull/{number}/head failed: {validate.one_line(detail)}")
    ref = repo.references.get(local)
    if ref is None:  # pygit2 caches packed refs; a fresh lookup sees the fetch
        repo = pygit2.Repository(repo.path)
        ref = repo.references[local]
    return Sha(str(ref.target))


def fetch_all_pulls(repo: pygit2.Repository, remote: str) -> None:
    """Every PR head into refs/remotes/<remote>/pr/*, plus <remote>'s branches (main)."""
    remote = validate.existing_remote(repo.remotes.names(), remote, "upstream.remote")
    git(
        workdir(repo),
        "fetch",
        "--quiet",
        "--no-tags",
        "--end-of-options",
        remote,
        f"+refs/heads/*:refs/remotes/{remote}/*",
        f"+refs/pull/*/head:refs/remotes/{remote}/pr/*",
    )


def fetch_commit(repo: pygit2.Repository, remote: str, sha: str) -> bool:
    """Fetch one commit by id (GitHub serves reachable commits); True if it is here now.

    Adopt needs GitHub's base sha locally: without it the PR's own commits would be
    counted from a stale <remote>/main and take upstream's commits along.
    """
    sha = validate.commit_id(sha, "the commit to fetch")
    try:
        repo[sha]
        return True
    except (KeyError, ValueError):
        pass
    remote = validate.existing_remote(repo.remotes.names(), remote, "upstream.remote")
    proc = git(workdir(repo), "fetch", "--quiet", "--no-tags", "--end-of-options", remote, sha, check=False)
    if proc.returncode != 0:
        return False
    try:
        pygit2.Repository(repo.path)[sha]
        return True
    except (KeyError, ValueError):
        return False
