"""`series rebase`'s semantic check: after the replay, before anything moves, what each clean
topic's code breaks against the new base (series.semantic.breaks), and --strict.

The check needs the replayed trees, which a dry run keeps only in memory: the rebase's
ending (series.engine.ending) is wrapped so that, when the engine hands it the replay's
in-memory objects (`replayed`: once, conflict or not, dry run or not), it checks the
topics that replayed cleanly; a conflict elsewhere does not hide their breaks. A topic
the engine has replayed (`topic_replayed`) is checked meanwhile, while the replay waits for
git to answer another topic's merge (MemOdb.when_waiting), and a conflicting topic's files
get their upstream history for the report's culprits the same way: the same answers, kept
until `replayed` and the report ask for them, in time the replay would have spent waiting. Under
--strict a break stops an operation that would otherwise end when the engine asks for
the integration chain, before the transaction has anything to commit (`Held`): the verb
reports it like a conflict (exit 3), nothing moved; on a conflict the rebase halts anyway. The engine's
merge results are untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import pygit2

from series.history import attribution
from series.semantic import base_breaks, breaks
from series.report.rebase_result import TopicFindings, TopicHistory
from series.engine import rebase_state
from series.engine.integration import IntegrationResult
from series.engine.odb import MemOdb
from series.engine.ports import SeriesRepo
from series.verbs.rebase.forwarding import ForwardingEnding


class Held(Exception):
    """--strict found breaks: the operation stops before its transaction commits anything."""

    def __init__(self, state: rebase_state.RebaseState, integration: IntegrationResult | None):
        super().__init__("breaks found under --strict")
        self.state, self.integration = state, integration


def reader(odb: MemOdb) -> breaks.Read:
    """(commit, path) -> the file's bytes, for commits in memory or in the repository."""

    def read(commit: str, path: str) -> bytes | None:
        entry = odb.lookup(odb.commit_tree(pygit2.Oid(hex=commit)), path)
        if entry is None or entry[0] == 0o040000:
            return None
        oid = entry[1]
        return odb.objects[oid][1] if oid in odb else odb.raw(oid)[1]

    return read


def span(run: rebase_state.TopicRun) -> breaks.TopicSpan | None:
    """What the check reads of a topic: one that replayed cleanly (a conflict resolved counts),
    with commits."""
    if run.outcome != rebase_state.TopicOutcome.CLEAN or not run.new_head or not run.commits:
        return None
    # a resolution's own lines count as the topic's (issue 33): by hand or from memory
    resolved = frozenset(path for _, path in run.resolved + run.by_hand)
    return breaks.TopicSpan(run.name, run.start, run.old_head, run.new_head, run.new_start, resolved)


def spans(state: rebase_state.RebaseState) -> list[breaks.TopicSpan]:
    return [s for s in map(span, state.topics) if s is not None]


@dataclass
class CheckedEnding(ForwardingEnding):
    """The rebase's ending, with the semantic check run where the engine hands it the
    replayed objects (module docstring)."""

    strict: bool = False
    found: dict[str, list[breaks.Break]] = field(default_factory=dict)

    _checks: tuple[MemOdb, breaks.TopicBreaks] | None = field(default=None, repr=False, compare=False)
    _history: attribution.PathHistory | None = field(default=None, repr=False, compare=False)

    def upstream_history(self, repo: pygit2.Repository, state: rebase_state.RebaseState) -> attribution.PathHistory:
        """Upstream's old base..new base, kept for the replay: its semantic check and the
        report's conflict culprits (series.verbs.rebase.reach) ask it for their paths."""
        self._history = attribution.PathHistory.over(
            repo, pygit2.Oid(hex=state.old_base_sha), pygit2.Oid(hex=state.onto_sha), self._history
        )
        return self._history

    def _topic_breaks(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> breaks.TopicBreaks:
        """One TopicBreaks per replay (its objects, its two bases)."""
        history = self.upstream_history(ws.repo, state)
        if self._checks is None or self._checks[0] is not odb or self._checks[1].history is not history:
            self._checks = (
                odb,
                base_breaks.topic_breaks(ws.repo, state.old_base_sha, state.onto_sha, reader(odb), history),
            )
        return self._checks[1]

    def topic_replayed(
        self, ws: SeriesRepo, state: rebase_state.RebaseState, run: rebase_state.TopicRun, odb: MemOdb
    ) -> None:
        """Work on this topic while git answers the other topics' merges: its check when
        it replayed cleanly, its conflicted files' upstream history when it conflicts."""
        self.inner.topic_replayed(ws, state, run, odb)
        found = span(run)
        if found is not None:
            check = self._topic_breaks(ws, state, odb)
            odb.when_waiting(lambda: check.topic(found))
        elif run.outcome == rebase_state.TopicOutcome.CONFLICT and run.conflict is not None:
            history, files = self.upstream_history(ws.repo, state), run.conflict.files
            odb.when_waiting(lambda: history.of(files))

    def replayed(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> None:
        self.inner.replayed(ws, state, odb)
        self.found = self._topic_breaks(ws, state, odb).check(spans(state))

    def integration(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> IntegrationResult | None:
        result = self.inner.integration(ws, state, odb)  # only when nothing conflicts: after replayed()
        if self.strict and any(self.found.values()):
            raise Held(state, result)
        return result

    def count(self) -> int:
        return sum(len(v) for v in self.found.values())


def findings(
    state: rebase_state.RebaseState, found: dict[str, list[breaks.Break]], history: Mapping[str, TopicHistory]
) -> dict[str, TopicFindings]:
    """Every topic's line of the report beyond its replay: its breaks (none when none or
    unchecked), where its own commits sat, and upstream's history of it
    (series.verbs.rebase.reach)."""
    return {
        t.name: TopicFindings(t.start, history.get(t.name, TopicHistory()), tuple(found.get(t.name, ())))
        for t in state.topics
    }
