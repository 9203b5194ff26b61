"""The title `series propose` gives a topic's PR unless told one (preflight scores the same)."""

from __future__ import annotations

import re
from typing import Sequence

from series.propose.grade import Commit, title_tags


# "(#N)" closing a subject: the number of the PR that squash-merged it into the fork (a
# Habana commit 'Enable llama-405b ... (#184)' is HabanaAI/vllm-fork#184). Upstream, it
# would name vLLM's PR #184, and GitHub's squash appends the new PR's own number anyway.
_SQUASHED_AS = re.compile(r"\s*\(#[0-9]+\)\s*$")


def default_title(summary: str | None, commits: Sequence[Commit]) -> str:
    """One commit: its subject; more: the topic's summary under the first tagged subject's
    tags. Without the fork's squash number "(#N)" at its end."""
    if len(commits) == 1 or not summary:
        return _SQUASHED_AS.sub("", commits[0].subject) or commits[0].subject
    tagged = [c.subject for c in commits if title_tags(c.subject)[0]]
    tags = title_tags(tagged[0])[0] if tagged else []
    return "".join(f"[{t}]" for t in tags) + (" " if tags else "") + summary
