"""What `series rebase` says about upstream's history, beyond replaying the topics.

annotate(ws, outcome, bisect=, upstream=)
                                         what to add to the report: per conflicting topic and
                                         file the upstream commits that changed the
                                         lines it edits (series.history.attribution);
                                         for a merged topic the upstream commit and PR
                                         that landed it; how far the base is behind
                                         upstream's main; with bisect, the first
                                         breaking upstream commit per conflicting topic
reach(ws, onto, skip)                    --as-far-as-possible: the newest commit on
                                         REF's first-parent line where every active
                                         topic applies (series.engine.bisect)
ReachEnding                              its ending: the rebase's, but all or nothing
                                         with the integration branch
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping

import pygit2

from series.history import attribution
from series.history.attribution import Behind
from series.git.upstream_commit import UpstreamCommit
from series.report.rebase_result import FileCulprits, TopicHistory
from series.engine import rebase
from series.engine import rebase_state
from series.engine.integration import IntegrationResult
from series.engine.ports import TransactionPort, SeriesRepo
from series.verbs.rebase.forwarding import ForwardingEnding
from series.errors import SeriesError
from series.resolutions import engine_hooks
from series.git.repo import changed_paths, resolve_release
from series.workspace import Workspace

if TYPE_CHECKING:  # the rebase's bisection is imported by the two paths that use it
    from series.engine import bisect as bisection

# A conflict lists its likeliest culprits; the rest of upstream's changes to the file are
# counted, not listed (a file like vLLM's gpu_model_runner.py sees dozens per release).
SHOWN = 5


def _commit(repo: pygit2.Repository, sha: str) -> pygit2.Commit:
    return repo[pygit2.Oid(hex=sha)].peel(pygit2.Commit)


def _evidence(
    ws: Workspace,
    run: rebase_state.TopicRun,
    old: pygit2.Commit,
    onto: pygit2.Commit,
    history: Callable[[], list[pygit2.Commit]],
) -> tuple[UpstreamCommit, ...]:
    """The upstream commits that landed a merged topic: its PR's squash when it was adopted
    from one, else the commits after which its files read as the topic has them."""
    repo = ws.repo
    topic = ws.series.topic(run.name)
    if topic.upstream_pr is not None:
        squash = attribution.pr_commit(repo, old.id, onto.id, int(topic.upstream_pr))
        if squash is not None:
            return (squash,)
    # Not ws.own: the topic's own diff as the rebase planned it (run.start..run.old_head);
    # by now the rebase may have moved its branch and upstream.base
    head = _commit(repo, run.old_head)
    start = _commit(repo, run.start)
    paths = [c.path for c in changed_paths(repo, start.tree, head.tree)]
    return tuple(attribution.containing(repo, old.id, onto.id, head.tree, paths, history()))


@dataclass(frozen=True)
class UpstreamHistory:
    """What annotate() found: per topic, and how far the base is behind upstream's main."""

    topics: Mapping[str, TopicHistory]
    behind: Behind | None


def annotate(
    ws: Workspace,
    outcome: rebase.RebaseOutcome,
    *,
    bisect: bool = False,
    upstream: attribution.PathHistory | None = None,
) -> UpstreamHistory:
    """`upstream`: old base..onto as the replay kept it (some paths may be known already)."""
    repo = ws.repo
    state = outcome.state
    old, onto = _commit(repo, state.old_base_sha), _commit(repo, state.onto_sha)
    upstream = attribution.PathHistory.over(repo, old.id, onto.id, upstream)
    history = upstream.commits  # old..onto, walked once for every topic that needs it

    conflicted = [
        path
        for run in state.topics
        if run.outcome == rebase_state.TopicOutcome.CONFLICT and run.conflict
        for path in run.conflict.files
    ]
    # every conflicted file's upstream commits, in one pass over old..onto for those not known yet
    by_path = upstream.of(conflicted) if conflicted else {}
    topics: dict[str, TopicHistory] = {}
    for run in state.topics:
        if run.outcome == rebase_state.TopicOutcome.CONFLICT and run.conflict:
            ours = _commit(repo, run.conflict.commit).tree
            by_file = {}
            for path in run.conflict.files:
                found = attribution.attribute(repo, old.id, onto.id, ours, path, history(), by_path[path])
                by_file[path] = FileCulprits(tuple(found[:SHOWN]), max(0, len(found) - SHOWN))
            topics[run.name] = TopicHistory(upstream=by_file)
        elif run.outcome == rebase_state.TopicOutcome.MERGED:
            topics[run.name] = TopicHistory(evidence=_evidence(ws, run, old, onto, history))
    moved = outcome.finished and not outcome.dry_run and bool(outcome.op_id)
    behind = attribution.behind_main(
        repo,
        ws.series.upstream.remote,
        onto if moved else old,
        (old.id, onto.id, upstream.commits()) if upstream.walked else None,
    )
    if bisect:
        from series.engine import bisect as bisection

        conflicting = [r.name for r in state.topics if r.outcome == rebase_state.TopicOutcome.CONFLICT]
        line = bisection.mainline(repo, old, onto)
        for breaking in bisection.first_breaking(ws, state.topics, line, conflicting, engine_hooks(ws.series)):
            topics[breaking.topic] = replace(topics.get(breaking.topic, TopicHistory()), first_breaking=breaking)
    return UpstreamHistory(topics, behind)


# -- --as-far-as-possible ---------------------------------------------------------------------


def reach(ws: Workspace, onto_spec: str, skip: tuple[str, ...]) -> tuple[str, bisection.Reach]:
    """(REF's resolved name, how far the series applies along its first-parent line)."""
    from series.engine import bisect as bisection

    repo = ws.repo
    onto_name, onto = resolve_release(repo, onto_spec, ws.series.upstream.remote)
    runs = rebase.plan(ws, onto, skip)
    line = bisection.mainline(repo, ws.base_commit(), onto)
    return onto_name, bisection.as_far_as_possible(ws, runs, line, engine_hooks(ws.series))


@dataclass
class ReachEnding(ForwardingEnding):
    """--as-far-as-possible ends as a rebase does, except when the topics, each of which
    applies at the commit it reached, do not combine there: then it moves nothing (exit 1)
    rather than move every branch and the base and leave the integration branch behind.
    A plain rebase reports that as a conflict (exit 3) and moves the rest; the user who asked
    for "as far as possible" asked for a series that works there, and a half-moved series
    whose integration branch still sits on the old base is not one (refs, series.yaml and
    the integration branch never disagree)."""

    reached: str  # where it got to, for the message
    integration_branch: str | None

    def fill(
        self,
        tx: TransactionPort,
        ws: SeriesRepo,
        state: rebase_state.RebaseState,
        integration: IntegrationResult | None,
    ) -> None:
        if integration is not None and not integration.ok:
            branch = (
                f"the integration branch {self.integration_branch}"
                if self.integration_branch
                else "the integration chain"
            )
            raise SeriesError(
                f"as far as possible: nothing moved: every topic applies at {self.reached}, but the topics "
                f"do not combine there ({'; '.join(str(c) for c in integration.conflicts)}), so {branch} "
                "could not be rebuilt; make them combine (series build names the files), then run it again"
            )
        self.inner.fill(tx, ws, state, integration)


def render_target(found: bisection.Reach, onto_name: str) -> str:
    """The commit --as-far-as-possible reached, in a sentence's words."""
    if found.complete or found.target is None:
        return onto_name
    return f"{found.target.sha[:12]} ({found.position} of {found.total} on {onto_name}'s first-parent line)"


def render_reach(found: bisection.Reach, onto_name: str, base: str) -> str:
    if len(base) == 40 and all(ch in "0123456789abcdef" for ch in base):
        base = base[:12]  # a base an earlier --as-far-as-possible left as a commit id
    if found.complete:
        return f"as far as possible: every topic applies at {onto_name} itself ({found.total} commits on its first-parent line)"
    blocker = found.blocker
    assert blocker is not None  # not complete: a commit blocks
    blocked = "; ".join(
        f"{name} ({', '.join(files) or 'waits for its dependency'})" for name, files in found.blocked.items()
    )
    stop = (
        f"upstream {blocker.label} {blocker.sha[:12]} ({blocker.author}, {blocker.date}) "
        f"'{blocker.subject}' blocks the next step: {blocked}"
    )
    if found.target is None:
        return (
            f"as far as possible: nothing moved: even the first commit after {base} on "
            f"{onto_name}'s first-parent line does not apply.\n  {stop}\n"
            f"  resolve it there: 'series rebase --onto {blocker.sha[:12]}'"
        )
    t = found.target
    return (
        f"as far as possible: stopped at {found.position} of {found.total} commits on {onto_name}'s "
        f"first-parent line, {t.sha[:12]} '{t.subject}' ({t.date})\n  {stop}\n"
        f"  ({found.replays} in-memory replays)"
    )
