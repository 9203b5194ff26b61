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
    ordered = sorted(releases.releases(repo, remote))  # oldest first
    newest = next(((r.tag, tip) for r in reversed(ordered) if (tip := _holding(repo, r.tag, landed))), None)
    if newest is None:
        return None, ("merged, in no upstream release here yet",)
    reader = RevertReader.of(github)
    last = revert_chain(repo, reader, landed, number, newest[1])  # what the newest release did with it
    for release in ordered:
        tip = _holding(repo, release.tag, landed)
        if tip is None:
            continue
        chain = last if release.tag == newest[0] else revert_chain(repo, reader, landed, number, tip)
        if len(chain) % 2 == 1:
            notes = (
                [f"merged as {named(landed)}, then {history_of(chain)} before {release.tag}"] if len(chain) > 1 else []
            )
            if len(last) % 2 == 0:
                notes.append(f"{history_of(last)}: {newest[0]} does not carry it")
            return release.tag, tuple(notes)
    return None, (f"merged as {named(landed)}, then {history_of(last)}: no release here carries it",)


def _holding(repo: pygit2.Repository, tag: str, landed: pygit2.Commit) -> pygit2.Commit | None:
    """The tag's commit, when it has `landed`."""
    try:
        tip = repo.references[f"refs/tags/{tag}"].peel(pygit2.Commit)
    except (KeyError, pygit2.GitError, pygit2.InvalidSpecError, ValueError):
        return None
    return tip if tip.id == landed.id or repo.descendant_of(tip.id, landed.id) else None
