"""`series propose TOPIC`: the command line; the ordered steps (replay, grade, reviewers,
describe, the duplicate search last, send) and their rendering are in .steps."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from series.cli_support import Context, emit, emit_json, pass_ctx


@click.command("propose")
@click.argument("topic")
@click.option(
    "--signoff",
    is_flag=True,
    help="Add Signed-off-by with your git identity to every commit of the PR branch "
    "(your DCO statement: read upstream's DCO file first).",
)
@click.option(
    "--not-first", is_flag=True, help="You have merged PRs upstream: the first-PR size and hot-path rules become notes."
)
@click.option("--title", metavar="TEXT", help="The PR title (default: the commit subject, or the topic summary).")
@click.option("--release-note", metavar="TEXT", help="The 'Release notes:' line (default: the topic summary).")
@click.option(
    "--evidence",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="JSON of 'series test TOPIC --run --json': test results go into the description.",
)
@click.option(
    "--despite",
    type=click.IntRange(min=1),
    multiple=True,
    metavar="N",
    help="Go on although open PR N shares files with yours (after reading it). Repeatable.",
)
@click.option(
    "--fork",
    "fork_remote",
    metavar="REMOTE",
    help="The git remote of your fork (default: propose.fork_remote, else origin).",
)
@click.option(
    "--owner",
    metavar="LOGIN",
    help="Your GitHub login, the fork's owner (default: from the fork's URL, else asked of the API).",
)
@click.option("--branch", metavar="NAME", help="The PR branch (default: pr/TOPIC).")
@click.option(
    "--fetch", is_flag=True, help="Fetch upstream's branches first (and, offline, every PR head for the search)."
)
@click.option(
    "--offline",
    is_flag=True,
    help="Search the PR heads fetched into git refs, not the API "
    "(also SERIES_OFFLINE=1); opening the PR needs the API.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Steps 1-5 only: print the grade, the description and the commands step 6 would run.",
)
@click.option(
    "--update",
    is_flag=True,
    help="Push the topic's new work to its recorded PR: after review starts only added commits "
    "(fast-forward; a rewritten topic as one 'Update:' commit), never a force-push. The "
    "range-diff comes first.",
)
@click.option(
    "--squash",
    is_flag=True,
    help="With --update: the maintainer asked to squash: force-push the topic as one commit "
    "(--force-with-lease on the head seen).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI.")
@pass_ctx
def command(
    ctx: Context,
    topic: str,
    signoff: bool,
    not_first: bool,
    title: str | None,
    release_note: str | None,
    evidence: Path | None,
    despite: tuple[int, ...],
    fork_remote: str | None,
    owner: str | None,
    branch: str | None,
    fetch: bool,
    offline: bool,
    dry_run: bool,
    update: bool,
    squash: bool,
    as_json: bool,
) -> None:
    """Propose TOPIC upstream as a draft pull request, graded against vLLM's norms.

    \b
    In this order, each step reported:
      1. replay      TOPIC's own commits onto upstream's current main, in memory, as the
                     PR branch pr/TOPIC (--signoff adds your Signed-off-by; never silently)
      2. grade       changed lines and files against the first-PR limits (200, 3: the
                     propose: block of series.yaml), one concern, DCO, the title's [Tag],
                     tests with code, hot paths, a perf claim without a benchmarks/ script;
                     each finding says why and how to fix it
      3. reviewers   CODEOWNERS owners of the paths and authors of the changed lines (git
                     blame on upstream main): the only people the guide lets you @-mention
      4. description upstream's PR template, filled: purpose from the commits, the test
                     plan from the covering CI steps ('series test'), results from
                     --evidence, a "Release notes:" line to edit
      5. duplicates  open upstream PRs of any age sharing a file: the last step before
                     anything is sent. A candidate stops here (exit 1, --dry-run too):
                     carry theirs with 'series adopt-upstream N', or pass --despite N
                     after reading it
      6. send        push pr/TOPIC to your fork remote with your git credentials, open a
                     DRAFT PR (head LOGIN:pr/TOPIC), record upstream_pr: on the topic

    \b
    Later, --update pushes the topic's new work to that PR (range-diff first):
      before any review  the branch is replaced (force-with-lease), as a new propose would
      once review began  the new commits are added on top (fast-forward); a rewritten
                         topic (after a rebase) becomes ONE 'Update:' commit on top; never
                         a force-push (the remote may deny non-fast-forwards, and should)
      --squash           only when the maintainer asks: one commit, force-with-lease
    'series undo' moves the local pr/TOPIC back; a push cannot be undone.

    \b
    Examples:
      series propose offload-evict-fix --dry-run
      series propose offload-evict-fix --signoff --title "[Bugfix][KV Offload] Keep request order"
      series test offload-evict-fix --run --without offload-evict-fix --json > ev.json
      series propose offload-evict-fix --signoff --evidence ev.json --despite 61050
      series propose offload-evict-fix --update --dry-run
    """
    from series.propose import prbody
    from series.verbs.propose import steps
    from series.forge import open_forge

    if squash and not update:
        raise click.UsageError("--squash goes with --update (it squashes an existing PR's branch)")
    if update:
        unused = [
            flag
            for flag, given in (
                ("--title", title),
                ("--release-note", release_note),
                ("--evidence", evidence),
                ("--despite", despite),
                ("--owner", owner),
                ("--not-first", not_first),
            )
            if given
        ]
        if unused:
            raise click.UsageError(f"{', '.join(unused)}: not used by --update (the PR exists; edit it on GitHub)")
        _update(
            ctx,
            topic,
            squash=squash,
            dry_run=dry_run,
            signoff=signoff,
            fork_remote=fork_remote,
            branch=branch,
            fetch=fetch,
            offline=offline,
            as_json=as_json,
        )
        return
    data = prbody.read_evidence(evidence) if evidence is not None else None
    ws = ctx.workspace(check_branches=False)
    use_git = offline or os.environ.get("SERIES_OFFLINE") == "1"
    forge = open_forge(ws.repo, ws.series.upstream, offline=use_git)
    opts = steps.ProposeOptions(
        signoff=signoff,
        not_first=not_first,
        dry_run=dry_run,
        despite=despite,
        title=title,
        fork_remote=fork_remote,
        owner=owner,
        branch=branch,
        release_note=release_note,
        evidence=data,
        fetch=fetch,
    )

    def step(name: str) -> None:
        if sys.stderr.isatty() and not as_json:
            click.echo(f"propose {topic}: {name} ...", err=True)

    result = steps.run(ws, topic, forge, opts, step)
    if as_json:
        emit_json(steps.to_json(result))
    else:
        emit(steps.render(result, dry_run))
    if result.stopped:
        numbers = ", ".join(f"#{c.number}" for c in result.blocking)
        click.echo(
            f"series: error: open upstream PR(s) {numbers} touch the same files; read them, then "
            f"'series adopt-upstream N' or '--despite N'",
            err=True,
        )
        sys.exit(1)


def _update(
    ctx: Context,
    topic: str,
    *,
    squash: bool,
    dry_run: bool,
    signoff: bool,
    fork_remote: str | None,
    branch: str | None,
    fetch: bool,
    offline: bool,
    as_json: bool,
) -> None:
    from series.forge import open_forge
    from series.verbs.propose import update

    ws = ctx.workspace(check_branches=False)
    use_git = offline or os.environ.get("SERIES_OFFLINE") == "1"
    forge = open_forge(ws.repo, ws.series.upstream, offline=use_git)
    opts = update.UpdateOptions(
        squash=squash, dry_run=dry_run, signoff=signoff, fork_remote=fork_remote, branch=branch, fetch=fetch
    )

    def step(name: str) -> None:
        if sys.stderr.isatty() and not as_json:
            click.echo(f"propose {topic} --update: {name} ...", err=True)

    result = update.run(ws, topic, forge, opts, step)
    if as_json:
        emit_json(update.to_json(result))
    else:
        emit(update.render(result))
