"""The upstream change to read before resolving a conflict: one line per conflicting file,
from a rebase report's attribution (series.history.attribution, written by `series
rebase`). Both the rebase's conflict text and `series status` (for the rebase halted now,
from its saved report) show these lines, so they are worded once, here.
"""

from __future__ import annotations

import json

from series.engine import rebase_state
from series.report.rebase_result import RebaseResult
from series.engine.report import report_dir
from series.workspace import Workspace


def read_first(result: RebaseResult, topic: str) -> list[str]:
    """For the conflict worktree's instructions: the upstream change to read before resolving."""
    found = result.topic(topic)
    out = []
    for path, culprits in ((found.history.upstream or {}) if found else {}).items():
        hits = [c for c in culprits.culprits if c.overlaps]
        if hits:
            c = hits[0]
            what = f"{c.symbol}()" if c.symbol else path.rsplit("/", 1)[-1]
            out.append(
                f"upstream {c.commit.label} rewrote {what} in {path}: read it first "
                f"(git show {c.commit.sha[:12]} -- {path})"
            )
    return out


def halted_read_first(ws: Workspace) -> list[str]:
    """read_first() for the rebase halted now, from its saved report (for `series status`)."""
    state = rebase_state.load(ws.repo)
    if state is None or not state.current:
        return []
    try:
        result = RebaseResult.from_json(json.loads((report_dir(ws.repo) / f"{state.id}.json").read_text()))
    except (OSError, ValueError):
        return []  # an adoption's halt, or a report removed or edited by hand: nothing to add
    return read_first(result, state.current)
