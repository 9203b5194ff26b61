"""The title `series propose` gives a topic's PR unless told one (preflight scores the same)."""
from __future__ import annotations

from typing import Sequence

from series.propose.grade import Commit, title_tags


def default_title(summary: str | None, commits: Sequence[Commit]) -> str:
    """One commit: its subject; more: the topic's summary under the first tagged subject's tags."""
    if len(commits) == 1 or not summary:
        return commits[0].subject
    tagged = [c.subject for c in commits if title_tags(c.subject)[0]]
    tags = title_tags(tagged[0])[0] if tagged else []
    return "".join(f"[{t}]" for t in tags) + (" " if tags else "") + summary
