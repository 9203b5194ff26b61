"""An adoption (`series adopt-upstream N`) run through the rebase engine's resumable flow.

A PR whose commits do not apply to upstream.base halts like a rebase does: the same
state file (kind "adopt"), the same worktree with markers and index stages, the same
fault points and recovery. What differs lives here:

    with_trailers(...)      the provenance each replayed message gains
    message_rewrite(state)  that rewrite for the engine's replays (None for a rebase)
    fill(door, ...)         the end: the new branch and the series.yaml edits recorded at
                            the halt, in the write door's one operation, exactly what a
                            clean adopt commits (so `series undo` reverts it the same way)

state.adoption holds: number, reference, head (the PR head fetched), branch, expect (the
branch's value when the adoption started: None for a new topic), summary, edits (the
adoption's own series.yaml edits, series.seriesedit, compared-and-swapped onto the file
at the end, so a hand edit made during the halt survives), refresh, and result (the
command's report fields, for series.verbs.adopt_upstream.operation).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pygit2

from series import seriesedit
from series.engine import state as st
from series.errors import SeriesError
from series.git import checkouts, refs

KIND = "adopt"

_TRAILER = re.compile(r"^[A-Za-z0-9-]+: \S|^\(cherry picked from commit [0-9a-f]+\)$")


def with_trailers(message: str, reference: str, original: str) -> str:
    """Append Upstream-PR: and the cherry-pick line to the message's trailer block."""
    text = message.rstrip()
    last_paragraph = text.rsplit("\n\n", 1)[-1]
    in_block = "\n\n" in text and all(_TRAILER.match(l) for l in last_paragraph.splitlines())
    lines = []
    if f"Upstream-PR: {reference}" not in last_paragraph.splitlines():
        lines.append(f"Upstream-PR: {reference}")
    lines.append(f"(cherry picked from commit {original})")
    return text + ("\n" if in_block else "\n\n") + "\n".join(lines) + "\n"


def message_rewrite(state: st.RebaseState) -> Callable[[pygit2.Commit], str] | None:
    if state.kind != KIND or state.adoption is None:
        return None
    reference = str(state.adoption["reference"])
    return lambda commit: with_trailers(commit.message, reference, str(commit.id))


def fill(door: "WriteOperation", repo: pygit2.Repository, state: st.RebaseState) -> None:
    """The adoption's one operation, after checking nothing it depends on moved meanwhile."""
    data = state.adoption or {}
    number, branch = data["number"], data["branch"]
    run = state.topics[0]
    abort = "'series adopt-upstream --abort'"
    if not run.mapping or not run.new_head:
        raise SeriesError(f"every commit of PR #{number} is already in {state.onto_name} after the "
                          f"resolution: nothing to adopt; {abort} ends it")
    ref = f"refs/heads/{branch}"
    now = refs.current(repo, ref)
    if now != data["expect"]:
        raise SeriesError(f"{branch} moved while the adoption of PR #{number} was halted "
                          f"({(data['expect'] or 'absent')[:12]} -> {(now or 'deleted')[:12]}); nothing "
                          f"was changed: {abort}, then adopt again")
    if data.get("refresh") and (found := checkouts.checkouts(repo, {branch})):
        raise SeriesError(f"{branch} is checked out in {found[0].path}: switch that worktree to another "
                          "branch first, then 'series adopt-upstream --continue'")
    door.summary = str(data["summary"])
    door.move(ref, run.new_head, expect=data["expect"])
    door.seen(state.config_before)
    if "edits" in data:
        door.edits = [seriesedit.Edit.from_json(e) for e in data["edits"]]
    else:  # a state written before edits were recorded
        door.edits = seriesedit.diff(seriesedit.load_plain(state.config_before, door.config_path or Path()),
                                     seriesedit.load_plain(str(data["config_after"]), door.config_path or Path()))
    door.extra.update({"pr": number, "head": data["head"], "commits": dict(run.mapping)})


if TYPE_CHECKING:
    from series.workspace import WriteOperation
