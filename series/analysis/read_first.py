"""The upstream change to read before resolving a conflict: one line per conflicting file,
from a rebase report's attribution (series.analysis.attribution, written by `series
rebase`). Both the rebase's conflict text and `series status` (for the rebase halted now,
from its saved report) show these lines, so they are worded once, here.
"""
from __future__ import annotations

import json
from typing import Any

from series import halted
from series.engine.report import report_dir
from series.workspace import Workspace


def read_first(report: dict[str, Any], topic: str) -> list[str]:
    """For the conflict worktree's instructions: the upstream change to read before resolving."""
    row = next((t for t in report["topics"] if t["name"] == topic), None)
    out = []
    for path, found in (row or {}).get("upstream", {}).items():
        hits = [c for c in found["culprits"] if c["overlaps"]]
        if hits:
            c = hits[0]
            what = f"{c['symbol']}()" if c.get("symbol") else path.rsplit("/", 1)[-1]
            label = f"#{c['pr']}" if c.get("pr") is not None else c["sha"][:12]
            out.append(f"upstream {label} rewrote {what} in {path}: read it first "
                       f"(git show {c['sha'][:12]} -- {path})")
    return out


def halted_read_first(ws: Workspace) -> list[str]:
    """read_first() for the rebase halted now, from its saved report (for `series status`)."""
    state = halted.load(ws.repo)
    if state is None or not state.current:
        return []
    try:
        report = json.loads((report_dir(ws.repo) / f"{state.id}.json").read_text())
    except (OSError, ValueError):
        return []  # an adoption's halt, or a report removed by hand: nothing to add
    return read_first(report, state.current) if isinstance(report, dict) and "topics" in report else []
