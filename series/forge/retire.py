"""Has upstream merged a PR topic? The rebase asks the git evidence (series.engine.merged);
this adds the API's.

Evidence, strongest first: the API says the merge commit is in the new base; upstream's
history between the old and the new base holds a commit whose subject ends in "(#N)"
(GitHub's squash-merge subject). An empty replay is the rebase's own finding and is passed
in. Then, the final form: GitHub squash-merges often carry review changes the adopted head
lacks, so the PR's files are compared as trees (not patch-ids, which any edit breaks)
between what upstream merged and the adopted head. Equal: "merged". Different: "merged
upstream in modified form", with the difference as a diff, so the maintainer can see
whether anything of the adopted version is lost when the topic retires.

Everything but the API's evidence is the engine's (series.engine.merged.pr_verdict), which
the rebase asks without a network; it moved there so the engine imports no forge (issue 35).
The API's merge commit goes through the engine's revert rule too (landed_verdict): GitHub
still says "merged" for a PR whose squash the new base reverts, and that is no merge.
"""

from __future__ import annotations

import pygit2

from series.engine.merged import RetireKind, RetireVerdict, contains, landed_verdict, pr_verdict
from series.git.upstream_commit import RevertReader
from series.forge.base import Forge, ForgeUnreachable
from series.model import Topic

__all__ = ["RetireKind", "RetireVerdict", "check"]  # the verdict's types, where the forge's callers look


def check(
    repo: pygit2.Repository,
    topic: Topic,
    old_base: pygit2.Commit,
    new_base: pygit2.Commit,
    forge: Forge | None = None,
    *,
    replay_empty: bool = False,
    github: str | None = None,
) -> RetireVerdict | None:
    """The verdict for one PR topic being rebased from old_base to new_base, or None. A
    REVERTED verdict (verdict.retires is False) proves it is not merged.

    `topic` must carry upstream_pr; its branch is the adopted head (on old_base). `github`:
    upstream's owner/name (the PR URLs a revert's message may name).
    """
    if topic.upstream_pr is None:
        return None
    if forge is not None:
        try:
            pr = forge.pull(topic.upstream_pr)
        except ForgeUnreachable:
            pr = None  # the git evidence below still holds
        if pr is not None and pr.merged and pr.merge_commit:
            try:
                candidate = repo[pr.merge_commit].peel(pygit2.Commit)
            except (KeyError, ValueError):
                candidate = None
            if (
                candidate is not None
                and contains(repo, new_base.id, candidate.id)
                and not contains(repo, old_base.id, candidate.id)
            ):
                reason = (
                    f"GitHub: PR #{int(topic.upstream_pr)} merged as {str(candidate.id)[:12]}, "
                    f"contained in the new base"
                )
                return landed_verdict(repo, topic, old_base, new_base, candidate, reason, RevertReader.of(github))
    return pr_verdict(repo, topic, old_base, new_base, replay_empty=replay_empty, github=github)
