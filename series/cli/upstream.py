"""Verbs about upstream pull requests: adopt-upstream, supersede, drop, preflight."""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

import click

from series.cli import Context, emit, emit_json, pass_ctx
from series.validate import printable

_OFFLINE_HELP = ("Do not ask the GitHub API (also SERIES_OFFLINE=1): work from git refs alone.")



def _forge(ws: Any, offline: bool) -> Any:
    from series.forge import open_forge

    return open_forge(ws.repo, ws.series.upstream, offline=offline)


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


@click.command("adopt-upstream")
@click.argument("number", type=click.IntRange(min=1), metavar="[PR]", required=False)
@click.option("--replaces", metavar="TOPIC", help="The topic this PR replaces (marked superseded, branch kept).")
@click.option("--no-replace", is_flag=True, help="Carry the PR as a new topic that replaces none.")
@click.option("--name", metavar="NAME", help="Name of the new topic (default pr-N, branch topic/pr-N).")
@click.option("--refresh", is_flag=True, help="The PR was updated: fetch it again, re-adopt, show the range-diff.")
@click.option("--dry-run", is_flag=True, help="Fetch and replay, print what would change, move nothing.")
@click.option("--offline", is_flag=True, help=_OFFLINE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@click.option("--continue", "resume", is_flag=True,
              help="After resolving a conflict in the worktree and 'git add': finish the adoption.")
@click.option("--abort", is_flag=True, help="Stop a halted adoption; nothing has moved, the worktree goes.")
@pass_ctx
def adopt_upstream(ctx: Context, number: int | None, replaces: str | None, no_replace: bool, name: str | None,
                   refresh: bool, dry_run: bool, offline: bool, as_json: bool, resume: bool,
                   abort: bool) -> None:
    """Carry upstream pull request PR instead of a topic of ours, authorship kept.

    \b
    Fetches refs/pull/PR/head from upstream.remote, replays the PR's own commits onto
    upstream.base in memory (authors and author dates exactly the PR's; you are the
    committer; each message gains Upstream-PR: and "(cherry picked from commit ...)"),
    and adds topic pr-PR to series.yaml where the replaced topic stood. The replaced
    topic becomes superseded; its branch is not touched. 'series undo' reverts it all.

    \b
    Without --replaces, topics are ranked by the files they share with the PR: on a
    terminal the best match is offered for confirmation, otherwise the candidates are
    listed and you choose with --replaces TOPIC (or --no-replace).

    \b
    A PR commit that does not apply to upstream.base halts the adoption (exit 3), as a
    rebase halts: nothing moves, and that commit is laid out in the worktree
    .git/series/rebase/worktree with conflict markers. Edit the files there, 'git add'
    them, then 'series adopt-upstream --continue': the rest of the PR is replayed (the
    next conflict halts again) and the branch and series.yaml change as above, authorship
    kept. 'series adopt-upstream --abort' leaves everything as it was. While it is halted,
    other commands that move branches (rebase, undo, supersede, ...) refuse.

    \b
    Examples:
      series adopt-upstream 61050 --replaces offload-evict-fix
      series adopt-upstream 61050 --refresh      # the PR got new commits
      series adopt-upstream --continue           # after resolving a conflict
    """
    from series.commands import adopt as cmd
    from series.errors import EXIT_CONFLICT

    if resume and abort:
        raise click.UsageError("--continue and --abort exclude each other")
    if resume or abort:
        given = [flag for flag, on in (("PR", number), ("--replaces", replaces), ("--no-replace", no_replace),
                                       ("--name", name), ("--refresh", refresh), ("--dry-run", dry_run)) if on]
        if given:
            raise click.UsageError(f"--continue / --abort take no other arguments (got {', '.join(given)})")
        ws = ctx.workspace(check_branches=False)
        if abort:
            pr = cmd.abort(ws)
            if as_json:
                emit_json({"status": "aborted", "number": pr})
            else:
                emit(f"adoption of PR #{pr} aborted: nothing was moved, the conflict worktree is removed")
            return
        result = cmd.resume(ws)
    else:
        if number is None:
            raise click.UsageError("missing the PR number (or --continue / --abort for a halted adoption)")
        if replaces and no_replace:
            raise click.UsageError("--replaces and --no-replace exclude each other")
        result = _adopt(ctx, cmd, number, replaces, no_replace, name, refresh, dry_run, offline, as_json)
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result))
    if result.worktree is not None:
        sys.exit(EXIT_CONFLICT)


def _adopt(ctx: Context, cmd: Any, number: int, replaces: str | None, no_replace: bool, name: str | None,
           refresh: bool, dry_run: bool, offline: bool, as_json: bool) -> Any:
    ws = ctx.workspace(check_branches=False)
    forge = None if (offline or os.environ.get("SERIES_OFFLINE") == "1") else _forge(ws, False)

    def confirm(candidate: Any) -> bool:
        files = ", ".join(candidate.shared_files[:3]) + (" ..." if len(candidate.shared_files) > 3 else "")
        return click.confirm(
            f"PR #{number} shares {len(candidate.shared_files)} file(s) with topic "
            f"'{candidate.topic}' ({files}). Replace '{candidate.topic}'?", default=False)

    return cmd.run(ws, number, forge=forge, replaces=replaces, no_replace=no_replace, name=name,
                   refresh=refresh, dry_run=dry_run,
                   confirm=confirm if (_interactive() and not as_json) else None,
                   note=lambda text: click.echo(f"note: {printable(text)}", err=True))


@click.command()
@click.argument("topic")
@click.option("--by", "by", required=True, metavar="OTHER", help="The topic that carries this change now.")
@click.option("--reason", metavar="TEXT", help="Why, recorded in series.yaml.")
@click.option("--dry-run", is_flag=True, help="Print the change, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def supersede(ctx: Context, topic: str, by: str, reason: str | None, dry_run: bool, as_json: bool) -> None:
    """Mark TOPIC superseded by OTHER; TOPIC's branch is kept as it is.

    A superseded topic is no longer rebased or built. 'series undo' reverts this.
    """
    from series.commands import supersede as cmd

    ws = ctx.workspace(check_branches=False)
    change = cmd.run(ws, topic, by, reason=reason, dry_run=dry_run)
    if as_json:
        emit_json(dataclasses.asdict(change))
    else:
        emit(cmd.render(change, ws.series.topic(topic).branch))


@click.command()
@click.argument("topic")
@click.option("--reason", metavar="TEXT", help="Why, recorded in series.yaml.")
@click.option("--dry-run", is_flag=True, help="Print the change, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def drop(ctx: Context, topic: str, reason: str | None, dry_run: bool, as_json: bool) -> None:
    """Stop carrying TOPIC (status: dropped); its branch is kept as it is.

    'series undo' reverts this.
    """
    from series.commands import drop as cmd

    ws = ctx.workspace(check_branches=False)
    change = cmd.run(ws, topic, reason=reason, dry_run=dry_run)
    if as_json:
        emit_json(dataclasses.asdict(change))
    else:
        emit(cmd.render(change, ws.series.topic(topic).branch))


@click.command()
@click.argument("topic")
@click.option("--fetch", is_flag=True,
              help="First fetch every upstream PR head into refs/remotes/<remote>/pr/* (git).")
@click.option("--days", type=click.IntRange(min=1),
              help="Narrow to PRs updated within this many days (offline: head commit date). Without "
                   "it every PR head counts, whatever its age; from the API every open PR, and PRs "
                   "closed in the last 30 days.")
@click.option("--limit", type=click.IntRange(min=1), help="Compare at most this many PRs (most recently updated).")
@click.option("--offline", is_flag=True, help=_OFFLINE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def preflight(ctx: Context, topic: str, fetch: bool, days: int | None, limit: int | None,
              offline: bool, as_json: bool) -> None:
    """Before posting TOPIC upstream: duplicate PRs, exact paths, DCO sign-offs.

    \b
    Lists upstream PRs that touch the topic's files, most shared files first, then most
    overlapping hunks, then the most recent: number, state, author, date, title. An old
    open PR is never left out for its age (only --days narrows).
    Source: the GitHub API when upstream.github is set, else (or with --offline, or
    after --fetch) PR heads fetched into refs/remotes/<remote>/pr/N.
    Also prints the topic's exact touched paths and whether every commit carries
    Signed-off-by: (vLLM's DCO check).
    """
    from series.commands import preflight as cmd
    from series.forge.refs import fetch_all_pulls

    ws = ctx.workspace(check_branches=False)
    if fetch:
        fetch_all_pulls(ws.repo, ws.series.upstream.remote)
    use_git = offline or fetch or os.environ.get("SERIES_OFFLINE") == "1"
    forge = _forge(ws, use_git)

    progress = None
    if sys.stderr.isatty() and not as_json:
        def progress(done: int, total: int) -> None:
            click.echo(f"\rcomparing PR files {done}/{total}", err=True, nl=done == total)

    from series.forge.base import ForgeUnreachable

    try:
        result = cmd.run(ws, topic, forge, days=days, limit=limit, progress=progress)
    except ForgeUnreachable as exc:
        click.echo(f"note: {printable(str(exc))}; using PR heads fetched into git refs instead", err=True)
        result = cmd.run(ws, topic, _forge(ws, True), days=days, limit=limit)
    if as_json:
        emit_json(cmd.as_json(result))
    else:
        emit(cmd.render(result))


COMMANDS = [adopt_upstream, supersede, drop, preflight]
