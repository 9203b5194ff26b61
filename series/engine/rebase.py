"""Rebase the series: plan (pure) -> replay (in memory) -> commit (all refs at once) -> journal.

    start(ws, onto_spec, ending)   plan every active topic, replay them all, then either
                                   end (the ending fills the transaction's one operation:
                                   for a rebase every branch, the integration branch and
                                   series.yaml's edits) or halt on conflicts
    begin(ws, state, ending)       run a state the verb built (an adoption: one topic)
    continue_rebase(ws, ending)    take the worktree's resolution and go on
    set_aside(ws, ending)          leave topics out of a halted run (skip / drop), go on
    abort_rebase(ws, ending)       put everything back
    ready(ws, ending, action)      whether start / continue / abort can run (the verb asks
                                   before it opens the transaction)
    build_integration(ws)          the integration chain of the current branches (series build)

The verb hands in its ending (series.engine.ending): its words, its message rewrite,
whether merged-upstream rules apply, and what its one operation moves and edits. The
engine never branches on which verb runs; a halted state records the ending's identity as
data (halted.Halt), and the verb that goes on hands the same ending in again.

Every topic is tried before anything is reported, so all conflicts show at once; no branch
under refs/heads moves until every topic is clean. Each entry point but a dry run runs inside
the transaction (series.workspace: the lock for the whole step, repair of an interrupted one,
the halt guard), which the verb opens and hands in as `tx` (the engine never opens one;
`ready` first gives the engine's own refusal, before the transaction's halt guard would); series.yaml gets only the rebase's own edits
(upstream.base, topics marked merged), compared-and-swapped onto the file as it is when
the rebase commits, so a hand edit made during a halt survives. A topic with depends_on goes onto its
dependency's new head (and waits when that one conflicts). Merged-upstream rules live in
series.engine.merged; conflict resolvers/recorders in series.engine.resolve.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import pygit2

from series.ops import faults, journal
from series.engine import merged as merged_rules
from series.ops import halted
from series.engine import rebase_state
from series.engine import setaside, worktree
from series.engine.ending import Ending
from series.engine.merge import prefetch, require_git
from series.engine.integration import IntegrationPart, combine_hint, IntegrationResult, InterTopicConflict, integrate
from series.engine.odb import MemOdb
from series.engine.replay import ReplayStop, _raw_commit, replay_commits, signature_line
from series.engine.resolve import NO_HOOKS, Hooks, ResolvedFile
from series.errors import ConflictError, SeriesError
from series.git import checkouts
from series.git.repo import (
    Abbreviations,
    committer as git_committer,
    encode_message,
    message as commit_message,
    resolve_release,
)
from series.topics import OwnWorks
from series.engine.ports import TransactionPort, SeriesRepo

Progress = Callable[[str, int, int], None]  # (topic being replayed, its number, how many)


@dataclass(frozen=True)
class RebaseOutcome:
    """What a rebase step ended with; series.verbs.rebase turns it into the report."""

    state: rebase_state.RebaseState
    finished: bool  # refs moved (or, dry run: would move)
    dry_run: bool = False
    op_id: str | None = None
    integration: IntegrationResult | None = None
    worktree: Path | None = None
    notes: list[str] = field(default_factory=list)
    persisted: bool = False

    @property
    def conflicts(self) -> list[rebase_state.TopicRun]:
        return [t for t in self.state.topics if t.outcome == rebase_state.TopicOutcome.CONFLICT]


# -- plan ---------------------------------------------------------------------------------


def _stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def plan(ws: SeriesRepo, onto: pygit2.Commit, skip: tuple[str, ...]) -> list[rebase_state.TopicRun]:
    """Each active topic's own commits and where it goes; pure (reads only)."""
    repo = ws.repo
    for name in skip:
        ws.series.topic(name)  # an unknown name is a clear error
    # What is replayed is what status counts (series.topics), REF's history counted as
    # upstream's too: REF need not be a remote branch or a release tag.
    works = OwnWorks(repo, ws.series, ws.base_commit(), upstream=(onto.id,))
    runs: list[rebase_state.TopicRun] = []
    by_name: dict[str, rebase_state.TopicRun] = {}
    for topic in ws.series.active():
        own = works.of(topic)
        if own is None:
            ws.head(topic)  # raises: the one missing-branch error
            raise AssertionError(topic.branch)
        head, start, commits = own.head, own.start.id, own.commits
        active_deps = [d for d in topic.depends_on if d in by_name]
        run = rebase_state.TopicRun(
            name=topic.name,
            branch=topic.branch,
            old_head=str(head.id),
            start=str(start),
            commits=tuple(str(c.id) for c in commits),
            depends_on=active_deps[-1] if active_deps else None,
        )
        if topic.name in skip:
            run = replace(run, outcome=rebase_state.TopicOutcome.SKIPPED, reason="left out, as asked")
        elif run.depends_on and by_name[run.depends_on].outcome == rebase_state.TopicOutcome.SKIPPED:
            run = replace(
                run, outcome=rebase_state.TopicOutcome.SKIPPED, reason=f"depends on {run.depends_on}, which is skipped"
            )
        runs.append(run)
        by_name[topic.name] = run
    return runs


# -- replay --------------------------------------------------------------------------------


def _advance(
    ws: SeriesRepo,
    state: rebase_state.RebaseState,
    odb: MemOdb,
    hooks: Hooks,
    ending: Ending,
    rules: list[merged_rules.MergedRule] | None,
    progress: Progress | None,
) -> rebase_state.RebaseState:
    """Replay every topic that can go on; conflicts and blocked topics wait. The state
    after it, with each topic's new record."""
    repo = ws.repo
    committer = git_committer(repo)
    onto_commit = repo[pygit2.Oid(hex=state.onto_sha)].peel(pygit2.Commit)
    old_base = repo[pygit2.Oid(hex=state.old_base_sha)].peel(pygit2.Commit)
    rewrite = ending.rewrite(state)
    waiting = (rebase_state.TopicOutcome.PENDING, rebase_state.TopicOutcome.BLOCKED)
    total = sum(1 for r in state.topics if r.outcome in waiting)
    count = 0
    with_git = _prefetch(repo, state, odb)
    # a conflict's labels name its commit as git does: one git call for every waiting commit
    abbreviate = Abbreviations(
        repo, (pygit2.Oid(hex=c) for r in state.topics if r.outcome in waiting for c in r.commits[r.done :])
    )
    for name in _replay_order(state, with_git):
        run = state.topic(name)  # the state as the earlier topics left it (a dependency's new head)
        if run.outcome == rebase_state.TopicOutcome.BLOCKED:
            # its "waits for" reason is stale: a pending run's reason is the merged rules' note
            run = replace(run, outcome=rebase_state.TopicOutcome.PENDING, reason="")
        if run.outcome != rebase_state.TopicOutcome.PENDING:
            continue
        count += 1
        if progress:
            progress(run.name, count, total)
        onto = state.onto_sha
        if run.depends_on:
            dep = state.topic(run.depends_on)
            if dep.outcome in (rebase_state.TopicOutcome.CONFLICT, *waiting):
                state = state.with_topic(
                    replace(run, outcome=rebase_state.TopicOutcome.BLOCKED, reason=f"waits for {dep.name} (conflict)")
                )
                continue
            onto = dep.new_head or state.onto_sha
        commits = [repo[pygit2.Oid(hex=c)].peel(pygit2.Commit) for c in run.commits]
        if run.done == 0:
            run = replace(run, new_start=onto)
        if run.done == 0 and ending.detects_merged:
            topic = ws.series.topic(run.name)
            context = merged_rules.MergedContext(
                repo, topic, old_base, onto_commit, state.onto_name, tuple(commits), ws.series.upstream.github
            )
            verdict = merged_rules.first_verdict(context, rules)
            if verdict is not None and verdict.reverted:
                # merged upstream and reverted there: replayed as git replays it, and the
                # report says why it is not retired (kept in the run: --continue has it too)
                run = replace(run, reason=verdict.reason)
            elif verdict is not None:
                state = state.with_topic(
                    replace(
                        run,
                        outcome=rebase_state.TopicOutcome.MERGED,
                        reason=verdict.reason,
                        modified=verdict.modified,
                        detail=verdict.detail,
                        new_head=onto,
                    )
                )
                continue
        head = run.new_head if run.done > 0 and run.new_head else onto
        result = replay_commits(
            repo,
            commits[run.done :],
            pygit2.Oid(hex=head),
            committer=committer,
            resolver=hooks.resolver,
            topic=run.name,
            odb=odb,
            rewrite_message=rewrite,
            abbreviate=abbreviate,
        )
        run = replace(
            run,
            mapping={**run.mapping, **{str(k): str(v) for k, v in result.mapping.items()}},
            dropped=run.dropped + tuple(str(c) for c in result.dropped),
            changed=run.changed + tuple(str(c) for c in result.changed),
            resolved=run.resolved + tuple((str(c), p) for c, p in result.resolved),
            done=run.done + result.done,
            new_head=str(result.head),
        )
        if result.conflict is not None:
            stop = result.conflict
            subject = commit_message(repo[stop.commit].peel(pygit2.Commit)).split("\n", 1)[0]
            run = replace(
                run,
                outcome=rebase_state.TopicOutcome.CONFLICT,
                new_head=str(stop.head),
                conflict=rebase_state.HaltedCommit(
                    str(stop.commit),
                    subject,
                    tuple(c.path for c in stop.conflicts),
                    {c.path: c.kind for c in stop.conflicts},
                ),
            )
        elif run.commits and not run.mapping and _emptied_by_a_resolution(run):
            # a human resolved a commit away (say, to upstream's side), now or in a resolution
            # recorded then and replayed: that proves nothing about what upstream contains,
            # so the topic is not declared merged
            run = replace(
                run,
                outcome=rebase_state.TopicOutcome.EMPTY,
                reason="every commit came out empty, one by the conflict resolution"
                + (f"; {run.reason}" if run.reason else ""),
            )
        elif run.commits and not run.mapping and run.reason:
            # the replay came out empty, yet the merged rules proved the PR reverted upstream
            # (run.reason says so): not "merged"; the branch goes where git's replay puts it
            run = replace(
                run,
                outcome=rebase_state.TopicOutcome.EMPTY,
                reason=f"every commit came out empty; {run.reason}",
            )
        elif run.commits and not run.mapping:
            run = replace(
                run, outcome=rebase_state.TopicOutcome.MERGED, reason=f"every commit is already in {state.onto_name}"
            )
        else:
            run = replace(run, outcome=rebase_state.TopicOutcome.CLEAN)
        state = state.with_topic(run)
        ending.topic_replayed(ws, state, run, odb)
    return state


def _emptied_by_a_resolution(run: rebase_state.TopicRun) -> bool:
    """A commit of `run` resolved in the worktree (_take_resolution) or by a recorded
    resolution came out empty."""
    return bool({c for c, _ in run.by_hand + run.resolved} & set(run.dropped))


def _replay_order(state: rebase_state.RebaseState, with_git: list[str]) -> list[str]:
    """The topics in series order, except that those whose next merge git is answering
    (and the topics that depend on them) come last, in the order their answers can be
    expected: the replay does the rest meanwhile instead of waiting behind a slow merge.
    Topics are independent but for depends_on, so the order changes no result."""
    later = set(with_git)
    for run in state.topics:  # a dependency comes before its dependent in series order
        if run.depends_on in later:
            later.add(run.name)
    rank = {name: i for i, name in enumerate(with_git)}
    deferred = sorted((r.name for r in state.topics if r.name in later), key=lambda name: rank.get(name, len(rank)))
    return [r.name for r in state.topics if r.name not in later] + deferred


def _prefetch(repo: pygit2.Repository, state: rebase_state.RebaseState, odb: MemOdb) -> list[str]:
    """Each independent topic goes onto the new base itself: its merges up to the first
    one git must answer are known before the replay starts, so git can start on those
    at once (series.engine.merge.prefetch). The topics waiting for git are returned,
    the slow merges' last."""
    onto = pygit2.Oid(hex=state.onto_sha)
    onto_tree = odb.commit_tree(onto)
    chains = {}
    for run in state.topics:
        if run.outcome != rebase_state.TopicOutcome.PENDING or run.depends_on or run.done or not run.commits:
            continue
        commits = [repo[pygit2.Oid(hex=c)].peel(pygit2.Commit) for c in run.commits]
        if commits[0].parent_ids == [onto]:
            continue  # already on the new base: replayed as it is
        steps = []
        for commit in commits:
            if len(commit.parents) != 1:
                break  # the replay refuses it
            steps.append((commit.parents[0].tree_id, commit.tree_id))
        chains[run.name] = (onto_tree, steps)
    return prefetch(odb, chains)


def _stop_for(
    ws: SeriesRepo, state: rebase_state.RebaseState, run: rebase_state.TopicRun, odb: MemOdb, hooks: Hooks
) -> ReplayStop:
    """Recompute the halted commit of `run` (cheap, one commit) to lay it out; with the same
    resolver, so paths resolved from memory stay resolved."""
    repo = ws.repo
    commit = repo[pygit2.Oid(hex=run.commits[run.done])].peel(pygit2.Commit)
    result = replay_commits(
        repo,
        [commit],
        pygit2.Oid(hex=run.new_head or state.onto_sha),
        committer=git_committer(repo),
        topic=run.name,
        odb=odb,
        resolver=hooks.resolver,
    )
    if result.conflict is None:
        raise SeriesError(
            f"{run.name}: the conflict in {str(commit.id)[:12]} no longer reproduces",
            f"run '{state.halt.stop}' and start again",
        )
    return result.conflict


# -- halt, commit ----------------------------------------------------------------------------


def _halt(ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb, hooks: Hooks) -> RebaseOutcome:
    repo = ws.repo
    odb.persist()
    rebase_state.protect(repo, state)
    current = next(t for t in state.topics if t.outcome == rebase_state.TopicOutcome.CONFLICT)
    state = replace(state, phase=rebase_state.Phase.CONFLICT, current=current.name, materialized=False)
    rebase_state.save(repo, state)
    faults.fault("rebase-after-state")
    return _materialize(ws, state, odb, hooks)


def _materialize(ws: SeriesRepo, state: rebase_state.RebaseState, odb: MemOdb, hooks: Hooks) -> RebaseOutcome:
    repo = ws.repo
    run = state.topic(state.current or "")
    stop = _stop_for(ws, state, run, odb, hooks)
    path = halted.worktree_path(repo)
    notes = worktree.materialize(repo, path, stop, state.halt.stop)
    faults.fault("rebase-after-worktree")
    state = replace(state, materialized=True)
    rebase_state.save(repo, state)
    return RebaseOutcome(state, finished=False, worktree=path, notes=notes, persisted=True)


def _commit(
    ws: SeriesRepo,
    state: rebase_state.RebaseState,
    odb: MemOdb,
    dry_run: bool,
    ending: Ending,
    tx: TransactionPort | None,
) -> RebaseOutcome:
    """Every topic is replayed: the ending fills the transaction's one operation, which commits."""
    repo = ws.repo
    integration = ending.integration(ws, state, odb)
    if dry_run or tx is None:
        return RebaseOutcome(state, finished=True, dry_run=True, integration=integration)
    ending.fill(tx, ws, state, integration)
    if not tx.moves and not tx.edits:
        halted.clear(repo)  # already there: nothing to journal, nothing for undo to revert
        return RebaseOutcome(state, finished=True, integration=integration, notes=["already up to date: nothing moved"])
    odb.persist()
    before = rebase_state.load(repo)  # None when this run never halted
    state = replace(state, phase=rebase_state.Phase.COMMITTING, op_id=tx.reserve_id())
    rebase_state.save(repo, state)
    faults.fault("rebase-before-transaction")
    try:
        op = tx.commit()
    except SeriesError:
        # The transaction refused (a dirty checkout) or put every ref back (series.yaml could not
        # be replaced): nothing moved, so the run is where it was before, not "committing"
        # (which would read as a halt to go on with), and the command can simply be run again.
        if before is None:
            halted.clear(repo)
        else:
            rebase_state.save(repo, before)
        raise
    return _after_commit(ws, state, op, integration, tx)


def _after_commit(
    ws: SeriesRepo,
    state: rebase_state.RebaseState,
    op: journal.Operation,
    integration: IntegrationResult | None,
    tx: TransactionPort,
) -> RebaseOutcome:
    repo = ws.repo
    # transaction.commit() settled the checkouts already; again here for a process killed in between
    notes = tx.notes + [n for n in tx.settle_checkouts(op) if n not in tx.notes]
    faults.fault("rebase-after-transaction")
    worktree.remove(repo, halted.worktree_path(repo)) if halted.worktree_path(repo).exists() else None
    halted.clear(repo)
    return RebaseOutcome(state, finished=True, op_id=op.id, integration=integration, notes=notes, persisted=True)


def _finish_or_halt(
    ws: SeriesRepo,
    state: rebase_state.RebaseState,
    odb: MemOdb,
    dry_run: bool,
    hooks: Hooks,
    ending: Ending,
    tx: TransactionPort | None,
) -> RebaseOutcome:
    if any(t.outcome == rebase_state.TopicOutcome.CONFLICT for t in state.topics):
        if dry_run:
            return RebaseOutcome(state, finished=False, dry_run=True)
        return _halt(ws, state, odb, hooks)
    return _commit(ws, state, odb, dry_run, ending, tx)


def _transaction(tx: TransactionPort | None) -> TransactionPort:
    """The transaction the verb opened for this step (the engine never opens one: the verb does,
    as a jj command starts the transaction, and hands it in)."""
    if tx is None:
        raise AssertionError("a step that writes runs inside the transaction the verb opens")
    return tx


def _current(ws: SeriesRepo) -> SeriesRepo:
    """The workspace as it is under the lock (another command may have just finished)."""
    text = ws.config_path.read_text()
    return ws if text == ws.text else ws.reload()


# -- the entry points ----------------------------------------------------------------------------


def ready(ws: SeriesRepo, ending: Ending, action: str) -> None:
    """Refuse, in the engine's words, a step that cannot run: `start` while an operation is
    halted, `continue` / `abort` without one of this ending's. The verb asks before it opens
    the transaction (whose halt guard would refuse in general words); the step asks again inside."""
    if action == "start":
        require_git()  # before anything: a rebase that could not finish must not start
        existing = rebase_state.load(ws.repo)
        if existing is not None and existing.halt.kind != ending.identity.kind:
            raise SeriesError(halted.halted_message(existing.halt, ending.identity.resume))
        if existing is not None:
            raise SeriesError(
                f"{ending.identity.noun} onto {existing.onto_name} is in progress (started {existing.started})",
                f"'{existing.halt.go_on}' or '{existing.halt.stop}' first",
            )
    else:
        _require(ws, action, ending)


def start(
    ws: SeriesRepo,
    onto_spec: str,
    ending: Ending,
    *,
    skip: tuple[str, ...] = (),
    dry_run: bool = False,
    hooks: Hooks = NO_HOOKS,
    merged: list[merged_rules.MergedRule] | None = None,
    progress: Progress | None = None,
    tx: TransactionPort | None = None,
) -> RebaseOutcome:
    """Plan every active topic onto `onto_spec`, replay them all, then end or halt; inside
    `tx` (a dry run needs none: it takes no lock and writes nothing)."""
    ready(ws, ending, "start")
    if dry_run:
        return _start(ws, onto_spec, skip, True, hooks, ending, merged, progress, None)
    return _start(_current(ws), onto_spec, skip, False, hooks, ending, merged, progress, _transaction(tx))


def _start(
    ws: SeriesRepo,
    onto_spec: str,
    skip: tuple[str, ...],
    dry_run: bool,
    hooks: Hooks,
    ending: Ending,
    merged: list[merged_rules.MergedRule] | None,
    progress: Progress | None,
    tx: TransactionPort | None,
) -> RebaseOutcome:
    repo = ws.repo
    if not dry_run:
        halted.clear(repo)  # temporary refs of a run killed before it saved its state
    onto_name, onto = resolve_release(repo, onto_spec, ws.series.upstream.remote)
    old_base = ws.base_commit()
    runs = plan(ws, onto, skip)
    if not dry_run:
        names = {r.branch for r in runs if r.outcome == rebase_state.TopicOutcome.PENDING}
        for checkout in checkouts.checkouts(repo, names):
            if checkouts.dirty(checkout):
                raise SeriesError(
                    f"{checkout.branch} is checked out in {checkout.path} with local changes (nothing was changed)",
                    "commit or stash them first",
                )
    state = rebase_state.RebaseState(
        id=f"{ending.identity.kind}-{_stamp()}",
        onto_spec=onto_spec,
        onto_name=onto_name,
        onto_sha=str(onto.id),
        old_base_name=ws.series.upstream.base,
        old_base_sha=str(old_base.id),
        config_path=str(ws.config_path),
        config_before=ws.text or ws.config_path.read_text(),
        topics=tuple(runs),
        halt=ending.identity.halt(),
        skip=tuple(skip),
        started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    )
    odb = MemOdb(repo)
    state = _advance(ws, state, odb, hooks, ending, merged, progress)
    ending.replayed(ws, state, odb)
    return _finish_or_halt(ws, state, odb, dry_run, hooks, ending, tx)


def begin(
    ws: SeriesRepo, state: rebase_state.RebaseState, ending: Ending, *, tx: TransactionPort, hooks: Hooks = NO_HOOKS
) -> RebaseOutcome:
    """Replay a state the verb built (its `halt` names `ending`), then halt on a conflict
    or end as `ending` says; inside `tx`."""
    existing = rebase_state.load(ws.repo)
    if existing is not None:
        raise SeriesError(halted.halted_message(existing.halt, ending.identity.resume))
    halted.clear(ws.repo)  # temporary refs of a run killed before it saved its state
    odb = MemOdb(ws.repo)
    state = _advance(ws, state, odb, hooks, ending, None, None)
    ending.replayed(ws, state, odb)
    return _finish_or_halt(ws, state, odb, False, hooks, ending, tx)


def _require(ws: SeriesRepo, action: str, ending: Ending) -> rebase_state.RebaseState:
    state = rebase_state.load(ws.repo)
    identity = ending.identity
    if state is None:
        raise SeriesError(identity.nothing.format(action=action))
    if state.halt.kind != identity.kind:
        raise SeriesError(f"{state.halt.what}, not {identity.noun}", f"'{state.halt.go_on}' or '{state.halt.stop}'")
    return state


def _take_resolution(
    ws: SeriesRepo,
    state: rebase_state.RebaseState,
    odb: MemOdb,
    hooks: Hooks,
    ending: Ending,
    path: Path,
    tx: TransactionPort,
) -> rebase_state.RebaseState:
    """Commit what the user resolved in the worktree; the topic goes on from there (the
    state saved with it, and with what the recorder wrote through the transaction, until the transaction
    commits it)."""
    repo = ws.repo
    run = state.topic(state.current or "")
    stop = _stop_for(ws, state, run, odb, hooks)
    resolution = worktree.read_resolution(repo, path, run.new_head or "", [c.path for c in stop.conflicts], state.halt)
    refused = hooks.check(run.name, _resolved_files(odb, stop, resolution.tree))
    if refused:
        raise SeriesError(
            f"{run.name}: the resolution is refused (nothing moved): {'; '.join(refused)}",
            f"fix it in {path}, 'git add' it, then '{state.halt.go_on}'",
        )
    for conflict in stop.conflicts:
        hooks.recorder(run.name, conflict.path, conflict, resolution.files.get(conflict.path, b""))
    commit = repo[stop.commit].peel(pygit2.Commit)
    new: pygit2.Oid | None
    if resolution.commit is not None:
        new = resolution.commit
    elif resolution.tree == odb.commit_tree(stop.head):
        new = None  # resolved to nothing: the commit is dropped, as git rebase would
    else:
        raw = _raw_commit(odb, commit)
        rewrite = ending.rewrite(state)
        message = encode_message(rewrite(commit), raw.encoding) if rewrite else raw.message
        new = odb.commit(
            resolution.tree, [stop.head], raw.author, signature_line(git_committer(repo)), message, raw.extra
        )
    if new is None:
        run = replace(run, dropped=run.dropped + (str(commit.id),))
    else:
        run = replace(
            run,
            mapping={**run.mapping, str(commit.id): str(new)},
            changed=run.changed + (str(commit.id),),
            new_head=str(new),
        )
    run = replace(
        run,
        by_hand=run.by_hand + tuple((str(commit.id), c.path) for c in stop.conflicts),
        done=run.done + 1,
        outcome=rebase_state.TopicOutcome.PENDING,
        conflict=None,
    )
    state = replace(state.with_topic(run), current=None, materialized=False, recorded=tuple(tx.files))
    odb.persist()
    rebase_state.protect(repo, state)
    rebase_state.save(repo, state)
    return state


def _resolved_files(odb: MemOdb, stop: ReplayStop, tree: pygit2.Oid) -> list[ResolvedFile]:
    """Every file the resolution changes against the head the commit went onto, with the
    commit's own version (what the hooks' check reads)."""
    own = odb.commit_tree(stop.commit)
    files = []
    for rel, _, new in odb.changed(odb.commit_tree(stop.head), tree):
        if new is None or new[0] not in (0o100644, 0o100755):
            continue  # removed, a symlink or a submodule: no text to check
        mine = odb.lookup(own, rel)
        original = _blob(odb, mine[1]) if mine is not None and mine[0] in (0o100644, 0o100755) else None
        files.append(ResolvedFile(rel, _blob(odb, new[1]), original))
    return files


def _blob(odb: MemOdb, oid: pygit2.Oid) -> bytes:
    return odb.objects[oid][1] if oid in odb else odb.raw(oid)[1]


def continue_rebase(
    ws: SeriesRepo,
    ending: Ending,
    *,
    tx: TransactionPort,
    hooks: Hooks = NO_HOOKS,
    merged: list[merged_rules.MergedRule] | None = None,
    progress: Progress | None = None,
) -> RebaseOutcome:
    """Take the worktree's resolution and go on, inside `tx` (opened to resume this ending's kind)."""
    return _continue(_current(ws), hooks, ending, merged, progress, tx)


def _continue(
    ws: SeriesRepo,
    hooks: Hooks,
    ending: Ending,
    merged: list[merged_rules.MergedRule] | None,
    progress: Progress | None,
    tx: TransactionPort,
) -> RebaseOutcome:
    repo = ws.repo
    state = _require(ws, "continue", ending)
    _restage(state, tx)
    odb = MemOdb(repo)
    if state.phase == rebase_state.Phase.COMMITTING:
        ending.replayed(ws, state, odb)  # replayed before the kill: its objects are in the repository
        op = tx.find(state.op_id or "")
        if op is None or op.state == journal.OpState.ROLLED_BACK:  # killed before its refs moved: commit again
            return _commit(ws, state, odb, False, ending, tx)
        tx.finish(op)  # the transaction's repair has finished it already; idempotent
        return _after_commit(ws, state, op, ending.integration(ws, state, odb), tx)
    path = halted.worktree_path(repo)
    if state.current is not None:  # None: the resolution was taken, a process died after
        if not state.materialized:
            # killed while laying it out: redo it, unless it was complete (then the user
            # may have worked there already)
            if not worktree.laid_out(path, _stop_for(ws, state, state.topic(state.current), odb, hooks)):
                return _materialize(ws, state, odb, hooks)
            state = replace(state, materialized=True)
        state = _take_resolution(ws, state, odb, hooks, ending, path, tx)
    faults.fault("continue-after-commit")
    return _go_on(ws, state, odb, hooks, ending, merged, progress, tx)


def _go_on(
    ws: SeriesRepo,
    state: rebase_state.RebaseState,
    odb: MemOdb,
    hooks: Hooks,
    ending: Ending,
    merged: list[merged_rules.MergedRule] | None,
    progress: Progress | None,
    tx: TransactionPort,
) -> RebaseOutcome:
    """No topic is laid out in the worktree any more: replay what can go on, then halt
    on the next conflict or end."""
    state = _advance(ws, state, odb, hooks, ending, merged, progress)
    ending.replayed(ws, state, odb)
    if any(t.outcome == rebase_state.TopicOutcome.CONFLICT for t in state.topics):
        return _halt(ws, state, odb, hooks)
    path = halted.worktree_path(ws.repo)
    if path.exists():
        worktree.remove(ws.repo, path)
    return _commit(ws, state, odb, False, ending, tx)


def set_aside(
    ws: SeriesRepo,
    ending: Ending,
    *,
    tx: TransactionPort,
    drop: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    reason: str | None = None,
    hooks: Hooks = NO_HOOKS,
    merged: list[merged_rules.MergedRule] | None = None,
    progress: Progress | None = None,
) -> RebaseOutcome:
    """Leave topics out of a halted operation, inside `tx`: each of `skip` stays where it
    was (and so do the topics that depend on it: they sit on it), each of `drop` is retired
    when the operation ends (the ending marks it dropped, `reason` recorded, its branch
    kept). Then as after a resolution: the topic laid out in the worktree, if another one,
    still waits; else the operation goes on to the next conflict or ends."""
    ws = _current(ws)
    repo = ws.repo
    state = _require(ws, "drop" if drop else "skip", ending)
    if state.phase == rebase_state.Phase.COMMITTING:
        raise SeriesError(
            f"every topic of {ending.identity.noun} is replayed already: nothing to leave out",
            f"'{state.halt.go_on}' or '{state.halt.stop}'",
        )
    _restage(state, tx)
    state = setaside.leave_out(ws.series, state, drop=drop, skip=skip, reason=reason)
    odb = MemOdb(repo)
    rebase_state.protect(repo, state)
    rebase_state.save(repo, state)
    faults.fault("setaside-after-state")  # killed here: --continue goes on from this state
    if state.current is None:
        return _go_on(ws, state, odb, hooks, ending, merged, progress, tx)
    if not state.materialized:
        return _materialize(ws, state, odb, hooks)
    return RebaseOutcome(state, finished=False, worktree=halted.worktree_path(repo), persisted=True)


def _restage(state: rebase_state.RebaseState, tx: TransactionPort) -> None:
    """What the hooks recorded in an earlier step, into this step's transaction: a file its own
    transaction wrote already is no change, one a kill lost is written with this step."""
    for change in state.recorded:
        tx.write_recorded(change)


def abort_rebase(ws: SeriesRepo, ending: Ending, *, tx: TransactionPort) -> rebase_state.RebaseState:
    """Put everything back: an operation already committed is reverted through the transaction
    (its own series.yaml edits reversed on the file as it is, later edits kept)."""
    repo = ws.repo
    state = _require(ws, "abort", ending)
    if state.phase == rebase_state.Phase.COMMITTING and state.op_id:
        op = tx.find(state.op_id)
        if op is not None and op.state == journal.OpState.DONE:
            tx.summary = f"abort {state.id}: revert {op.id}"
            tx.revert(op)
            tx.commit()
    worktree.remove(repo, halted.worktree_path(repo))
    halted.clear(repo)
    return state


def in_progress(ws: SeriesRepo) -> rebase_state.RebaseState | None:
    return rebase_state.load(ws.repo)


# -- for `series build` ------------------------------------------------------------------------


def build_integration(ws: SeriesRepo) -> IntegrationResult:
    """The integration chain of the current branches over upstream.base, persisted.

    Raises ConflictError naming every inter-topic conflict ("topic X vs topic Y, file F").
    """
    base = ws.base_commit()
    # Each topic contributes its own diff (series.topics), merged onto the chain so far. A
    # stacked topic's own diff starts where its own commits do: from its dependency's
    # head *now* it would undo whatever the dependency gained since the stack was made.
    owns = [ws.require_own(topic) for topic in ws.series.active()]
    parts = [
        IntegrationPart(own.topic.name, own.start.id, own.head.id, own.topic.depends_on) for own in owns if own.commits
    ]
    result = integrate(ws.repo, base.id, parts)
    if not result.ok:
        raise ConflictError(
            "the topics do not combine: " + "; ".join(str(c) for c in result.conflicts),
            combine_hint(ws, result.conflicts) or None,
        )
    return result


__all__ = [
    "ready",
    "start",
    "begin",
    "continue_rebase",
    "set_aside",
    "abort_rebase",
    "build_integration",
    "integrate",
    "InterTopicConflict",
    "IntegrationResult",
    "RebaseOutcome",
    "plan",
]
