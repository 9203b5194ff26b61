"""`series release [NAME]`: which release a name means, as every verb resolves it.

`series release latest` prints the tag `rebase --onto latest` would use (the nightly asks
this instead of sorting tags itself); with no NAME, upstream's release tags newest first
(--all: the fork's own tags after them). The rules are series.git.releases' (which tags are
upstream's: the ones upstream's main and release branches reach); this verb only asks them.
"""

from __future__ import annotations

from dataclasses import dataclass

import click
import pygit2

from series.cli_support import Context, emit, emit_json, pass_ctx
from series.git import releases
from series.git.repo import open_repo, resolve_release


@dataclass(frozen=True)
class Resolved:
    spec: str
    name: str  # what series.yaml would record: the tag or branch, else the commit id
    commit: str
    version: str | None  # the tag's PEP 440 version, None for a branch or commit
    release: bool  # a release (final or post), not a release candidate


def run(repo: pygit2.Repository, spec: str, remote: str = releases.UPSTREAM) -> Resolved:
    name, commit = resolve_release(repo, spec, remote)
    version = releases.tag_version(name) if repo.references.get(f"refs/tags/{name}") else None
    return Resolved(
        spec, name, str(commit.id), str(version) if version else None, version is not None and not version.is_prerelease
    )


@click.command("release")
@click.argument("name", required=False, metavar="[NAME]")
@click.option("--all", "show_all", is_flag=True, help="Also list the fork's own tags (not upstream's).")
@click.option(
    "--remote",
    metavar="NAME",
    help="The upstream remote whose tags are releases (default: series.yaml's, else 'upstream').",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def command(ctx: Context, name: str | None, show_all: bool, remote: str | None, as_json: bool) -> None:
    """Print the release tag NAME resolves to, as rebase --onto and init --base read it.

    \b
    latest     the newest release (final or post release; never an rc or dev tag)
    v0.31      the newest v0.31.* release, as PEP 440 orders them (v0.31.0.post1
               after v0.31.0; four-part v0.10.1.1 is a release too)
    v0.31.0    an existing tag is always itself (v0.32.0rc1 too, by its name)
    Anything else resolves as a branch or commit. Without NAME: the release tags,
    newest first.
      series release latest        # v0.31.0
    Releases are upstream's tags only: the ones the upstream remote's main, master or
    releases/* branches reach (or no branch at all); a tag only the fork's branches reach
    (a fork's own v0.6.6.post2) is the fork's, listed by --all, used only by its exact name.
    """
    repo = open_repo(ctx.here)
    remote = remote or _series_remote(ctx)
    if name is None:
        found = releases.releases(repo, remote)
        own = releases.own_tags(repo, remote) if show_all else []
        if as_json:
            emit_json(
                {
                    "releases": [{"tag": r.tag, "version": str(r.version)} for r in found],
                    **({"fork_tags": own} if show_all else {}),
                }
            )
        else:
            lines = [r.tag for r in found] or ["no release tags here (git fetch --tags?)"]
            if show_all:
                lines += ["", f"the fork's own tags (not {remote}'s releases):"] + [f"  {t}" for t in own or ["none"]]
            emit("\n".join(lines))
        return
    resolved = run(repo, name, remote)
    if as_json:
        emit_json(
            {
                "spec": resolved.spec,
                "name": resolved.name,
                "commit": resolved.commit,
                "version": resolved.version,
                "release": resolved.release,
            }
        )
    else:
        emit(resolved.name)


def _series_remote(ctx: Context) -> str:
    """series.yaml's upstream remote when there is one here; `series release` also answers
    in a clone without series.yaml (the nightly asks before init)."""
    from series.seriesfile import config
    from series.errors import SeriesError

    try:
        path = config.find(ctx.here, ctx.config_file)
    except SeriesError:
        if ctx.config_file is not None:
            raise
        return releases.UPSTREAM
    return config.load(path).upstream.remote
