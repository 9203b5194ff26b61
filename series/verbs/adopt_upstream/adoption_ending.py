"""How an adoption ends when it runs through the engine's resumable flow (a PR commit that
conflicts halts it the way a rebase halts): the ending `series adopt-upstream` hands the
engine (series.engine.ending), and the payload it keeps in the halted state.

    with_trailers(...)   the provenance each replayed message gains
    AdoptionPayload      what the ending needs at the end, typed; dumped into halted.Halt.payload
                         and validated when the next process reads it back
    AdoptEnding          the ending: that rewrite, no merged-upstream rules, and fill(): the
                         new branch and the series.yaml edits recorded at the halt, in the
                         transaction's one operation, exactly what a clean adopt commits (so
                         `series undo` reverts it the same way)

The edits are the adoption's own (series.seriesfile.edit), compared-and-swapped onto the file
at the end, so a hand edit made during the halt survives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from series.engine import rebase_state
from series.engine.ending import Identity, Rewrite
from series.engine.integration import IntegrationResult
from series.engine.odb import MemOdb
from series.engine.ports import TransactionPort, SeriesRepo
from series.errors import SeriesError
from series.git import checkouts, refs
from series.git.repo import message
from series.persisted import (
    Json,
    JsonObject,
    read_bool,
    read_int,
    read_list,
    read_object,
    read_opt_str,
    read_str,
    read_strs,
)
from series.seriesfile.edit import Edit

IDENTITY = Identity(
    kind="adopt",
    verb="adopt-upstream",
    resume="series adopt-upstream",
    noun="an adoption",
    go_on="series adopt-upstream --continue",
    stop="series adopt-upstream --abort",
    what="an adoption is halted on a conflict",
    nothing="no adoption is halted: nothing to {action} (adopt with 'series adopt-upstream PR')",
)

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


@dataclass(frozen=True)
class AdoptionPayload:
    """What the adoption's end needs, kept in the halted state (halted.Halt.payload)."""

    number: int
    reference: str  # the Upstream-PR trailer's value
    head: str  # the PR head fetched
    branch: str
    expect: str | None  # the branch's value when the adoption started (None: new topic)
    summary: str  # the journal's summary
    edits: tuple[Edit, ...]  # the adoption's own series.yaml edits
    refresh: bool
    # for the verb's report (series.verbs.adopt_upstream.operation.Adoption), which the engine never reads
    topic: str
    title: str | None
    author: str | None
    source: str
    fork_point: str
    base: str
    replaces: str | None
    previous_head: str | None
    skipped_merges: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict[str, Json]:
        return {
            "number": self.number,
            "reference": self.reference,
            "head": self.head,
            "branch": self.branch,
            "expect": self.expect,
            "summary": self.summary,
            "edits": [e.to_json() for e in self.edits],
            "refresh": self.refresh,
            "topic": self.topic,
            "title": self.title,
            "author": self.author,
            "source": self.source,
            "fork_point": self.fork_point,
            "base": self.base,
            "replaces": self.replaces,
            "previous_head": self.previous_head,
            "skipped_merges": list(self.skipped_merges),
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: JsonObject) -> "AdoptionPayload":
        edits = read_list(data, "edits")
        return cls(
            number=read_int(data, "number"),
            reference=read_str(data, "reference"),
            head=read_str(data, "head"),
            branch=read_str(data, "branch"),
            expect=read_opt_str(data, "expect"),
            summary=read_str(data, "summary"),
            edits=tuple(Edit.from_json(read_object(e, "edits[]")) for e in edits),
            refresh=read_bool(data, "refresh"),
            topic=read_str(data, "topic"),
            title=read_opt_str(data, "title"),
            author=read_opt_str(data, "author"),
            source=read_str(data, "source"),
            fork_point=read_str(data, "fork_point"),
            base=read_str(data, "base"),
            replaces=read_opt_str(data, "replaces"),
            previous_head=read_opt_str(data, "previous_head"),
            skipped_merges=tuple(read_strs(data, "skipped_merges")),
            notes=tuple(read_strs(data, "notes")),
        )


def payload(state: rebase_state.RebaseState) -> AdoptionPayload:
    """The adoption's payload of a halted state, validated (a damaged one: exit 1, named)."""
    try:
        return AdoptionPayload.from_json(state.halt.payload)
    except (ValueError, TypeError) as exc:
        raise SeriesError(
            f"the state of the halted adoption is unreadable (payload {exc}); 'series adopt-upstream --abort' ends it"
        ) from None


@dataclass(frozen=True)
class AdoptEnding:
    """The adoption's ending (module docstring)."""

    identity: Identity = IDENTITY
    detects_merged: bool = False  # the PR is what is adopted, whatever upstream has

    def rewrite(self, state: rebase_state.RebaseState) -> Rewrite | None:
        reference = payload(state).reference
        return lambda commit: with_trailers(message(commit), reference, str(commit.id))

    def topic_replayed(
        self, ws: SeriesRepo, state: rebase_state.RebaseState, run: rebase_state.TopicRun, odb: MemOdb
    ) -> None:
        return None

    def replayed(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> None:
        return None  # nothing to look at before it ends

    def integration(self, ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb) -> IntegrationResult | None:
        return None  # an adoption does not rebuild the integration branch

    def fill(
        self,
        tx: TransactionPort,
        ws: SeriesRepo,
        state: rebase_state.RebaseState,
        integration: IntegrationResult | None,
    ) -> None:
        """The adoption's one operation, after checking nothing it depends on moved meanwhile."""
        data = payload(state)
        number, branch, repo = data.number, data.branch, ws.repo
        run = state.topics[0]
        abort = "'series adopt-upstream --abort'"
        if not run.mapping or not run.new_head:
            raise SeriesError(
                f"every commit of PR #{number} is already in {state.onto_name} after the "
                f"resolution: nothing to adopt; {abort} ends it"
            )
        ref = f"refs/heads/{branch}"
        now = refs.current(repo, ref)
        if now != data.expect:
            raise SeriesError(
                f"{branch} moved while the adoption of PR #{number} was halted "
                f"({(data.expect or 'absent')[:12]} -> {(now or 'deleted')[:12]}); nothing "
                f"was changed: {abort}, then adopt again"
            )
        if data.refresh and (where := checkouts.checked_out_at(repo, branch)) is not None:
            raise SeriesError(
                f"{branch} is checked out in {where}: switch that worktree to another "
                "branch first, then 'series adopt-upstream --continue'"
            )
        tx.summary = data.summary
        tx.move(ref, run.new_head, expect=data.expect)
        tx.seen(state.config_before)
        tx.edits = list(data.edits)
        tx.extra.update({"pr": number, "head": data.head, "commits": dict(run.mapping)})


ENDING = AdoptEnding()
