"""`series adopt-upstream PR`: the command line (choosing the replaced topic on a terminal);
the adoption itself, inside the transaction, and its rendering are in .operation."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.forge import open_forge
from series.validate import printable


_OFFLINE_HELP = "Do not ask the GitHub API (also SERIES_OFFLINE=1): work from git refs alone."


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
@click.option(
    "--continue",
    "resume",
    is_flag=True,
    help="After resolving a conflict in the worktree and 'git add': finish the adoption.",
)
@click.option("--abort", is_flag=True, help="Stop a halted adoption; nothing has moved, the worktree goes.")
@pass_ctx
def command(
    ctx: Context,
    number: int | None,
    replaces: str | None,
    no_replace: bool,
    name: str | None,
    refresh: bool,
    dry_run: bool,
    offline: bool,
    as_json: bool,
    resume: bool,
    abort: bool,
) -> None:
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
    from series.verbs.adopt_upstream import operation
    from series.errors import EXIT_CONFLICT

    if resume and abort:
        raise click.UsageError("--continue and --abort exclude each other")
    if resume or abort:
        given = [
            flag
            for flag, on in (
                ("PR", number),
                ("--replaces", replaces),
                ("--no-replace", no_replace),
                ("--name", name),
                ("--refresh", refresh),
                ("--dry-run", dry_run),
            )
            if on
        ]
        if given:
            raise click.UsageError(f"--continue / --abort take no other arguments (got {', '.join(given)})")
        ws = ctx.workspace(check_branches=False)
        if abort:
            pr = operation.abort(ws)
            if as_json:
                emit_json({"status": "aborted", "number": pr})
            else:
                emit(f"adoption of PR #{pr} aborted: nothing was moved, the conflict worktree is removed")
            return
        result = operation.resume(ws)
    else:
        if number is None:
            raise click.UsageError("missing the PR number (or --continue / --abort for a halted adoption)")
        if replaces and no_replace:
            raise click.UsageError("--replaces and --no-replace exclude each other")
        result = _adopt(ctx, operation, number, replaces, no_replace, name, refresh, dry_run, offline, as_json)
    if as_json:
        emit_json(operation.to_json(result))
    else:
        emit(operation.render(result))
    if result.worktree is not None:
        sys.exit(EXIT_CONFLICT)


def _adopt(
    ctx: Context,
    operation: Any,
    number: int,
    replaces: str | None,
    no_replace: bool,
    name: str | None,
    refresh: bool,
    dry_run: bool,
    offline: bool,
    as_json: bool,
) -> Any:
    ws = ctx.workspace(check_branches=False)
    offline = offline or os.environ.get("SERIES_OFFLINE") == "1"
    forge = None if offline else open_forge(ws.repo, ws.series.upstream, offline=False)

    def confirm(candidate: Any) -> bool:
        files = ", ".join(candidate.shared_files[:3]) + (" ..." if len(candidate.shared_files) > 3 else "")
        return click.confirm(
            f"PR #{number} shares {len(candidate.shared_files)} file(s) with topic "
            f"'{candidate.topic}' ({files}). Replace '{candidate.topic}'?",
            default=False,
        )

    return operation.run(
        ws,
        number,
        forge=forge,
        replaces=replaces,
        no_replace=no_replace,
        name=name,
        refresh=refresh,
        dry_run=dry_run,
        confirm=confirm if (_interactive() and not as_json) else None,
        note=lambda text: click.echo(f"note: {printable(text)}", err=True),
    )
