"""Rebase the series: plan (pure) -> replay (in memory) -> commit (all refs at once) -> journal.

    start(ws, onto_spec, ...)      plan every active topic, replay them all, then either
                                   commit (every branch, the integration branch and
                                   series.yaml's edits through the write door, one
                                   operation) or halt on conflicts
    continue_rebase(ws, ...)       take the worktree's resolution and go on
    abort_rebase(ws)               put everything back
    begin(ws, state)               run a state another command built (adopt-upstream: kind
                                   "adopt", one topic, ends as series.engine.adoption says)
    build_integration(ws)          the integration chain of the current branches (series build)

Every topic is tried before anything is reported, so all conflicts show at once; no branch
under refs/heads moves until every topic is clean. Each entry point runs inside the write
door (series.workspace: the lock for the whole step, repair of an interrupted one, the halt
guard), handed in as `door` or opened here; series.yaml gets only the rebase's own edits
(upstream.base, topics marked merged), compared-and-swapped onto the file as it is when
the rebase commits, so a hand edit made during a halt survives. A topic with depends_on goes onto its
dependency's new head (and waits when that one conflicts). Merged-upstream rules live in
series.engine.merged; conflict resolvers/recorders in series.engine.resolve.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pygit2

from series.engine import adoption
from series.engine import merged as merged_rules
from series.engine import state as st
from series.engine import worktree as wt
from series.engine.merge import require_git
from series.engine.integration import (IntegrationPart, IntegrationResult, InterTopicConflict,
                                       integrate)
from series.engine.odb import MemOdb
from series.engine.replay import (ReplayStop, _raw_commit, default_committer, replay_commits,
                                  signature_line)
from series.engine.resolve import Hooks, hooks as default_hooks
from series.errors import ConflictError, SeriesError
from series.git import checkouts, refs
from series.git.repo import resolve_release, upstream_tips
from series.workspace import Workspace, WriteOperation

Progress = Callable[[str, int, int], None]  # (topic being replayed, its number, how many)


@dataclass
class Outcome:
    """What a rebase step ended with; series.verbs.rebase turns it into the report."""

    state: st.RebaseState
    finished: bool                      # refs moved (or, dry run: would move)
    dry_run: bool = False
    op_id: str | None = None
    integration: IntegrationResult | None = None
    worktree: Path | None = None
    notes: list[str] = field(default_factory=list)
    persisted: bool = False

    @property
    def conflicts(self) -> list[st.TopicRun]:
        return [t for t in self.state.topics if t.outcome == "conflict"]


# -- plan ---------------------------------------------------------------------------------

def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def plan(ws: Workspace, onto: pygit2.Commit, skip: tuple[str, ...]) -> list[st.TopicRun]:
    """Each active topic's own commits and where it goes; pure (reads only).

    The one place besides series.topics that separates a branch's own commits from
    upstream's (tests/test_own_work.py holds it to that): the rebase also counts REF's
    history as upstream's when REF is no remote branch or release tag, and walks upstream
    once for all topics."""
    repo = ws.repo
    for name in skip:
        ws.series.topic(name)  # an unknown name is a clear error
    old_base = ws.base_commit()
    tips = upstream_tips(repo, ws.series.upstream.remote) + [onto.id]
    heads = {t.name: ws.head(t) for t in ws.series.topics
             if t.active or repo.references.get(f"refs/heads/{t.branch}") is not None}
    # Upstream's history (every tag and remote branch, REF included) is walked once for
    # all topics, not once per topic: on a real vLLM clone that is thousands of commits.
    everything = repo.walk(old_base.id, pygit2.enums.SortMode.NONE)
    everything.reset()
    active = ws.series.active()
    for topic in active:
        everything.push(heads[topic.name].id)
    everything.hide(old_base.id)
    for tip in tips:
        everything.hide(tip)
    own = {c.id for c in everything}
    runs: list[st.TopicRun] = []
    by_name: dict[str, st.TopicRun] = {}
    for topic in active:
        head = heads[topic.name]
        walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
        fork = repo.merge_base(old_base.id, head.id)
        walker.hide(fork if fork is not None else old_base.id)
        for dep in topic.depends_on:
            if dep in heads:
                walker.hide(heads[dep].id)
        commits = [c for c in walker if c.id in own]
        start = commits[0].parents[0].id if commits and commits[0].parents else head.id
        active_deps = [d for d in topic.depends_on if d in by_name]
        run = st.TopicRun(name=topic.name, branch=topic.branch, old_head=str(head.id), start=str(start),
                          commits=[str(c.id) for c in commits],
                          depends_on=active_deps[-1] if active_deps else None)
        if topic.name in skip:
            run.outcome, run.reason = "skipped", "left out with --skip-topic"
        elif run.depends_on and by_name[run.depends_on].outcome == "skipped":
            run.outcome, run.reason = "skipped", f"depends on {run.depends_on}, which is skipped"
        runs.append(run)
        by_name[topic.name] = run
    return runs


# -- replay --------------------------------------------------------------------------------

def _advance(ws: Workspace, state: st.RebaseState, odb: MemOdb, hooks: Hooks,
             rules: list[merged_rules.MergedRule] | None, progress: Progress | None) -> None:
    """Replay every topic that can go on; conflicts and blocked topics wait."""
    repo = ws.repo
    committer = default_committer(repo)
    onto_commit = repo[pygit2.Oid(hex=state.onto_sha)].peel(pygit2.Commit)
    old_base = repo[pygit2.Oid(hex=state.old_base_sha)].peel(pygit2.Commit)
    rewrite = adoption.message_rewrite(state)
    total = sum(1 for r in state.topics if r.outcome in ("pending", "blocked"))
    count = 0
    for run in state.topics:
        if run.outcome == "blocked":
            run.outcome = "pending"
        if run.outcome != "pending":
            continue
        count += 1
        if progress:
            progress(run.name, count, total)
        onto = state.onto_sha
        if run.depends_on:
            dep = state.topic(run.depends_on)
            if dep.outcome in ("conflict", "blocked", "pending"):
                run.outcome, run.reason = "blocked", f"waits for {dep.name} (conflict)"
                continue
            onto = dep.new_head or state.onto_sha
        commits = [repo[pygit2.Oid(hex=c)].peel(pygit2.Commit) for c in run.commits]
        if run.done == 0:
            run.new_start = onto
        if run.done == 0 and state.kind == "rebase":
            topic = ws.series.topic(run.name)
            verdict = merged_rules.first_verdict(merged_rules.MergedContext(
                repo, topic, old_base, onto_commit, state.onto_name, tuple(commits)), rules)
            if verdict is not None:
                run.outcome, run.reason = "merged", verdict.reason
                run.modified, run.detail, run.new_head = verdict.modified, verdict.detail, onto
                continue
        head = run.new_head if run.done > 0 and run.new_head else onto
        result = replay_commits(repo, commits[run.done:], pygit2.Oid(hex=head), committer=committer,
                                resolver=hooks.resolver, topic=run.name, odb=odb,
                                rewrite_message=rewrite)
        run.mapping.update({str(k): str(v) for k, v in result.mapping.items()})
        run.dropped += [str(c) for c in result.dropped]
        run.changed += [str(c) for c in result.changed]
        run.resolved += [[str(c), p] for c, p in result.resolved]
        run.done += result.done
        run.new_head = str(result.head)
        if result.conflict is not None:
            stop = result.conflict
            subject = repo[stop.commit].message.split("\n", 1)[0]  # type: ignore[attr-defined]
            run.outcome, run.new_head = "conflict", str(stop.head)
            run.conflict = {"commit": str(stop.commit), "subject": subject,
                            "files": [c.path for c in stop.conflicts],
                            "kinds": {c.path: c.kind for c in stop.conflicts}}
        elif run.commits and not run.mapping:
            run.outcome, run.reason = "merged", f"every commit is already in {state.onto_name}"
        else:
            run.outcome = "clean"


def _stop_for(ws: Workspace, state: st.RebaseState, run: st.TopicRun, odb: MemOdb,
              hooks: Hooks) -> ReplayStop:
    """Recompute the halted commit of `run` (cheap, one commit) to lay it out; with the same
    resolver, so paths resolved from memory stay resolved."""
    repo = ws.repo
    commit = repo[pygit2.Oid(hex=run.commits[run.done])].peel(pygit2.Commit)
    result = replay_commits(repo, [commit], pygit2.Oid(hex=run.new_head or state.onto_sha),
                            committer=default_committer(repo), topic=run.name, odb=odb,
                            resolver=hooks.resolver)
    if result.conflict is None:
        raise SeriesError(f"{run.name}: the conflict in {str(commit.id)[:12]} no longer reproduces; "
                          f"run '{st.resume_command(state)} --abort' and start again")
    return result.conflict


# -- halt, commit ----------------------------------------------------------------------------

def _halt(ws: Workspace, state: st.RebaseState, odb: MemOdb, hooks: Hooks) -> Outcome:
    repo = ws.repo
    odb.persist()
    st.protect(repo, state)
    current = next(t for t in state.topics if t.outcome == "conflict")
    state.phase, state.current, state.materialized = "conflict", current.name, False
    st.save(repo, state)
    st.fault("rebase-after-state")
    return _materialize(ws, state, odb, hooks)


def _materialize(ws: Workspace, state: st.RebaseState, odb: MemOdb, hooks: Hooks) -> Outcome:
    repo = ws.repo
    run = state.topic(state.current or "")
    stop = _stop_for(ws, state, run, odb, hooks)
    path = st.worktree_path(repo)
    notes = wt.materialize(repo, path, stop)
    st.fault("rebase-after-worktree")
    state.materialized = True
    st.save(repo, state)
    return Outcome(state, finished=False, worktree=path, notes=notes, persisted=True)


def _rebase_edits(door: WriteOperation, state: st.RebaseState) -> None:
    """The rebase's own series.yaml edits, relative to the file as the rebase started."""
    door.seen(state.config_before)
    if state.onto_name != state.old_base_name:
        door.edit(("upstream", "base"), state.onto_name)
    for run in state.topics:
        if run.outcome == "merged":
            door.set_topic(run.name, status="merged", merged_in=state.onto_name)


def _integration_parts(state: st.RebaseState) -> list[IntegrationPart]:
    return [IntegrationPart(t.name, pygit2.Oid(hex=t.new_start or state.onto_sha),
                            pygit2.Oid(hex=t.new_head or state.onto_sha))
            for t in state.topics if t.outcome == "clean" and t.commits]


def _commit_adoption(ws: Workspace, state: st.RebaseState, odb: MemOdb, door: WriteOperation) -> Outcome:
    adoption.fill(door, ws.repo, state)
    odb.persist()
    state.phase, state.op_id = "committing", door.reserve_id()
    st.save(ws.repo, state)
    st.fault("rebase-before-transaction")
    return _after_commit(ws, state, door.commit(), None, door)


def _moved_meanwhile(ws: Workspace, state: st.RebaseState) -> None:
    """A branch the rebase moves, or marks merged, must be where the rebase found it: a
    commit made there during a halt would otherwise be carried by no active topic."""
    for run in state.topics:
        if run.outcome not in ("clean", "merged"):
            continue
        now = refs.current(ws.repo, f"refs/heads/{run.branch}")
        if now != run.old_head:
            what = "moved" if run.outcome == "clean" else "was found merged upstream, but moved"
            raise SeriesError(f"{run.branch} {what} while the rebase was halted ({run.old_head[:12]} -> "
                              f"{(now or 'deleted')[:12]}); nothing was changed: 'series rebase --abort', "
                              "then start again")


def _commit(ws: Workspace, state: st.RebaseState, odb: MemOdb, dry_run: bool,
            door: WriteOperation | None) -> Outcome:
    repo = ws.repo
    if state.kind == adoption.KIND and door is not None:
        return _commit_adoption(ws, state, odb, door)
    integration = integrate(repo, pygit2.Oid(hex=state.onto_sha), _integration_parts(state), odb=odb)
    if dry_run or door is None:
        return Outcome(state, finished=True, dry_run=True, integration=integration)
    _moved_meanwhile(ws, state)
    odb.persist()
    door.summary = f"onto {state.onto_name}"
    for run in state.topics:
        if run.outcome == "clean" and run.new_head and run.new_head != run.old_head:
            door.move(f"refs/heads/{run.branch}", run.new_head, expect=run.old_head)
        elif run.outcome in ("clean", "merged"):
            door.verify(f"refs/heads/{run.branch}", run.old_head)  # checked inside git's transaction
    branch = ws.series.integration
    if branch and integration.ok:
        door.move(f"refs/heads/{branch}", str(integration.head))
    _rebase_edits(door, state)
    if not door.moves and not door.edits:
        st.clear(repo)  # already there: nothing to journal, nothing for undo to revert
        return Outcome(state, finished=True, integration=integration, notes=["already up to date: nothing moved"])
    door.extra["onto"] = state.onto_name
    state.phase, state.op_id = "committing", door.reserve_id()
    st.save(repo, state)
    st.fault("rebase-before-transaction")
    op = door.commit()
    return _after_commit(ws, state, op, integration, door)


def _after_commit(ws: Workspace, state: st.RebaseState, op: refs.Operation,
                  integration: IntegrationResult | None, door: WriteOperation) -> Outcome:
    repo = ws.repo
    # door.commit() settled the checkouts already; again here for a process killed in between
    notes = door.notes + [n for n in refs.settle_checkouts(repo, op) if n not in door.notes]
    st.fault("rebase-after-transaction")
    wt.remove(repo, st.worktree_path(repo)) if st.worktree_path(repo).exists() else None
    st.clear(repo)
    return Outcome(state, finished=True, op_id=op.id, integration=integration, notes=notes, persisted=True)


def _finish_or_halt(ws: Workspace, state: st.RebaseState, odb: MemOdb, dry_run: bool,
                    hooks: Hooks, door: WriteOperation | None) -> Outcome:
    if any(t.outcome == "conflict" for t in state.topics):
        if dry_run:
            return Outcome(state, finished=False, dry_run=True)
        return _halt(ws, state, odb, hooks)
    return _commit(ws, state, odb, dry_run, door)


@contextlib.contextmanager
def _door(ws: Workspace, door: WriteOperation | None, kind: str,
          resumes: str | None) -> Iterator[WriteOperation]:
    """The door the caller handed in, or one opened for this step."""
    if door is not None:
        yield door
        return
    with ws.operation("adopt-upstream" if kind == adoption.KIND else "rebase", resumes=resumes) as opened:
        yield opened


def _current(ws: Workspace) -> Workspace:
    """The workspace as it is under the lock (another command may have just finished)."""
    text = ws.config_path.read_text()
    return ws if text == ws.text else ws.reload()


# -- the entry points ----------------------------------------------------------------------------

def start(ws: Workspace, onto_spec: str, *, skip: tuple[str, ...] = (), dry_run: bool = False,
          hooks: Hooks | None = None, merged: list[merged_rules.MergedRule] | None = None,
          progress: Progress | None = None, door: WriteOperation | None = None) -> Outcome:
    repo = ws.repo
    require_git()  # before anything: a rebase that could not finish must not start
    existing = st.load(repo)
    if existing is not None and existing.kind != "rebase":
        raise SeriesError(st.halted_message(existing, "series rebase"))
    if existing is not None:
        raise SeriesError(f"a rebase onto {existing.onto_name} is in progress (started {existing.started}); "
                          "'series rebase --continue' or 'series rebase --abort' first")
    if dry_run:
        return _start(ws, onto_spec, skip, True, hooks, merged, progress, None)
    with _door(ws, door, "rebase", None) as opened:
        return _start(_current(ws), onto_spec, skip, False, hooks, merged, progress, opened)


def _start(ws: Workspace, onto_spec: str, skip: tuple[str, ...], dry_run: bool, hooks: Hooks | None,
           merged: list[merged_rules.MergedRule] | None, progress: Progress | None,
           door: WriteOperation | None) -> Outcome:
    repo = ws.repo
    if not dry_run:
        st.clear(repo)  # temporary refs of a run killed before it saved its state
    onto_name, onto = resolve_release(repo, onto_spec)
    old_base = ws.base_commit()
    runs = plan(ws, onto, skip)
    if not dry_run:
        names = {r.branch for r in runs if r.outcome == "pending"}
        for checkout in checkouts.checkouts(repo, names):
            if checkouts.dirty(checkout):
                raise SeriesError(f"{checkout.branch} is checked out in {checkout.path} with local changes; "
                                  "commit or stash them first (nothing was changed)")
    state = st.RebaseState(
        id=f"rebase-{_stamp()}", onto_spec=onto_spec, onto_name=onto_name, onto_sha=str(onto.id),
        old_base_name=ws.series.upstream.base, old_base_sha=str(old_base.id),
        config_path=str(ws.config_path), config_before=ws.text or ws.config_path.read_text(), topics=runs,
        skip=list(skip), started=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    odb = MemOdb(repo)
    hooks = hooks or default_hooks(ws.series)
    _advance(ws, state, odb, hooks, merged, progress)
    return _finish_or_halt(ws, state, odb, dry_run, hooks, door)


def begin(ws: Workspace, state: st.RebaseState, *, hooks: Hooks | None = None,
          door: WriteOperation | None = None) -> Outcome:
    """Replay a state built by another command, then halt on a conflict or commit; what
    `kind` ends with is decided in _commit (series adopt-upstream: kind "adopt")."""
    existing = st.load(ws.repo)
    if existing is not None:
        raise SeriesError(st.halted_message(existing, st.resume_command(state)))
    with _door(ws, door, state.kind, None) as opened:
        st.clear(ws.repo)  # temporary refs of a run killed before it saved its state
        odb = MemOdb(ws.repo)
        hooks = hooks or default_hooks(ws.series)
        _advance(ws, state, odb, hooks, None, None)
        return _finish_or_halt(ws, state, odb, False, hooks, opened)


_NOTHING = {"rebase": "no rebase in progress: nothing to {verb} (start one with 'series rebase --onto REF')",
            adoption.KIND: "no adoption is halted: nothing to {verb} (adopt with 'series adopt-upstream PR')"}


def _require(ws: Workspace, verb: str, kind: str) -> st.RebaseState:
    state = st.load(ws.repo)
    if state is None:
        raise SeriesError(_NOTHING[kind].format(verb=verb))
    if state.kind != kind:
        command = st.resume_command(state)
        raise SeriesError(f"{st.halted_what(state)}, not {'a rebase' if kind == 'rebase' else 'an adoption'}: "
                          f"'{command} --continue' or '{command} --abort'")
    return state


def _take_resolution(ws: Workspace, state: st.RebaseState, odb: MemOdb, hooks: Hooks, path: Path) -> None:
    """Commit what the user resolved in the worktree; the topic goes on from there."""
    repo = ws.repo
    run = state.topic(state.current or "")
    stop = _stop_for(ws, state, run, odb, hooks)
    resolution = wt.read_resolution(repo, path, run.new_head or "", [c.path for c in stop.conflicts],
                                    st.resume_command(state))
    for conflict in stop.conflicts:
        hooks.recorder(run.name, conflict.path, conflict, resolution.files.get(conflict.path, b""))
    commit = repo[stop.commit].peel(pygit2.Commit)
    new: pygit2.Oid | None
    if resolution.commit is not None:
        new = resolution.commit
    elif resolution.tree == odb.commit_tree(stop.head):
        new = None  # resolved to nothing: the commit is dropped, as git rebase would
    else:
        raw = _raw_commit(repo, commit)
        rewrite = adoption.message_rewrite(state)
        message = rewrite(commit).encode(raw.encoding, "replace") if rewrite else raw.message
        new = odb.commit(resolution.tree, [stop.head], raw.author, signature_line(default_committer(repo)),
                         message, raw.extra)
    if new is None:
        run.dropped.append(str(commit.id))
    else:
        run.mapping[str(commit.id)] = str(new)
        run.changed.append(str(commit.id))
        run.new_head = str(new)
    run.by_hand += [[str(commit.id), c.path] for c in stop.conflicts]
    run.done += 1
    run.outcome, run.conflict = "pending", None
    state.current, state.materialized = None, False
    odb.persist()
    st.protect(repo, state)
    st.save(repo, state)


def continue_rebase(ws: Workspace, *, hooks: Hooks | None = None,
                    merged: list[merged_rules.MergedRule] | None = None,
                    progress: Progress | None = None, kind: str = "rebase",
                    door: WriteOperation | None = None) -> Outcome:
    _require(ws, "continue", kind)
    with _door(ws, door, kind, kind) as opened:
        return _continue(_current(ws), hooks, merged, progress, kind, opened)


def _continue(ws: Workspace, hooks: Hooks | None, merged: list[merged_rules.MergedRule] | None,
              progress: Progress | None, kind: str, door: WriteOperation) -> Outcome:
    repo = ws.repo
    state = _require(ws, "continue", kind)
    hooks = hooks or default_hooks(ws.series)
    odb = MemOdb(repo)
    if state.phase == "committing":
        op = refs.find(repo, state.op_id or "")
        if op is None or op.state == "rolled-back":  # killed before its refs moved: commit again
            return _commit(ws, state, odb, False, door)
        refs.finish(repo, op)  # the door's repair has finished it already; idempotent
        if state.kind != "rebase":
            return _after_commit(ws, state, op, None, door)
        integration = integrate(repo, pygit2.Oid(hex=state.onto_sha), _integration_parts(state), odb=odb)
        return _after_commit(ws, state, op, integration, door)
    path = st.worktree_path(repo)
    if state.current is not None:  # None: the resolution was taken, a process died after
        if not state.materialized:
            # killed while laying it out: redo it, unless it was complete (then the user
            # may have worked there already)
            if not wt.laid_out(path, _stop_for(ws, state, state.topic(state.current), odb, hooks)):
                return _materialize(ws, state, odb, hooks)
            state.materialized = True
        _take_resolution(ws, state, odb, hooks, path)
    st.fault("continue-after-commit")
    _advance(ws, state, odb, hooks, merged, progress)
    if any(t.outcome == "conflict" for t in state.topics):
        return _halt(ws, state, odb, hooks)
    if path.exists():
        wt.remove(repo, path)
    return _commit(ws, state, odb, False, door)


def abort_rebase(ws: Workspace, kind: str = "rebase", door: WriteOperation | None = None) -> st.RebaseState:
    """Put everything back: a transaction already committed is reverted through the door
    (its own series.yaml edits reversed on the file as it is, later edits kept)."""
    _require(ws, "abort", kind)
    with _door(ws, door, kind, kind) as opened:
        repo = ws.repo
        state = _require(ws, "abort", kind)
        if state.phase == "committing" and state.op_id:
            op = refs.find(repo, state.op_id)
            if op is not None and op.state == "done":
                opened.summary = f"abort {state.id}: revert {op.id}"
                opened.revert(op)
                opened.commit()
        wt.remove(repo, st.worktree_path(repo))
        st.clear(repo)
        return state


def in_progress(ws: Workspace) -> st.RebaseState | None:
    return st.load(ws.repo)


# -- for `series build` ------------------------------------------------------------------------

def build_integration(ws: Workspace) -> IntegrationResult:
    """The integration chain of the current branches over upstream.base, persisted.

    Raises ConflictError naming every inter-topic conflict ("topic X vs topic Y, file F").
    """
    base = ws.base_commit()
    # Each topic contributes its own diff (series.topics), merged onto the chain so far. A
    # stacked topic's own diff starts where its own commits do: from its dependency's
    # head *now* it would undo whatever the dependency gained since the stack was made.
    owns = [ws.require_own(topic) for topic in ws.series.active()]
    parts = [IntegrationPart(own.topic.name, own.start.id, own.head.id) for own in owns if own.commits]
    result = integrate(ws.repo, base.id, parts)
    if not result.ok:
        raise ConflictError("the topics do not combine: " + "; ".join(str(c) for c in result.conflicts))
    return result


__all__ = ["start", "begin", "continue_rebase", "abort_rebase", "build_integration", "integrate",
           "InterTopicConflict", "IntegrationResult", "Outcome", "plan"]
