"""Verbs of the foundation: init, add, status, touches, check."""
from __future__ import annotations

from pathlib import Path

import click

from series.cli import Context, emit, emit_json, pass_ctx

EXIT_TOUCHES_ERROR = 2  # touches: grep's 'trouble' code (1 is 'not touched')



@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def status(ctx: Context, as_json: bool) -> None:
    """One row per topic: status, commits and lines over the base, warnings.

    A topic whose branch does not contain upstream.base is flagged: it sits on another
    base and the next rebase would replay more than its own commits.
    """
    from series.commands import status as cmd

    ws = ctx.workspace(check_branches=False)
    rows = cmd.run(ws)
    if as_json:
        emit_json(cmd.as_json(ws, rows))
    else:
        emit(cmd.render(ws, rows))


@click.command()
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--all", "include_all", is_flag=True,
              help="Include superseded, merged and dropped topics whose branches still exist.")
@click.option("--depth", default=3, show_default=True, metavar="N",
              help="Directory depth of the matrix (without PATH).")
@click.option("--between", metavar="OLD..NEW",
              help="Forecast: files upstream changed between two refs that our topics change too.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def touches(ctx: Context, paths: tuple[str, ...], include_all: bool, depth: int,
            between: str | None, as_json: bool) -> int:
    """Which topics change PATH, with files and +/- lines (each topic's own diff over the base).

    \b
    PATH is a directory (matched at a '/' boundary: vllm/v1 is not vllm/v10),
    a file, or a glob ('*' within a path component, '**' across them), from the
    repository root (./x, ../x and absolute paths: from the current directory):
      series touches vllm/v1/kv_offload
      series touches 'vllm/**/lru.py' tests/v1
    Exit status is grep's: 0 when a topic touches PATH, 1 when none does, 2 on an error
    (a missing branch, a bad ref), so 'not touched' is never an error in disguise:
      series touches vllm/v1/kv_offload || echo "we really don't touch it"

    \b
    Without PATH: a matrix of topics x directories (--depth N), and the files that more
    than one topic changes (where topics will collide when replayed).
    With --between OLD..NEW (e.g. v0.30.0..v0.31.0): the files upstream changed in that
    range that our topics also change, with upstream's and our line counts: where the
    next rebase will hurt, before running it (exit 1: no overlap). OLD...NEW diffs NEW
    against its merge base with OLD. PATH limits the forecast.
    """
    from series.commands import touches as cmd
    from series.errors import SeriesError

    try:
        # a missing active branch is an error, not a skip: a silent skip would let
        # `series touches X || echo "not touched"` claim something nobody checked
        ws = ctx.workspace(check_branches=True)
        paths = cmd.repo_paths(ws, paths, ctx.directory or Path.cwd())
        output: dict[str, object] | str
        if between is not None:
            forecast = cmd.run_forecast(ws, between, paths, include_all)
            output = cmd.forecast_json(forecast) if as_json else cmd.render_forecast(forecast)
            touched = forecast.touched
        elif paths:
            found = cmd.run_paths(ws, paths, include_all)
            output = cmd.paths_json(found) if as_json else cmd.render_paths(found)
            touched = found.touched
        else:
            grid = cmd.run_matrix(ws, depth, include_all)
            output = cmd.matrix_json(grid) if as_json else cmd.render_matrix(grid)
            touched = grid.touched
        if isinstance(output, str):
            emit(output)
        else:
            emit_json(output)
    except SeriesError as exc:
        # grep's convention: 1 means "no topic touches it", so an error must not be 1 too
        exc.exit_code = EXIT_TOUCHES_ERROR
        raise
    return 0 if touched else 1


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def check(ctx: Context, as_json: bool) -> int:
    """Validate series.yaml against the repository, and every scope: claim against the diff.

    \b
    Checks that upstream.base resolves, that every active topic's branch exists and sits
    on the base (or on the topics it depends_on, which it must contain), and that each
    active topic with a scope: changes only files inside it (same matching as
    'series touches': directories at a '/' boundary, files, globs).
    Exit 0 with a one-line ok; exit 1 naming each topic, line and file out of place:
      series check || exit 1     # in CI: "our series does not touch X", enforced
    """
    from series.commands import check as cmd

    ws = ctx.workspace(check_branches=False)
    report = cmd.run(ws)
    if as_json:
        emit_json(cmd.as_json(report))
    else:
        emit(cmd.render(report))
    return 0 if report.ok else 1


@click.command()
@click.option("--base", required=True, metavar="REF",
              help="Upstream release the topics sit on: a tag (v0.30.0, or v0.30 for its latest "
                   "patch release), branch or commit.")
@click.option("--remote", default="upstream", show_default=True, metavar="NAME",
              help="Git remote of upstream vLLM.")
@click.option("--github", metavar="OWNER/REPO",
              help="Upstream on GitHub, for pull requests (default: read from the remote's URL).")
@click.option("--topics", "patterns", multiple=True, default=("topic/*",), show_default=True,
              metavar="GLOB", help="Local branches to list as topics (repeatable).")
@click.option("--integration", metavar="BRANCH", default="series/integration", show_default=True,
              help="Branch that will hold base + all active topics (never listed as a topic); "
                   "build and the nightly push it.")
@click.option("--force", is_flag=True, help="Overwrite an existing series.yaml.")
@pass_ctx
def init(ctx: Context, base: str, remote: str, github: str | None, patterns: tuple[str, ...],
         integration: str | None, force: bool) -> None:
    """Write series.yaml for an existing fork clone, listing its topic branches.

    \b
    The file goes to the work tree's root (or --config FILE). Topics are the local
    branches matching --topics, ordered by the author date of each branch's first
    commit over the base, then by name (author dates survive rebases: this is the
    order the work began in). A branch built on another matched branch gets
    depends_on and follows it. Names come from the branch's last path component.
    Reorder, add summary: and scope: lines by hand; the tool keeps your edits.
      series init --base v0.30.0 --topics 'topic/*' --topics 'fix/*'
    """
    from series.commands import init as cmd

    result = cmd.run(ctx.directory or Path.cwd(), base=base, remote=remote, github=github,
                     patterns=patterns, integration=integration, force=force,
                     target=ctx.config_file)
    emit(cmd.render(result))


@click.command()
@click.argument("branch")
@click.option("--name", help="Topic name (default: the branch's last path component, "
                             "lowercased to [a-z0-9._-]).")
@click.option("--after", metavar="TOPIC", help="Insert after this topic instead of at the end.")
@click.option("--summary", help="One line saying what the topic does.")
@click.option("--scope", multiple=True, metavar="PATH",
              help="Path the topic claims to stay inside (repeatable; 'series check' enforces it).")
@click.option("--depends-on", "depends_on", multiple=True, metavar="TOPIC",
              help="Topic this one is built on (repeatable; must come earlier).")
@pass_ctx
def add(ctx: Context, branch: str, name: str | None, after: str | None, summary: str | None,
        scope: tuple[str, ...], depends_on: tuple[str, ...]) -> None:
    """Add BRANCH to series.yaml as a topic, keeping the file's comments and order.

    \b
      series add topic/offload-evict-fix --scope vllm/v1/kv_offload/
      series add fix/sched --name sched-fix --after offload-evict-fix
    """
    from series.commands import add as cmd

    ws = ctx.workspace(check_branches=False)
    result = cmd.run(ws, branch, name=name, after=after, summary=summary, scope=scope,
                     depends_on=depends_on)
    emit(cmd.render(ws, result))


COMMANDS = [init, add, status, touches, check]
