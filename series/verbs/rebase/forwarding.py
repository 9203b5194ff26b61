"""An ending that hands every step to the ending it wraps: the rebase's own endings
(--as-far-as-possible's all-or-nothing, the semantic check) each change one or two steps
and subclass this, so neither spells out the other five."""

from __future__ import annotations

from dataclasses import dataclass

from series.engine import rebase_state
from series.engine.ending import Ending, Identity, Rewrite
from series.engine.integration import IntegrationResult
from series.engine.odb import MemOdb
from series.engine.ports import TransactionPort, SeriesRepo


@dataclass
class ForwardingEnding:
    inner: Ending

    @property
    def identity(self) -> Identity:
        return self.inner.identity

    @property
    def detects_merged(self) -> bool:
        return self.inner.detects_merged

    def rewrite(self, state: rebase_state.RebaseState) -> Rewrite | None:
        return self.inner.rewrite(state)

    def topic_replayed(
        self, ws: SeriesRepo, state: rebase_state.RebaseState, run: rebase_state.TopicRun, odb: MemOdb
    ) -> None:
        self.inner.topic_replayed(ws, state, run, odb)

    def replayed(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> None:
        self.inner.replayed(ws, state, odb)

    def integration(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> IntegrationResult | None:
        return self.inner.integration(ws, state, odb)

    def fill(
        self,
        tx: TransactionPort,
        ws: SeriesRepo,
        state: rebase_state.RebaseState,
        integration: IntegrationResult | None,
    ) -> None:
        self.inner.fill(tx, ws, state, integration)
