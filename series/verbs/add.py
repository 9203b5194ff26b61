"""`series add`: append a topic to series.yaml, touching only the lines it adds.

The edit goes through the transaction (series.workspace): the new entry is spliced in,
the user's comments, key order and quoting survive, the result is validated before it
replaces the file, and the operation is journaled, so `series undo` takes it out again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import click
import pygit2

from series.seriesfile import config
from series.cli_support import Context, emit, pass_ctx
from series.errors import SeriesError
from series.git.repo import branch_commit, repo_path
from series.model import Topic, topic_name
from series.topics import OwnWorks, built_on
from series.workspace import Workspace


@dataclass(frozen=True)
class AddResult:
    name: str
    branch: str
    after: str | None
    commits: int
    on_base: bool
    position: int
    total: int
    depends_on: tuple[str, ...] = ()
    inferred: bool = False  # depends_on found from the branch, not given


def run(
    ws: Workspace,
    branch: str,
    *,
    name: str | None = None,
    after: str | None = None,
    summary: str | None = None,
    scope: Sequence[str] = (),
    depends_on: Sequence[str] = (),
) -> AddResult:
    series, repo = ws.series, ws.repo
    if branch.startswith("refs/heads/"):
        branch = branch[len("refs/heads/") :]
    head = branch_commit(repo, branch)
    if head is None:
        remote_refs = [r for r in repo.references if r.startswith("refs/remotes/") and r.endswith(f"/{branch}")]
        hint = (
            f"create it from {remote_refs[0][len('refs/remotes/') :]} with "
            f"'git branch {branch} {remote_refs[0][len('refs/remotes/') :]}'"
            if remote_refs
            else "create it first (git branch NAME START)"
        )
        raise SeriesError(f"no local branch '{branch}'", hint)
    for topic in series.topics:
        if topic.branch == branch:
            raise SeriesError(f"{series.path.name}:{topic.line}: branch '{branch}' is already topic '{topic.name}'")
    name = name or topic_name(branch)
    if not config.NAME_RE.match(name):
        raise SeriesError(f"--name {name}: not a topic name", "use lowercase [a-z0-9._-], e.g. offload-evict-fix")
    known = {t.name: t for t in series.topics}
    if name in known:
        raise SeriesError(
            f"{series.path.name}:{known[name].line}: a topic named '{name}' exists already", "pass --name NAME"
        )
    for ref in ([after] if after else []) + list(depends_on):
        if ref not in known:
            raise SeriesError(f"no topic named '{ref}' in {series.path.name} (topics: {', '.join(known) or 'none'})")
    base = ws.base_commit()  # a bad upstream.base: said before anything is written
    inferred = not depends_on
    if inferred:
        depends_on = _stacked_on(ws, Topic(name, branch), after, base)
    fields = {
        "name": name,
        "branch": branch,
        "summary": summary,
        "scope": list(scope) or None,
        "depends_on": list(depends_on) or None,
    }
    with ws.transaction("add", f"add {name} ({branch})") as tx:
        tx.add_topic(fields, after=after)
        tx.commit()
    added = ws.reload()
    # what status says of it from now on (series.topics): the series as just written
    own = added.require_own(added.series.topic(name))
    names = [t.name for t in added.series.topics]
    return AddResult(
        name,
        branch,
        after,
        len(own.commits),
        own.on_base,
        names.index(name) + 1,
        len(names),
        tuple(depends_on),
        inferred and bool(depends_on),
    )


def _stacked_on(ws: Workspace, new: Topic, after: str | None, base: pygit2.Commit) -> tuple[str, ...]:
    """depends_on as `series init` infers it (series.topics.built_on): the active topic,
    among those the new one will follow, whose commits its branch is built on."""
    topics = list(ws.series.topics)
    at = [t.name for t in topics].index(after) + 1 if after else len(topics)
    before = [t for t in topics[:at] if t.active]
    provisional = replace(ws.series, topics=(*topics[:at], new, *topics[at:]))
    under = built_on(OwnWorks(ws.repo, provisional, base), new, before)
    return (under.name,) if under is not None else ()


def render(ws: Workspace, result: AddResult) -> str:
    where = f"after {result.after}" if result.after else "at the end"
    out = [
        f"added topic {result.name} ({result.branch}, {result.commits} commit"
        f"{'s' if result.commits != 1 else ''} over {ws.series.upstream.base}) to "
        f"{ws.series.path.name} {where}: {result.position} of {result.total}"
    ]
    if result.inferred:
        out.append(
            f"depends_on: [{', '.join(result.depends_on)}] (its branch is built on "
            f"{' and '.join(result.depends_on)}'s commits; pass --depends-on to say otherwise)"
        )
    if not result.on_base:
        out.append(
            f"warning: {result.branch} does not sit on {ws.series.upstream.base}; "
            "'series check' will flag it until it is rebased"
        )
    return "\n".join(out)


@click.command("add")
@click.argument("branch")
@click.option("--name", help="Topic name (default: the branch's last path component, lowercased to [a-z0-9._-]).")
@click.option("--after", metavar="TOPIC", help="Insert after this topic instead of at the end.")
@click.option("--summary", help="One line saying what the topic does.")
@click.option(
    "--scope",
    multiple=True,
    metavar="PATH",
    help="Path the topic claims to stay inside, relative to the current directory as in git "
    "(repeatable; 'series check' enforces it).",
)
@click.option(
    "--depends-on",
    "depends_on",
    multiple=True,
    metavar="TOPIC",
    help="Topic this one is built on (repeatable; must come earlier). Default: the "
    "earlier topic whose commits the branch holds, as 'series init' infers it.",
)
@pass_ctx
def command(
    ctx: Context,
    branch: str,
    name: str | None,
    after: str | None,
    summary: str | None,
    scope: tuple[str, ...],
    depends_on: tuple[str, ...],
) -> None:
    """Add BRANCH to series.yaml as a topic, keeping the file's comments and order.

    \b
      series add topic/offload-evict-fix --scope vllm/v1/kv_offload/
      series add fix/sched --name sched-fix --after offload-evict-fix
    """

    ws = ctx.workspace(check_branches=False)
    here = ctx.here  # a scope is a repository path: from here, as in git
    scope = tuple(repo_path(ws.repo, s, here) for s in scope)
    result = run(ws, branch, name=name, after=after, summary=summary, scope=scope, depends_on=depends_on)
    emit(render(ws, result))
