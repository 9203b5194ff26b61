"""Which upstream release carries a merged PR: the oldest release tag that has its merge
commit and, in the end, not its revert (series.git.upstream_commit.revert_chain: a revert
of the revert relands it). A release that has both the merge and its revert does not ship
the PR, so it is never the answer; a revert in a later release is said beside it.
"""

from __future__ import annotations

import pygit2

from series.git import releases
from series.git.upstream_commit import RevertReader, history_of, named, revert_chain


def released_in(
    repo: pygit2.Repository, merge: str, number: int, github: str | None, remote: str
) -> tuple[str | None, tuple[str, ...]]:
    """(the release that carries PR `number` merged as `merge`, or None; notes for the row)."""
    landed = repo[merge].peel(pygit2.Commit)
    holding = []  # oldest first: the releases whose tag has the merge
    for release in sorted(releases.releases(repo, remote)):
        tip = _tip(repo, release.tag)
        if tip is not None and (tip.id == landed.id or repo.descendant_of(tip.id, landed.id)):
            holding.append((release.tag, tip))
    if not holding:
        return None, ("merged, in no upstream release here yet",)
    reader = RevertReader.of(github)
    for tag, tip in holding:
        chain = revert_chain(repo, reader, landed, number, tip)
        if len(chain) % 2 == 1:
            notes = [f"merged as {named(landed)}, then {history_of(chain)} before {tag}"] if len(chain) > 1 else []
            newest_tag, newest = holding[-1]
            later = revert_chain(repo, reader, landed, number, newest)
            if len(later) % 2 == 0:
                notes.append(f"{history_of(later)}: {newest_tag} does not carry it")
            return tag, tuple(notes)
    newest_tag, newest = holding[-1]
    chain = revert_chain(repo, reader, landed, number, newest)
    return None, (f"merged as {named(landed)}, then {history_of(chain)}: no release here carries it",)


def _tip(repo: pygit2.Repository, tag: str) -> pygit2.Commit | None:
    try:
        return repo.references[f"refs/tags/{tag}"].peel(pygit2.Commit)
    except (KeyError, pygit2.GitError, pygit2.InvalidSpecError, ValueError):
        return None
