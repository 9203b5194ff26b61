"""`series rebase`: --onto REF, --continue, --abort, and while halted --skip-topic /
--drop-topic (leave a topic out and go on). The rebase is series.engine.rebase;
this module fetches when asked, opens the transaction for each step that writes (the lock
for the whole step, as a jj command starts its transaction) and hands it to the rebase,
and writes the report."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import EXIT_CONFLICT, SeriesError

# The rebase engine, its semantic check and the report load in the function that first
# needs them, after the workspace is open: `series rebase --help`, a usage error and the
# start-up before the first git call pay for none of them (tests/test_startup_imports.py).
if TYPE_CHECKING:
    from series.engine import bisect as bisection
    from series.engine import rebase
    from series.engine.ending import TopicsEnding
    from series.resolutions import Refusal
    from series.verbs.rebase import semantic
    from series.workspace import Workspace, Transaction

T = TypeVar("T")


@functools.cache
def ending() -> TopicsEnding:
    """How a rebase ends (series.engine.ending): every topic's branch, the integration branch,
    upstream.base and the topics found merged; these are its words. Made on first use: the
    engine's ending brings its merge machinery with it."""
    from series.engine.ending import Identity, TopicsEnding

    return TopicsEnding(
        Identity(
            kind="rebase",
            verb="rebase",
            resume="series rebase",
            noun="a rebase",
            go_on="series rebase --continue",
            stop="series rebase --abort",
            what="a series rebase is in progress",
            nothing="no rebase in progress: nothing to {action} (start one with 'series rebase --onto REF')",
        )
    )


@dataclass(frozen=True)
class Result:
    report: Mapping[str, object]  # the --json document
    text: str
    path: str
    conflict: bool  # a topic conflicts, or the topics do not combine


def _blobs_for(ws: Workspace, onto: str) -> None:
    """A partial clone also needs the new base's side of every file the topics change."""
    from series.git import partial
    from series.git.repo import resolve_release

    if not partial.is_partial(ws.repo):
        return
    try:
        target = resolve_release(ws.repo, onto, ws.series.upstream.remote)[1]
    except SeriesError:
        return  # the rebase names a bad --onto in its own words
    heads = [ws.head(t) for t in ws.series.active()]
    partial.ensure_blobs(ws.repo, ws.base_commit(), heads, target)


def _finish(
    ws: Workspace,
    outcome: rebase.RebaseOutcome,
    ending: semantic.CheckedEnding,
    *,
    bisect: bool = False,
    farthest: tuple[str, bisection.Reach] | None = None,
    refused: list[Refusal] | None = None,
) -> Result:
    from series.report.rebase_result import RebaseResult, RefusedResolution
    from series.engine import rebase
    from series.engine import report as rebase_report
    from series.verbs.rebase import reach, semantic
    from series.verbs.rebase import text as rebase_text

    report_id = outcome.op_id or (f"dry-run-{rebase._stamp()}" if outcome.dry_run else outcome.state.id)
    report = rebase_report.build(ws.repo, outcome, report_id, "rebase")
    history = reach.annotate(ws, outcome, bisect=bisect, upstream=ending.upstream_history(ws.repo, outcome.state))
    held = ending.strict and ending.count() > 0
    root = ws.series.root
    result = RebaseResult(
        report,
        semantic.findings(outcome.state, ending.found, history.topics),
        history.behind,
        strict=ending.strict,
        held=held,
        # recorded resolutions not replayed: their conflicts went to a human (issue 33)
        refused=tuple(RefusedResolution.from_json(r.to_json(root)) for r in refused or ()),
        reach=farthest[1] if farthest is not None else None,
    )
    text = rebase_text.render(result, ws.series.integration)
    if farthest is not None:
        text = reach.render_reach(farthest[1], farthest[0], outcome.state.old_base_name) + "\n" + text
    if outcome.worktree is not None:
        run = outcome.state.topic(outcome.state.current or "")
        text += (
            f"\nresolve {run.name} in {outcome.worktree}: edit the conflicting files, 'git add' them, "
            "then 'series rebase --continue' (or 'series rebase --abort' to put everything back)"
        )
        from series.report.read_first import read_first  # only a halt lays out what to read first

        text += "".join(f"\n  {line}" for line in read_first(result, run.name))
        text += (
            f"\nor leave it out: 'series rebase --skip-topic {run.name}' (it stays where it is, this rebase "
            f"only) or 'series rebase --drop-topic {run.name} --reason TEXT' (stop carrying it)"
        )
    elif held:
        text += f"\n--strict: {ending.count()} break(s) count as conflicts; nothing was changed"
    elif report.status == rebase_report.ReportStatus.CONFLICT:
        text += "\nnothing was changed (dry run)" if outcome.dry_run else ""
    by_hand = [p for t in outcome.state.topics for _, p in t.by_hand]
    store = ws.series.root / ws.series.resolutions
    if outcome.finished and by_hand and store.is_dir():
        # the recorder wrote into the work tree: say so, and what the files are for
        rel = store.relative_to(ws.series.root) if store.is_relative_to(ws.series.root) else store
        text += (
            f"\nrecorded how {len(by_hand)} conflict(s) were resolved in {rel}/ (commit it to share "
            "the resolutions with CI and the next rebase; 'series resolutions' lists them)"
        )
    path = rebase_report.write(ws.repo, report, result.to_json(), text)
    text += f"\nreport: {path}"
    return Result(replace(result, saved=str(path)).to_json(), text, str(path), report.conflict or held)


def _step(ws: Workspace, action: str, step: Callable[[Transaction], T]) -> T:
    """One rebase step inside the transaction this verb opens: the rebase's own refusal first (a
    halted rebase, or none to go on with), then the lock; `continue` and `abort` go on with
    the rebase's halted state, which the transaction's halt guard lets through."""
    from series.engine import rebase

    identity = ending().identity
    rebase.ready(ws, ending(), action)
    with ws.transaction(identity.verb, resumes=identity.kind if action != "start" else None) as tx:
        done = step(tx)
        if tx.committed is None and tx.files and not tx.moves:
            # halted again (or nothing to move): what the conflict memory recorded in this
            # step is still its own operation, which 'series undo' reverts
            tx.summary = f"record {len(tx.files)} conflict resolution(s)"
            tx.commit()
        return done


def _checked(
    ws: Workspace,
    ending: semantic.CheckedEnding,
    dry_run: bool,
    replay: Callable[[semantic.CheckedEnding], rebase.RebaseOutcome],
) -> rebase.RebaseOutcome:
    """Replay with the semantic check; under --strict a break stops it before the commit."""
    from series.engine import rebase
    from series.verbs.rebase import semantic

    try:
        return replay(ending)
    except semantic.Held as held:
        return rebase.RebaseOutcome(held.state, finished=False, dry_run=dry_run, integration=held.integration)


def run(
    ws: Workspace,
    *,
    onto: str | None = None,
    fetch: bool = False,
    dry_run: bool = False,
    skip: tuple[str, ...] = (),
    resume: bool = False,
    abort: bool = False,
    progress: rebase.Progress | None = None,
    bisect: bool = False,
    as_far_as_possible: bool = False,
    strict: bool = False,
    drop: tuple[str, ...] = (),
    reason: str | None = None,
) -> Result:
    from series import validate
    from series.engine import rebase
    from series.engine import report as rebase_report
    from series.git.command import git
    from series.git.repo import workdir
    from series.resolutions import engine_hooks
    from series.verbs.rebase import aborted, semantic

    repo = ws.repo
    checked = semantic.CheckedEnding(ending(), strict=strict and not resume)
    refused: list[Refusal] = []
    if abort:
        state = _step(ws, "abort", lambda tx: rebase.abort_rebase(ws, ending(), tx=tx))
        text = f"rebase onto {state.onto_name} aborted: every branch and {ws.config_path.name} are as before"
        count, kept = aborted.kept_resolutions(ws, state, ending().identity.verb)
        text += f"\n{kept}" if kept else ""
        return Result(
            {"status": rebase_report.ReportStatus.ABORTED.value, "id": state.id, "kept_resolutions": count},
            text,
            "",
            False,
        )
    if resume:
        return _finish(
            ws,
            _step(
                ws,
                "continue",
                lambda tx: rebase.continue_rebase(
                    ws, checked, tx=tx, hooks=engine_hooks(ws.series, tx.write, refused), progress=progress
                ),
            ),
            checked,
            refused=refused,
        )
    if onto is None and (drop or skip):
        # while halted: leave topics out and go on, as --continue does after a resolution
        return _finish(
            ws,
            _step(
                ws,
                "drop" if drop else "skip",
                lambda tx: rebase.set_aside(
                    ws,
                    checked,
                    tx=tx,
                    drop=drop,
                    skip=skip,
                    reason=reason,
                    hooks=engine_hooks(ws.series, tx.write, refused),
                    progress=progress,
                ),
            ),
            checked,
            refused=refused,
        )
    if onto is None:
        raise SeriesError("say where to: 'series rebase --onto v0.31' (or --continue / --abort)")
    if fetch:
        remote = validate.existing_remote(repo.remotes.names(), ws.series.upstream.remote, "upstream.remote")
        git(workdir(repo), "fetch", "--tags", "--end-of-options", remote)
    _blobs_for(ws, onto)
    if as_far_as_possible and rebase.in_progress(ws) is None:
        return _as_far(ws, onto, skip, dry_run, progress, checked, refused)
    outcome = _checked(ws, checked, dry_run, lambda e: _start(ws, onto, e, skip, dry_run, progress, refused))
    return _finish(ws, outcome, checked, bisect=bisect, refused=refused)


def _start(
    ws: Workspace,
    onto: str,
    ending: semantic.CheckedEnding,
    skip: tuple[str, ...],
    dry_run: bool,
    progress: rebase.Progress | None,
    refused: list[Refusal],
) -> rebase.RebaseOutcome:
    """A dry run takes no lock and writes nothing: it needs no transaction."""
    from series.engine import rebase
    from series.resolutions import engine_hooks

    if dry_run:
        return rebase.start(
            ws, onto, ending, skip=skip, dry_run=True, hooks=engine_hooks(ws.series, refused=refused), progress=progress
        )
    return _step(
        ws,
        "start",
        lambda tx: rebase.start(
            ws, onto, ending, skip=skip, hooks=engine_hooks(ws.series, refused=refused), progress=progress, tx=tx
        ),
    )


def _as_far(
    ws: Workspace,
    onto: str,
    skip: tuple[str, ...],
    dry_run: bool,
    progress: rebase.Progress | None,
    ending: semantic.CheckedEnding,
    refused: list[Refusal],
) -> Result:
    """Rebase onto the newest commit of REF's first-parent line where every topic applies;
    move nothing when even the first one blocks."""
    from series.engine import report as rebase_report
    from series.verbs.rebase import reach, semantic

    name, found = reach.reach(ws, onto, skip)
    if found.target is None and found.total:
        text = reach.render_reach(found, name, ws.series.upstream.base)
        data = {
            "status": rebase_report.ReportStatus.BLOCKED.value,
            "command": "rebase",
            "dry_run": dry_run,
            "as_far_as_possible": found.to_json(),
        }  # blocked: no report, nothing replayed
        return Result(data, text, "", True)
    target = onto if found.complete or found.target is None else found.target.sha
    # --as-far-as-possible's ending (all or nothing with the integration branch) inside the check's
    reached = semantic.CheckedEnding(
        reach.ReachEnding(ending.inner, reach.render_target(found, name), ws.series.integration), strict=ending.strict
    )
    outcome = _checked(ws, reached, dry_run, lambda e: _start(ws, target, e, skip, dry_run, progress, refused))
    return _finish(ws, outcome, reached, farthest=(name, found), refused=refused)


class _Progress:
    """A one-line progress display on stderr, only when stderr is a terminal."""

    def __call__(self, name: str, count: int, total: int) -> None:
        width = 24
        done = int(width * count / max(total, 1))
        sys.stderr.write(f"\rreplaying [{'#' * done}{'.' * (width - done)}] {count}/{total} {name[:30]:<30}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r" + " " * 80 + "\r")
        sys.stderr.flush()


@click.command("rebase")
@click.option(
    "--onto", metavar="REF", help="Tag, branch, commit or remote-tracking ref; v0.31 means the highest v0.31.N tag."
)
@click.option("--fetch", is_flag=True, help="Run 'git fetch <remote> --tags' first (your git credentials).")
@click.option("--dry-run", is_flag=True, help="Compute everything and print the report; move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for CI).")
@click.option(
    "--skip-topic",
    "skip",
    multiple=True,
    metavar="NAME",
    help="Leave this topic out of this rebase (status unchanged, branch where it is; the "
    "topics that depend on it too). With --onto, or alone while a rebase is halted. "
    "Repeatable.",
)
@click.option(
    "--drop-topic",
    "drop",
    multiple=True,
    metavar="NAME",
    help="While a rebase is halted: stop carrying this topic (status dropped when the rebase "
    "ends, branch kept, as 'series drop'), and go on. Repeatable.",
)
@click.option("--reason", metavar="TEXT", help="With --drop-topic: why, recorded in series.yaml.")
@click.option(
    "--bisect",
    is_flag=True,
    help="For each conflicting topic, find the first upstream commit on REF's first-parent "
    "line at which it stops applying (in-memory replays, log2 of the commits).",
)
@click.option(
    "--as-far-as-possible",
    "as_far",
    is_flag=True,
    help="Move the series to the newest commit on REF's first-parent line where every "
    "active topic applies; say which upstream commit blocks the next step.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Treat a semantic break (an upstream name the topic uses, removed or changed) "
    "like a conflict: exit 3, nothing moved.",
)
@click.option("--continue", "resume", is_flag=True, help="Go on after resolving a conflict in the worktree.")
@click.option("--abort", is_flag=True, help="Stop the rebase in progress and put everything back.")
@pass_ctx
def command(
    ctx: Context,
    onto: str | None,
    fetch: bool,
    dry_run: bool,
    as_json: bool,
    skip: tuple[str, ...],
    drop: tuple[str, ...],
    reason: str | None,
    bisect: bool,
    as_far: bool,
    strict: bool,
    resume: bool,
    abort: bool,
) -> None:
    """Replay every active topic from upstream.base onto REF, in memory.

    \b
    Nothing moves until every topic replays cleanly; then all branches, the integration
    branch and series.yaml (upstream.base, merged topics) change in one transaction,
    journaled for 'series undo'. Commits already upstream are dropped; a topic whose
    commits all drop is marked merged (branch kept).
    \b
    On conflicts (exit 3) every conflicting topic is listed, and the first is laid out
    in a worktree under .git/series/rebase/: edit, 'git add', 'series rebase --continue'.
    \b
      series rebase --onto v0.31 --dry-run     what would happen
      series rebase --onto v0.31               do it
      series rebase --onto upstream/main --fetch --json
      series rebase --onto upstream/main --dry-run --bisect     which upstream PR broke a topic
      series rebase --onto upstream/main --as-far-as-possible   up to the first blocking commit
    \b
    While halted, a topic can be left out instead of resolved, and the rebase goes on:
      series rebase --skip-topic NAME          it stays where it was (its dependents too)
      series rebase --drop-topic NAME --reason TEXT    status dropped, branch kept
    Both are part of the rebase's one operation: 'series undo' reverts them with it.
    A topic whose commits all come out empty after you resolved them is reported "empty
    after resolution" (never "merged": nothing proved upstream has it).
    \b
    A conflict names the upstream commits (and PRs, from "(#N)") that changed the lines
    the topic edits, likeliest first; a merged topic names the upstream commit that
    landed it.
    """

    midway = bool(drop) or (bool(skip) and not onto)  # leave topics out of a halted rebase
    if sum(bool(x) for x in (onto, resume, abort, midway)) != 1:
        raise click.UsageError(
            "give exactly one of --onto REF, --continue, --abort, "
            "or (while a rebase is halted) --skip-topic / --drop-topic"
        )
    if reason is not None and not drop:
        raise click.UsageError("--reason goes with --drop-topic")
    if midway and (dry_run or bisect or as_far or strict or fetch):
        raise click.UsageError(
            "--skip-topic / --drop-topic on a halted rebase take no other option but --reason and --json"
        )
    if (bisect or as_far) and not onto:
        raise click.UsageError("--bisect and --as-far-as-possible go with --onto REF")
    ws = ctx.workspace(check_branches=not (resume or abort or midway))
    progress: Any = None
    if sys.stderr.isatty() and not as_json:
        progress = _Progress()
    try:
        result = run(
            ws,
            onto=onto,
            fetch=fetch,
            dry_run=dry_run,
            skip=skip,
            resume=resume,
            abort=abort,
            progress=progress,
            bisect=bisect,
            as_far_as_possible=as_far,
            strict=strict,
            drop=drop,
            reason=reason,
        )
    finally:
        if progress is not None:
            progress.close()
    if as_json:
        emit_json(result.report)
    else:
        emit(result.text)
    if result.conflict:
        sys.exit(EXIT_CONFLICT)
