"""How an operation that runs through the engine's resumable flow ends: handed in by the verb.

The engine replays, halts on a conflict, takes the resolution and goes on the same way for
every operation; what differs is the *ending*, which the verb hands in (CONTRIBUTING.md rule 4: the
engine never names a verb, and does not branch on which one is running):

    Ending.identity       the verb's words (kind, transaction command, how to go on, the sentence
                          the halt guard shows): stored in the state as a halted.Halt record,
                          so the next process reads them back as data
    Ending.detects_merged ask the merged-upstream rules (series.engine.merged) first
    Ending.rewrite(state) the message rewrite for replayed commits, or None
    Ending.topic_replayed after each topic's replay, with its record: work on that topic
                          alone may start while git answers the others' merges
                          (MemOdb.when_waiting)
    Ending.replayed       once the replay is done, whatever its outcome (a conflict, a dry
                          run), with its in-memory objects: a look at what replayed cleanly
                          before the engine ends or halts (a check that reports)
    Ending.integration    the integration chain the report shows (None: not rebuilt)
    Ending.fill           the operation's own ref moves and series.yaml edits, into the
                          transaction's operation (checks first that nothing it depends
                          on moved during a halt)

`TopicsEnding` is the ending of an operation over the planned topics (a rebase): every
clean (or emptied) topic's branch moves to its new head, the integration branch is
rebuilt, and series.yaml gets upstream.base, the topics found merged and those dropped
during a halt. The verb gives it its words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import pygit2

from series.ops import halted
from series.engine import rebase_state
from series.engine.integration import IntegrationPart, IntegrationResult, integrate
from series.engine.odb import MemOdb
from series.errors import SeriesError
from series.persisted import JsonObject
from series.git import refs
from series.engine.ports import TransactionPort, SeriesRepo


Rewrite = Callable[[pygit2.Commit], str]


@dataclass(frozen=True)
class Identity:
    """An ending's words, all chosen by the verb."""

    kind: str  # halted.Halt.kind: the verb that resumes a halted state hands the same in
    verb: str  # the transaction's command, as the journal and `series log` show it
    resume: str  # the command that goes on with it ("series rebase")
    go_on: str  # how to go on after resolving ("series rebase" and its flag): hints quote it
    stop: str  # how to put everything back
    noun: str  # "a rebase": in "..., not a rebase"
    what: str  # "a series rebase is in progress": the halt guard's sentence
    nothing: str  # when nothing is halted; {action} is "continue" or "abort"

    def halt(self, payload: JsonObject | None = None, what: str | None = None) -> halted.Halt:
        return halted.Halt(self.kind, what or self.what, self.resume, dict(payload or {}), self.go_on, self.stop)


class Ending(Protocol):
    @property
    def identity(self) -> Identity: ...

    @property
    def detects_merged(self) -> bool: ...

    def rewrite(self, state: rebase_state.RebaseState) -> Rewrite | None: ...

    def topic_replayed(
        self, ws: SeriesRepo, state: rebase_state.RebaseState, run: rebase_state.TopicRun, odb: MemOdb
    ) -> None: ...

    def replayed(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> None: ...

    def integration(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> IntegrationResult | None: ...

    def fill(
        self,
        tx: TransactionPort,
        ws: SeriesRepo,
        state: rebase_state.RebaseState,
        integration: IntegrationResult | None,
    ) -> None: ...


@dataclass(frozen=True)
class TopicsEnding:
    """The ending of an operation over the planned topics (module docstring)."""

    identity: Identity
    detects_merged: bool = True

    def rewrite(self, state: rebase_state.RebaseState) -> Rewrite | None:
        return None

    def topic_replayed(
        self, ws: SeriesRepo, state: rebase_state.RebaseState, run: rebase_state.TopicRun, odb: MemOdb
    ) -> None:
        return None

    def replayed(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> None:
        return None

    def integration(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> IntegrationResult:
        return integrate(ws.repo, pygit2.Oid(hex=state.onto_sha), integration_parts(state), odb=odb)

    def fill(
        self,
        tx: TransactionPort,
        ws: SeriesRepo,
        state: rebase_state.RebaseState,
        integration: IntegrationResult | None,
    ) -> None:
        _moved_meanwhile(ws, state, self.identity.verb)
        dropped = [run.name for run in state.topics if run.outcome == rebase_state.TopicOutcome.DROPPED]
        tx.summary = f"onto {state.onto_name}" + (f"; drop {', '.join(dropped)}" if dropped else "")
        for run in state.topics:
            if run.outcome in _MOVED and run.new_head and run.new_head != run.old_head:
                tx.move(f"refs/heads/{run.branch}", run.new_head, expect=run.old_head)
            elif run.outcome in (*_MOVED, rebase_state.TopicOutcome.MERGED):
                tx.verify(f"refs/heads/{run.branch}", run.old_head)  # checked inside git's transaction
        branch = ws.series.integration
        if branch and integration is not None and integration.ok:
            tx.move(f"refs/heads/{branch}", str(integration.head))
        # series.yaml: the operation's own edits, relative to the file as it started
        tx.seen(state.config_before)
        if state.onto_name != state.old_base_name:
            tx.edit(("upstream", "base"), state.onto_name)
        for run in state.topics:
            if run.outcome == rebase_state.TopicOutcome.MERGED:
                tx.set_topic(run.name, status="merged", merged_in=state.onto_name)
            elif run.outcome == rebase_state.TopicOutcome.DROPPED:  # as `series drop` sets it
                tx.set_topic(run.name, status="dropped", superseded_by=None, reason=run.reason or None)
        tx.extra["onto"] = state.onto_name


# the outcomes whose branch goes where the replay left it: an emptied topic's too (onto the
# new base with no commit of its own, as git rebase leaves a branch whose commits all drop)
_MOVED = (rebase_state.TopicOutcome.CLEAN, rebase_state.TopicOutcome.EMPTY)


def integration_parts(state: rebase_state.RebaseState) -> list[IntegrationPart]:
    return [
        IntegrationPart(
            t.name, pygit2.Oid(hex=t.new_start or state.onto_sha), pygit2.Oid(hex=t.new_head or state.onto_sha)
        )
        for t in state.topics
        if t.outcome == rebase_state.TopicOutcome.CLEAN and t.commits
    ]


def _moved_meanwhile(ws: SeriesRepo, state: rebase_state.RebaseState, verb: str) -> None:
    """A branch the operation moves, or marks merged, must be where it found it: a commit
    made there during a halt would otherwise be carried by no active topic."""
    for run in state.topics:
        if run.outcome not in (*_MOVED, rebase_state.TopicOutcome.MERGED):
            continue
        now = refs.current(ws.repo, f"refs/heads/{run.branch}")
        if now != run.old_head:
            what = "moved" if run.outcome in _MOVED else "was found merged upstream, but moved"
            raise SeriesError(
                f"{run.branch} {what} while the {verb} was halted "
                f"({run.old_head[:12]} -> {(now or 'deleted')[:12]}); nothing was changed",
                f"'{state.halt.stop}', then start again",
            )
