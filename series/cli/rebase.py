"""`series rebase`: move every active topic onto a new upstream release."""
from __future__ import annotations

import sys
from typing import Any

import click

from series.cli import Context, emit, emit_json, pass_ctx
from series.errors import EXIT_CONFLICT


class _Progress:
    """A one-line progress display on stderr, only when stderr is a terminal."""

    def __call__(self, name: str, count: int, total: int) -> None:
        width = 24
        done = int(width * count / max(total, 1))
        sys.stderr.write(f"\rreplaying [{'#' * done}{'.' * (width - done)}] "
                         f"{count}/{total} {name[:30]:<30}")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\r" + " " * 80 + "\r")
        sys.stderr.flush()


@click.command()
@click.option("--onto", metavar="REF",
              help="Tag, branch, commit or remote-tracking ref; v0.31 means the highest v0.31.N tag.")
@click.option("--fetch", is_flag=True, help="Run 'git fetch <remote> --tags' first (your git credentials).")
@click.option("--dry-run", is_flag=True, help="Compute everything and print the report; move nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (for CI).")
@click.option("--skip-topic", "skip", multiple=True, metavar="NAME",
              help="Leave this topic out of this rebase (status unchanged). Repeatable.")
@click.option("--bisect", is_flag=True,
              help="For each conflicting topic, find the first upstream commit on REF's first-parent "
                   "line at which it stops applying (in-memory replays, log2 of the commits).")
@click.option("--as-far-as-possible", "as_far", is_flag=True,
              help="Move the series to the newest commit on REF's first-parent line where every "
                   "active topic applies; say which upstream commit blocks the next step.")
@click.option("--continue", "resume", is_flag=True, help="Go on after resolving a conflict in the worktree.")
@click.option("--abort", is_flag=True, help="Stop the rebase in progress and put everything back.")
@pass_ctx
def rebase(ctx: Context, onto: str | None, fetch: bool, dry_run: bool, as_json: bool,
           skip: tuple[str, ...], bisect: bool, as_far: bool, resume: bool, abort: bool) -> None:
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
    A conflict names the upstream commits (and PRs, from "(#N)") that changed the lines
    the topic edits, likeliest first; a merged topic names the upstream commit that
    landed it.
    """
    from series.commands import rebase as cmd

    if sum(bool(x) for x in (onto, resume, abort)) != 1:
        raise click.UsageError("give exactly one of --onto REF, --continue, --abort")
    if (bisect or as_far) and not onto:
        raise click.UsageError("--bisect and --as-far-as-possible go with --onto REF")
    ws = ctx.workspace(check_branches=not (resume or abort))
    progress: Any = None
    if sys.stderr.isatty() and not as_json:
        progress = _Progress()
    try:
        result = cmd.run(ws, onto=onto, fetch=fetch, dry_run=dry_run, skip=skip, resume=resume,
                         abort=abort, progress=progress, bisect=bisect, as_far_as_possible=as_far)
    finally:
        if progress is not None:
            progress.close()
    if as_json:
        emit_json(result.report)
    else:
        emit(result.text)
    if result.conflict:
        sys.exit(EXIT_CONFLICT)


COMMANDS = [rebase]
