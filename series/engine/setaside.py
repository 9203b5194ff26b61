"""Leaving topics out of a halted operation: what the state becomes (pure; the rebase
saves it and goes on, series.engine.rebase.set_aside).

skip  the topic stays where it was (on the old base: its branch does not move, its status
      is unchanged). The topics that depend on it are skipped with it, never refused: a
      dependent sits on its dependency, and replayed onto the new base without it, its
      branch would carry the dependency's rebased commits while the dependency's own
      branch stayed behind. The same rule as --skip-topic when a rebase starts (plan).
drop  the topic is retired when the operation ends (status dropped, `reason` recorded, the
      branch kept as it is), as `series drop` does; and, as that verb does, refused while
      a topic that stays active (not dropped with it, not found merged) depends on it.

A topic already out of the operation (skipped, dropped, found merged) cannot be left out
again; the topic laid out in the worktree can (the worktree is then given up).
"""

from __future__ import annotations

from dataclasses import replace

from series.engine import rebase_state
from series.errors import SeriesError
from series.model import Series

_OUT = rebase_state.TopicOutcome


def leave_out(
    series: Series, state: rebase_state.RebaseState, *, drop: tuple[str, ...], skip: tuple[str, ...], reason: str | None
) -> rebase_state.RebaseState:
    """`state` with each of `skip` (and its dependents) skipped and each of `drop` dropped
    (module docstring); a one-line error, before anything changes, when one cannot be."""
    for name in (*skip, *drop):
        _run(series, state, name)
    both = set(skip) & set(drop)
    if both:
        raise SeriesError(f"{sorted(both)[0]} is named to skip and to drop: say which")
    for name in skip:
        for gone in (name, *_dependents(series, state, name)):
            run = state.topic(gone)
            if run.outcome.left_out:
                continue
            why = "left out during the rebase, as asked" if gone == name else f"depends on {name}, which is skipped"
            state = _out(state, run, _OUT.SKIPPED, why)
    for name in drop:
        staying = [
            d
            for d in _dependents(series, state, name)
            if d not in drop and state.topic(d).outcome not in (_OUT.DROPPED, _OUT.MERGED)
        ]
        if staying:
            one = len(staying) == 1
            raise SeriesError(
                f"cannot drop {name}: {', '.join(staying)} {'depends' if one else 'depend'} on it "
                f"and {'stays' if one else 'stay'} active",
                "drop them with it (name each to drop), or skip it for this rebase",
            )
    for name in drop:
        state = _out(state, state.topic(name), _OUT.DROPPED, reason or "")
    return state


def _run(series: Series, state: rebase_state.RebaseState, name: str) -> rebase_state.TopicRun:
    series.topic(name)  # an unknown name: the one error, naming the topics there are
    try:
        run = state.topic(name)
    except KeyError:
        raise SeriesError(f"{name} is not part of this rebase (only active topics are)") from None
    if run.outcome.left_out:
        raise SeriesError(f"{name} is {run.outcome.value} in this rebase already: nothing to leave out")
    return run


def _dependents(series: Series, state: rebase_state.RebaseState, name: str) -> list[str]:
    """Every topic of the operation that depends on `name`, directly or through another,
    in series order (series.yaml's depends_on: every dependency, not only the last)."""
    found = {name}
    for run in state.topics:  # a dependency comes before its dependents in series order
        if set(series.topic(run.name).depends_on) & found:
            found.add(run.name)
    return [r.name for r in state.topics if r.name in found and r.name != name]


def _out(
    state: rebase_state.RebaseState, run: rebase_state.TopicRun, outcome: rebase_state.TopicOutcome, reason: str
) -> rebase_state.RebaseState:
    """`run` out of the operation: nothing of its replay is kept (no new head to move to,
    nothing laid out for it)."""
    state = state.with_topic(replace(run, outcome=outcome, reason=reason, new_head=None, conflict=None))
    if state.current == run.name:
        state = replace(state, current=None, materialized=False)
    return state
