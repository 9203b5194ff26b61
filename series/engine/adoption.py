"""An adoption (`series adopt-upstream N`) run through the rebase engine's resumable flow.

A PR whose commits do not apply to upstream.base halts like a rebase does: the same
state file (kind "adopt"), the same worktree with markers and index stages, the same
fault points and recovery. What differs lives here:

    with_trailers(...)      the provenance each replayed message gains
    message_rewrite(state)  that rewrite for the engine's replays (None for a rebase)
    transaction(...)        the end: the new branch and the series.yaml edit recorded at
                            the halt, in one journaled refs.Transaction, exactly what a
                            clean adopt commits (so `series undo` reverts it the same way)

state.adoption holds: number, reference, head (the PR head fetched), branch, expect (the
branch's value when the adoption started: None for a new topic), summary, config_after
(series.yaml as the adoption leaves it), refresh, and result (the command's report
fields, for series.commands.adopt).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pygit2

from series.engine import state as st
from series.engine import worktree as wt
from series.errors import SeriesError
from series.git import refs

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


def transaction(repo: pygit2.Repository, state: st.RebaseState) -> refs.Transaction:
    """The adoption's one Transaction, after checking nothing it depends on moved meanwhile."""
    data = state.adoption or {}
    number, branch = data["number"], data["branch"]
    run = state.topics[0]
    abort = "'series adopt-upstream --abort'"
    if not run.mapping or not run.new_head:
        raise SeriesError(f"every commit of PR #{number} is already in {state.onto_name} after the "
                          f"resolution: nothing to adopt; {abort} ends it")
    path = Path(state.config_path)
    if not path.exists() or path.read_text() != state.config_before:
        raise SeriesError(f"{path.name} changed while the adoption of PR #{number} was halted; nothing "
                          f"was changed: put it back, or {abort} and adopt again")
    ref = f"refs/heads/{branch}"
    now = refs.current(repo, ref)
    if now != data["expect"]:
        raise SeriesError(f"{branch} moved while the adoption of PR #{number} was halted "
                          f"({(data['expect'] or 'absent')[:12]} -> {(now or 'deleted')[:12]}); nothing "
                          f"was changed: {abort}, then adopt again")
    if data.get("refresh") and (found := wt.checkouts(repo, {branch})):
        raise SeriesError(f"{branch} is checked out in {found[0].path}: switch that worktree to another "
                          "branch first, then 'series adopt-upstream --continue'")
    txn = refs.Transaction(repo, "adopt-upstream", str(data["summary"]))
    txn.set(ref, run.new_head, expect=data["expect"])
    txn.write_config(path, str(data["config_after"]))
    txn.extra = {"pr": number, "head": data["head"], "commits": dict(run.mapping)}
    return txn
